"""The classic OpenAI simulator on ``bench_inspector.py``'s sliding window (issue 32).

    python bench/bench_openai.py [--calls 600 2000 10000] [--root /path/to/other-checkout]

On the session ``bench_inspector.py`` generates (a sliding window of 40 messages, a
drift every 50 calls; written once per size under ``--out``), in one fresh process per
checkout and size: the analysis, then ``analysis.simulate("openai", "gpt-5")`` timed in
CPU seconds (best of ``--repeat`` in the process), with the number of token-exact
prompt comparisons (calls of ``openai._token_lcp``), the sum of the reads and digests of
the per-call reads and details (the writer each hit names): the same for every
checkout when the searches find the same prefixes.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import bench_inspector
from _shared import child_json

HERE = Path(__file__).resolve().parent

CHILD = r"""
import hashlib, json, sys, time
path, repeat = sys.argv[1], int(sys.argv[2])
import cacheviz
from cacheviz.providers import openai

compared = [0]
lcp = openai._token_lcp
def counted(*args):
    compared[0] += 1
    return lcp(*args)
openai._token_lcp = counted
analysis = cacheviz.load(path).analyze()
best, reads = float("inf"), None
for _ in range(repeat):
    compared[0] = 0
    start = time.process_time()
    sim = analysis.simulate("openai", "gpt-5")
    best = min(best, time.process_time() - start)
    reads = sim.calls["cache_read_tokens"].to_list()
    details = sim.calls["detail"].to_list()
digest = lambda rows: hashlib.sha1(json.dumps(rows).encode()).hexdigest()[:10]
print(json.dumps({
    "cpu_s": best, "compared": compared[0], "reads": sum(reads),
    "reads_digest": digest(reads), "details_digest": digest(details),
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, nargs="*", default=[600, 2000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench"))
    parser.add_argument("--root", type=Path, nargs="*", default=[], help="checkouts to compare")
    parser.add_argument("--repeat", type=int, default=2, help="timings per process (best)")
    parser.add_argument("--runs", type=int, default=1, help="rounds, checkouts alternating")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    roots = [HERE.parent, *args.root]
    for calls in args.calls:
        path = args.out / f"sliding_window_{calls}.jsonl"
        if not path.exists():
            bench_inspector.CALLS = calls
            bench_inspector.session(path)
        for _ in range(args.runs):
            for root in roots:
                load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
                row = child_json(CHILD, [str(path), str(args.repeat)], root.resolve())
                print(
                    f"{calls} calls, {root} (load {load}): simulate openai "
                    f"{row['cpu_s']:.3f} CPU-s, {row['compared']:,} prompt comparisons, "
                    f"reads {row['reads']:,} (per call: {row['reads_digest']}; "
                    f"details: {row['details_digest']})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
