"""Benchmark: ``cacheviz summary`` of a big request log against reading it, same run.

    python bench/bench_big_summary.py                      # the 2,000-call log (961 MB)
    python bench/bench_big_summary.py --root /path/to/other-checkout --root .   # two checkouts
    python bench/bench_big_summary.py /tmp/cacheviz-bench/long_session_2600.jsonl

Without a path the log of ``--calls`` calls is generated once with
``bench_analysis.generate`` into ``--out`` (outside the repository). Fresh processes, each
measured on its own (``os.wait4``: its CPU time and its peak RSS, not the largest of all
children so far), best of ``--repeat``; the rounds interleave the checkouts (baseline,
then each root's summary and fixed part), so a change in the machine's load hits all:

* **baseline**: read the file and find, for each line, how long a prefix it shares
  with the line before (a binary search with ``bytes.startswith``: C-speed compares),
  the least any prefix-cache analysis must do;
* ``cacheviz summary PATH --json``;
* **fixed**: ``cacheviz summary --json`` of the log's first 3 lines, the part of the
  command that does not grow with the file (interpreter, imports, the tokenizer's
  tables, the prices).

Printed: wall and CPU time of each, the ratio (budget <= 2.5x) and the summary's peak
RSS against the file's size (budget <= 0.6x), with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
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


def run(argv: list[str], root: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one fresh process of ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    start = time.perf_counter()
    child = subprocess.Popen(
        # ``-m`` puts the working folder first on sys.path: it must be the checkout timed
        argv,
        env=env,
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _log(args: argparse.Namespace) -> Path:
    """The log to read: the path given, else the generated log of ``--calls`` calls."""
    if args.path is not None:
        return args.path.resolve()  # the children run in each root
    path = args.out.resolve() / f"long_session_{args.calls}.jsonl"
    if not path.exists():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_analysis import generate

        path.parent.mkdir(parents=True, exist_ok=True)
        generate(path, args.calls)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, nargs="?", help="the log (default: generated)")
    parser.add_argument("--calls", type=int, default=2000, help="calls of the generated log")
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench"))
    parser.add_argument(
        "--root", type=Path, action="append", help="a cacheviz checkout to time (repeatable)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (best kept)")
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root or [ROOT]]
    path = _log(args)
    size = path.stat().st_size / 1e6
    load_before = os.getloadavg()[0]
    summary = [sys.executable, "-m", "cacheviz", "summary"]
    runs: dict[tuple[str, Path], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        head = Path(folder) / "head.jsonl"
        with path.open("rb") as source:
            head.write_bytes(b"".join(source.readline() for _ in range(3)))
        for _ in range(args.repeat):
            runs.setdefault(("base", ROOT), []).append(
                run([sys.executable, "-c", BASELINE, str(path)], roots[0])
            )
            for root in roots:
                runs.setdefault(("ours", root), []).append(
                    run([*summary, str(path), "--json"], root)
                )
                runs.setdefault(("fixed", root), []).append(
                    run([*summary, str(head), "--json"], root)
                )
    kept = {key: tuple(min(r[i] for r in found) for i in range(3)) for key, found in runs.items()}
    base = kept["base", ROOT]
    print(
        f"{path.name}: {size:,.0f} MB; load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after; best of {args.repeat}"
    )
    print(f"read + compare lines: {base[0]:.2f} s wall, {base[1]:.2f} CPU-s")
    for root in roots:
        ours, fixed = kept["ours", root], kept["fixed", root]
        print(f"{root}:")
        print(
            f"  cacheviz summary:   {ours[0]:.2f} s wall, {ours[1]:.2f} CPU-s = "
            f"{ours[0] / base[0]:.2f}x wall, {ours[1] / base[1]:.2f}x CPU; "
            f"peak RSS {ours[2]:,.0f} MB = {ours[2] / size:.2f}x the file"
        )
        print(
            f"  of which fixed:     {fixed[0]:.2f} s wall, {fixed[1]:.2f} CPU-s "
            f"(summary of the first 3 lines; peak RSS {fixed[2]:,.0f} MB); the rest "
            f"{ours[1] - fixed[1]:.2f} CPU-s = {(ours[1] - fixed[1]) / base[1]:.2f}x the baseline"
        )


if __name__ == "__main__":
    main()
