"""Benchmark: ``cacheviz report`` against the load + analyze it starts from, one process.

    python bench/bench_report.py                       # 600 and 2,000 calls
    python bench/bench_report.py --calls 600 --out /tmp/cacheviz-bench
    python bench/bench_report.py --runs 3 --root /path/to/other-checkout   # another checkout, best of 3

Generates long sessions with ``bench_analysis.generate`` (outside the repository: the
2,000-call log is over a gigabyte), then in one fresh process per log:

* ``analyze``: ``cacheviz.load(path).analyze()``, best of ``--repeat``;
* ``report``: ``write_report`` of that analysis with redaction on (what ``cacheviz
  report`` does after loading), once, its imports included (as in the CLI).

Printed: both times and ``report / analyze`` (the budget, <= 1.5x) and
``(analyze + report) / analyze`` (the whole command against the analysis alone), in
wall-clock and in CPU time (steadier on a shared machine), with the load average before
each run; ``--runs N`` repeats each log's process N times and prints the best CPU ratio.
Machines here are noisy: only ratios within one run are quoted. The report is written to
a temporary folder (several checkouts may time the same logs at once).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _shared import child_json

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, sys, time
path, repeat, html = sys.argv[1], int(sys.argv[2]), sys.argv[3]
import cacheviz
best = cpu = float("inf")
for _ in range(repeat):
    start, start_cpu = time.perf_counter(), time.process_time()
    analysis = cacheviz.load(path).analyze()
    best = min(best, time.perf_counter() - start)
    cpu = min(cpu, time.process_time() - start_cpu)
start, start_cpu = time.perf_counter(), time.process_time()
from cacheviz.redact import redaction
from cacheviz.ui.report import write_report
with redaction(enabled=True):
    write_report(analysis, html)
report = time.perf_counter() - start
report_cpu = time.process_time() - start_cpu
print(json.dumps({"calls": analysis.calls.height, "analyze_s": best, "report_s": report,
                  "analyze_cpu_s": cpu, "report_cpu_s": report_cpu}))
"""


def measure(path: Path, repeat: int, root: Path) -> dict[str, float]:
    """Times of one log in a fresh process of the checkout ``root``."""
    with tempfile.TemporaryDirectory(prefix="cacheviz-bench-report-") as folder:
        html = Path(folder) / "report.html"
        row = child_json(CHILD, [str(path), str(repeat), str(html)], root)
    row["bytes"] = path.stat().st_size
    row["report_ratio"] = row["report_s"] / row["analyze_s"]
    row["command_ratio"] = (row["analyze_s"] + row["report_s"]) / row["analyze_s"]
    row["cpu_ratio"] = row["report_cpu_s"] / row["analyze_cpu_s"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="*", default=[600, 2000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench"))
    parser.add_argument("--repeat", type=int, default=2, help="runs of analyze (min kept)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to time")
    parser.add_argument("--runs", type=int, default=1, help="processes per log (best kept)")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_analysis import generate

    args.out.mkdir(parents=True, exist_ok=True)
    for calls in args.calls:
        path = args.out / f"long_session_{calls}.jsonl"
        if not path.exists():
            generate(path, calls)
        ratios = []
        for _ in range(args.runs):
            load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
            row = measure(path, args.repeat, args.root.resolve())
            ratios.append(row["cpu_ratio"])
            print(
                f"{calls} calls, {row['bytes'] / 1e6:,.0f} MB (load {load}): analyze "
                f"{row['analyze_s']:.2f} s, report {row['report_s']:.2f} s = "
                f"{row['report_ratio']:.2f}x (whole command {row['command_ratio']:.2f}x the "
                f"analysis); CPU time {row['analyze_cpu_s']:.2f} s vs "
                f"{row['report_cpu_s']:.2f} s = {row['cpu_ratio']:.2f}x",
                flush=True,
            )
        if args.runs > 1:
            print(f"{calls} calls: best CPU ratio of {args.runs} runs {min(ratios):.2f}x")


if __name__ == "__main__":
    main()
