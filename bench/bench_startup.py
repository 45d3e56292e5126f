"""Benchmark: start-up of the command line against ``python -c pass``, same run.

    python bench/bench_startup.py                 # this checkout
    python bench/bench_startup.py --root /tmp/ref # another checkout, same machine

Each command runs in a fresh process ``--runs`` times, alternating with the baseline;
the best run of each is kept (the machine is shared: the minimum is the least disturbed),
as wall time and as CPU time (user + system of the child, steadier under load).

Every child compiles its modules once into a private ``PYTHONPYCACHEPREFIX`` (an
installed package has its ``.pyc`` files; ``PYTHONDONTWRITEBYTECODE`` would time the
compiler) and writes its caches into a private ``CACHEVIZ_CACHE_DIR``, so nothing is
written into the checkouts or the user's cache folder.

* ``python -c pass``: the interpreter alone (the baseline);
* ``cacheviz --version`` (budget: 0.08 s);
* ``cacheviz summary`` of the bundled 12-call sample ``append_only.jsonl`` (budget
  0.35 s), warm (its caches filled by an earlier run: every run after the first) and
  cold (an empty cache folder each time: the first run);
* what that summary cannot avoid, each in its own process: importing polars, loading
  tiktoken's ``o200k_base`` table (by tiktoken, and by ``cacheviz.request._tokens`` from the copy
  of its ranks), importing genai-prices.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = ["-m", "cacheviz", "summary", "sample_sessions/append_only.jsonl"]

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "cacheviz --version": ["-m", "cacheviz", "--version"],
    "cacheviz summary (12 calls)": SUMMARY,
    "  the same, caches cold": SUMMARY,
    "import polars": ["-c", "import polars"],
    "tiktoken o200k_base": ["-c", "import tiktoken; tiktoken.get_encoding('o200k_base')"],
    "  from cacheviz's rank copy": [
        "-c",
        "from cacheviz.request._tokens import get_encoding; get_encoding('o200k_base')",
    ],
    "import genai_prices": ["-c", "from genai_prices import data_snapshot"],
}
COLD = "  the same, caches cold"


def _run(argv: list[str], root: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], cwd=root, env=env, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def best_times(root: Path, runs: int, scratch: Path) -> dict[str, tuple[float, float]]:
    """The best (wall, CPU) time of each command over ``runs`` rounds, in fresh processes."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {
        "PYTHONPATH": str(root),
        "PYTHONPYCACHEPREFIX": str(scratch / "pycache"),
        "CACHEVIZ_CACHE_DIR": str(scratch / "cache"),
    }
    for argv in COMMANDS.values():  # compile every module and fill the caches once
        _run(argv, root, env)
    best = dict.fromkeys(COMMANDS, (float("inf"), float("inf")))
    for _ in range(runs):
        for name, argv in COMMANDS.items():
            run_env = env
            if name == COLD:
                cold = scratch / "cold"
                shutil.rmtree(cold, ignore_errors=True)
                run_env = {**env, "CACHEVIZ_CACHE_DIR": str(cold)}
            wall, cpu = _run(argv, root, run_env)
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to time")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cacheviz-bench-startup-") as scratch:
        load = os.getloadavg()[0]
        times = best_times(args.root.resolve(), args.runs, Path(scratch))
    base_wall, base_cpu = times["python -c pass"]
    print(
        f"{args.root.resolve()}: load average {load:.1f} → {os.getloadavg()[0]:.1f}; "
        f"best of {args.runs}"
    )
    print(f"{'':<30} {'wall':>8} {'':>14} {'CPU':>8}")
    for name, (wall, cpu) in times.items():
        print(
            f"{name:<30} {wall:6.3f} s (+{wall - base_wall:.3f} s)  "
            f"{cpu:6.3f} s (+{cpu - base_cpu:.3f} s)"
        )


if __name__ == "__main__":
    main()
