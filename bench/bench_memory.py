"""Benchmark: peak memory of ``check`` and ``scan`` against the size of the file.

    python bench/bench_memory.py                          # 220 MB CC session, 280 MB log
    python bench/bench_memory.py --cc-mb 300 --repeat 2
    python bench/bench_memory.py --cc-mb 300 --log-calls 0 --cc-source ../shared/realdata/claude_code_jsonl/Xu-Wentao__dotfile__7ef4b236-d946-48a6-a856-e45b02af7be7.jsonl
    python bench/bench_memory.py --root /tmp/ref           # another checkout, same files

Two inputs, written under ``/tmp/cacheviz-bench`` when missing:

* a big Claude Code session (``bench/make_big_cc.py``: a real session repeated with fresh
  ids, compacting between copies), ``--cc-mb`` MB;
* a request log of ``--log-calls`` calls (``bench/bench_analysis.py``'s generator: 1,000
  calls are 280 MB).

Each command runs in a fresh process, ``cacheviz check FILE --json`` and
``cacheviz scan FILE --no-cache --json``; its peak RSS (its own and its workers', as
``wait4`` reports it, like ``/usr/bin/time -f %M``) is printed against the file's size
(budget for both: <= 4x, issue 19). The floor is the peak of a process that only
imports the CLI and loads the o200k_base table. Best (lowest) of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = Path("/tmp/cacheviz-bench")
FLOOR = (
    "import cacheviz.cli._app, cacheviz.analysis, polars;"
    "from cacheviz.request._tokens import get_encoding; get_encoding('o200k_base').encode_ordinary('x')"
)


def peak_mb(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Peak RSS (MB) of one process and the children it waited for.

    It runs in ``cwd``, the checkout measured: ``python -m`` puts the working directory
    before ``PYTHONPATH``.
    """
    child = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    errors = child.stderr.read().decode() if child.stderr else ""
    if child.returncode not in (0, 1):  # check exits 1 when it finds something
        msg = f"{' '.join(argv)} exited {child.returncode}: {errors[-2000:]}"
        raise SystemExit(msg)
    return usage.ru_maxrss / 1024


def inputs(cc_mb: float, log_calls: int, source: Path | None) -> list[tuple[str, Path]]:
    """The files, written when missing (``log_calls`` 0: no request log)."""
    sys.path.insert(0, str(HERE))
    from make_big_cc import default_source, write

    OUT.mkdir(parents=True, exist_ok=True)
    origin = source or default_source()
    cc = OUT / f"big_cc_{cc_mb:g}.jsonl"
    if source is not None:
        cc = OUT / f"big_cc_{source.stem.split('__')[0]}_{cc_mb:g}.jsonl"
    if not cc.exists():
        write(origin, cc, cc_mb)
    files = [(f"Claude Code session from {origin.name[:24]}", cc)]
    log = OUT / f"memory_log_{log_calls}.jsonl"
    if log_calls and not log.exists():
        from bench_analysis import generate

        generate(log, log_calls)
    return files + ([("request log", log)] if log_calls else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc-mb", type=float, default=220.0)
    parser.add_argument("--cc-source", type=Path, help="the real session to repeat")
    parser.add_argument("--log-calls", type=int, default=1000, help="0: no request log")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--root", type=Path, default=ROOT, help="the cacheviz checkout to run")
    args = parser.parse_args()
    args.root = args.root.resolve()
    env = {**os.environ, "PYTHONPATH": str(args.root)}
    files = inputs(args.cc_mb, args.log_calls, args.cc_source)
    floor = min(peak_mb([sys.executable, "-c", FLOOR], env, args.root) for _ in range(args.repeat))
    print(f"{args.root}; load average {os.getloadavg()[0]:.1f}")
    print(f"floor (imports + o200k_base): {floor:,.0f} MB")
    for kind, path in files:
        size = path.stat().st_size / 2**20
        for command, extra in (("check", ["--json"]), ("scan", ["--no-cache", "--json"])):
            argv = [sys.executable, "-m", "cacheviz", command, str(path), *extra]
            peak = min(peak_mb(argv, env, args.root) for _ in range(args.repeat))
            print(
                f"{command:5} {kind} {path.name} ({size:,.0f} MB): peak RSS {peak:,.0f} MB = "
                f"{peak / size:.2f}x the file (budget 4x; above the floor: "
                f"{(peak - floor) / size:.2f}x)"
            )


if __name__ == "__main__":
    main()
