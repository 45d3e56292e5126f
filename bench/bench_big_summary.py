"""Benchmark: ``cacheviz summary`` of a big request log against reading it, same run.

    python bench/bench_big_summary.py /tmp/cacheviz-bench/long_session_2000.jsonl

(generate the log with ``bench/bench_report.py --calls 2000``). Two processes:

* **baseline**: read the file and find, for each line, how long a prefix it shares
  with the line before (a binary search with ``bytes.startswith``: C-speed compares),
  the least any prefix-cache analysis must do;
* ``cacheviz summary PATH --json``.

Printed: wall and CPU time of both, the ratio (budget <= 2.5x) and the summary's peak
RSS against the file's size (budget <= 0.6x).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BASELINE = r"""
import sys
previous = b""
shared = 0
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        low, high = 0, min(len(line), len(previous))
        while low < high:  # the longest common prefix, by halving
            mid = (low + high + 1) // 2
            if line.startswith(previous[:mid]):
                low = mid
            else:
                high = mid - 1
        shared += low
        previous = line
print(shared)
"""


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--root", type=Path, default=ROOT, help="the cacheviz checkout to time")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.root.resolve())}
    size = args.path.stat().st_size / 1e6
    base = run([sys.executable, "-c", BASELINE, str(args.path)], env)
    ours = run([sys.executable, "-m", "cacheviz", "summary", str(args.path), "--json"], env)
    print(f"{args.path.name}: {size:,.0f} MB; load average {os.getloadavg()[0]:.1f}")
    print(f"read + compare lines: {base[0]:.2f} s wall, {base[1]:.2f} CPU-s")
    print(
        f"cacheviz summary:     {ours[0]:.2f} s wall, {ours[1]:.2f} CPU-s = "
        f"{ours[0] / base[0]:.2f}x wall, {ours[1] / base[1]:.2f}x CPU; "
        f"peak RSS {ours[2]:,.0f} MB = {ours[2] / size:.2f}x the file"
    )


if __name__ == "__main__":
    main()
