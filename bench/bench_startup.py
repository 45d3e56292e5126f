"""Benchmark: start-up of the command line against ``python -c pass``, same run.

    python bench/bench_startup.py                 # this checkout
    python bench/bench_startup.py --root /tmp/ref # another checkout, same machine

Each command runs in a fresh process ``--runs`` times, alternating with the baseline;
the best run of each is kept (the machine is shared: the minimum is the least disturbed).

* ``python -c pass``: the interpreter alone (the baseline);
* ``cacheviz --version`` (budget: 0.08 s);
* ``cacheviz summary`` of the bundled 12-call sample ``append_only.jsonl`` (budget 0.35 s);
* what that summary cannot avoid, each in its own process: importing polars, loading
  tiktoken's ``o200k_base`` table, importing genai-prices (the sample has no reported
  usage, so its tokens are counted and its drift costs priced).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "cacheviz --version": ["-m", "cacheviz", "--version"],
    "cacheviz summary (12 calls)": [
        "-m",
        "cacheviz",
        "summary",
        "sample_sessions/append_only.jsonl",
    ],
    "import polars": ["-c", "import polars"],
    "tiktoken o200k_base": ["-c", "import tiktoken; tiktoken.get_encoding('o200k_base')"],
    "import genai_prices": ["-c", "from genai_prices import data_snapshot"],
}


def best_times(root: Path, runs: int) -> dict[str, float]:
    """The best wall time of each command over ``runs`` rounds, in fresh processes."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    best = dict.fromkeys(COMMANDS, float("inf"))
    for _ in range(runs):
        for name, argv in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, *argv], cwd=root, env=env, capture_output=True, check=True
            )
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to time")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    times = best_times(args.root.resolve(), args.runs)
    base = times["python -c pass"]
    print(f"load average {os.getloadavg()[0]:.1f}; best of {args.runs}")
    for name, took in times.items():
        print(
            f"{name:<30} {took:6.3f} s  {took / base:5.1f}x python -c pass  (+{took - base:.3f} s)"
        )


if __name__ == "__main__":
    main()
