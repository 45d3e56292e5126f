"""Benchmark: a cold ``cacheviz scan --no-cache`` against a usage sum of the same files.

    python bench/bench_cold_scan.py                       # 400 synthetic sessions + realdata
    python bench/bench_cold_scan.py --sessions 300 --out /tmp/synthetic --root ../ref --root .

The files: the Claude Code transcripts of ../shared/realdata (when present) and a
synthetic tree of Claude Code sessions (``bench_scan.synthetic_sessions``, deterministic), written
outside the repository. Each command runs in a fresh process (both pay their start-up),
best of ``--runs``; with several ``--root`` checkouts, their runs alternate, so that
before and after are measured under the same load:

* **baseline**: ccusage when it runs offline (``--ccusage PATH`` or
  ``$CACHEVIZ_BENCH_CCUSAGE``: ``PATH claude session --json --offline``, see
  ``_shared.ccusage``; else ``npx --no-install ccusage session --json --offline``), else a
  plain-Python usage sum: every line holding ``"usage"`` parsed with ``json.loads``,
  usage summed once per message id (ccusage's own fast path);
* ``cacheviz scan PATH --no-cache --json`` (cold: budget <= 3x the baseline);
* the same with its cache filled, nothing changed (warm: budget <= 1x);
* the same after one session file was touched (its mtime changed, its bytes not: the
  scan hashes it and reuses its rows, and reads the cached tables);
* ``python -c pass`` and ``cacheviz --version``, the start-up floor.

Python writes no bytecode under ``PYTHONDONTWRITEBYTECODE`` (set on this machine), so
every process would compile cacheviz again; an installed package has its ``.pyc``. The
children get a ``PYTHONPYCACHEPREFIX`` in a temporary folder instead, filled by one
untimed run of each command. Printed with wall and CPU time (children included) and the
load average: the CPU ratios are what to quote.
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
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

USAGE_SUM = r"""
import json, sys
from collections.abc import Callable
from pathlib import Path
seen = set()
totals = dict.fromkeys(
    ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"), 0
)
for path in sorted(Path(sys.argv[1]).rglob("*.jsonl")):
    with path.open("rb") as handle:
        for line in handle:
            if b'"usage"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            message = record.get("message") if isinstance(record, dict) else None
            usage = message.get("usage") if isinstance(message, dict) else None
            if not isinstance(usage, dict):
                continue
            key = (message.get("id"), record.get("requestId"))
            if key in seen:
                continue
            seen.add(key)
            for name in totals:
                value = usage.get(name)
                if isinstance(value, int):
                    totals[name] += value
print(json.dumps(totals))
"""


def _cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``argv`` in a fresh process.

    ``cwd`` is the checkout timed: ``python -m`` puts it first on ``sys.path``.
    """
    start, start_cpu = time.perf_counter(), _cpu()
    subprocess.run(argv, env=env, capture_output=True, check=True, cwd=cwd)
    return time.perf_counter() - start, _cpu() - start_cpu


def _ccusage(env: dict[str, str]) -> list[str] | None:
    argv = ["npx", "--no-install", "ccusage", "session", "--json", "--offline"]
    try:
        done = subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return argv if done.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=400)
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench/synthetic"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--ccusage", help="a ccusage executable, the baseline (default $CACHEVIZ_BENCH_CCUSAGE)"
    )
    parser.add_argument(
        "--root",
        type=Path,
        action="append",
        help="a cacheviz checkout to time (repeat to compare; default: this one)",
    )
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root or [ROOT]]
    from bench_scan import claude_config, synthetic_sessions

    projects = args.out / "projects"
    if not projects.is_dir():
        synthetic_sessions(projects, args.sessions)
        real = ROOT.parent / "shared" / "realdata"
        if (real / "claude_code_jsonl").is_dir():
            claude_config(real, args.out)
    files = sorted(projects.rglob("*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    print(f"{len(files)} files, {size / 1e6:.1f} MB; load average {_load()}")
    with tempfile.TemporaryDirectory() as temp:
        env = {
            **os.environ,
            "CLAUDE_CONFIG_DIR": str(args.out),
            "PYTHONPYCACHEPREFIX": str(Path(temp) / "pyc"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        from _shared import ccusage

        baseline = ccusage(args.ccusage, args.out)  # CLAUDE_CONFIG_DIR is args.out here too
        name = "ccusage claude session"
        if baseline is None:
            baseline = _ccusage(env)
            name = "ccusage session --offline"
        if baseline is None:
            baseline, name = [sys.executable, "-c", USAGE_SUM, str(projects)], "python usage sum"

        commands: list[tuple[str, Path | None, list[str], dict[str, str], object]] = []
        commands.append((name, None, baseline, env, None))
        commands.append(("python -c pass", None, [sys.executable, "-c", "pass"], env, None))
        for n, root in enumerate(roots):
            root_env = {
                **env,
                "PYTHONPATH": str(root),
                "CACHEVIZ_CACHE_DIR": str(Path(temp) / f"cache-{n}"),
            }
            own = Path(temp) / f"synthetic-{n}" / "projects"  # a copy each: touching one is theirs
            shutil.copytree(projects, own, symlinks=True)
            touch = _toucher(sorted(own.rglob("*.jsonl"))[len(files) // 2])
            scan = [sys.executable, "-m", "cacheviz", "scan", str(own), "--json"]
            version = [sys.executable, "-m", "cacheviz", "--version"]
            commands += [
                ("cacheviz --version", root, version, root_env, None),
                ("cacheviz scan, cold", root, [*scan, "--no-cache"], root_env, None),
                ("cacheviz scan, warm", root, scan, root_env, None),
                ("  warm, one file touched", root, scan, root_env, touch),
            ]
        for _label, root, argv, cmd_env, _before in commands:  # compile; fill the caches
            subprocess.run(argv, env=cmd_env, capture_output=True, check=True, cwd=root or ROOT)
        best: dict[int, tuple[float, float]] = {}
        for _ in range(args.runs):
            for i, (_label, root, argv, cmd_env, before) in enumerate(commands):
                if callable(before):
                    before()
                wall, cpu = once(argv, cmd_env, root or ROOT)
                old = best.get(i, (float("inf"), float("inf")))
                best[i] = (min(old[0], wall), min(old[1], cpu))
    base_wall, base_cpu = best[0]
    print(f"best of {args.runs}; load average after {_load()}")
    shown_root = None
    for i, (label, root, _argv, _env, _before) in enumerate(commands):
        if root is not None and root != shown_root:
            print(f"-- {root}")
            shown_root = root
        wall, cpu = best[i]
        ratio = "" if i == 0 else f"  = {wall / base_wall:5.2f}x wall, {cpu / base_cpu:5.2f}x CPU"
        print(f"{label:<28} {wall:7.2f} s wall {cpu:7.2f} CPU-s{ratio}")


def _toucher(path: Path) -> Callable[[], None]:
    def touch() -> None:
        info = path.stat()
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))

    return touch


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
