"""Benchmark: a cold ``cacheviz scan --no-cache`` against a usage sum of the same files.

    python bench/bench_cold_scan.py                       # 400 synthetic sessions + realdata
    python bench/bench_cold_scan.py --sessions 1000 --out /tmp/fleet

The files: the Claude Code transcripts of ../shared/realdata (when present) and a
synthetic fleet of Claude Code sessions (``bench_scan.fleet``, deterministic), written
outside the repository. Each command runs in a fresh process (both pay their start-up),
best of ``--runs``:

* **baseline**: ccusage (``npx --no-install ccusage session --json --offline``) when it
  runs offline, else a plain-Python usage sum: every line holding ``"usage"`` parsed
  with ``json.loads``, usage summed once per message id (ccusage's own fast path);
* ``cacheviz scan PATH --no-cache --json`` (cold: budget <= 3x the baseline);
* the same with its cache filled (warm: budget <= 1x).

Printed with wall and CPU time (children included): the ratios are what to quote.
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

USAGE_SUM = r"""
import json, sys
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


def best(argv: list[str], env: dict[str, str], runs: int, before=None) -> tuple[float, float]:
    """Best wall and CPU seconds of ``argv`` over ``runs`` fresh processes."""
    wall = cpu = float("inf")
    for _ in range(runs):
        if before is not None:
            before()
        start, start_cpu = time.perf_counter(), _cpu()
        subprocess.run(argv, env=env, capture_output=True, check=True, cwd=ROOT)
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, _cpu() - start_cpu)
    return wall, cpu


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
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench/fleet"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="the cacheviz checkout to time")
    args = parser.parse_args()
    from bench_scan import claude_config, fleet

    projects = args.out / "projects"
    if not projects.is_dir():
        fleet(projects, args.sessions)
        real = ROOT.parent / "shared" / "realdata"
        if (real / "claude_code_jsonl").is_dir():
            claude_config(real, args.out)
    files = list(projects.rglob("*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    print(f"{len(files)} files, {size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f}")
    env = {**os.environ, "PYTHONPATH": str(args.root.resolve()), "CLAUDE_CONFIG_DIR": str(args.out)}
    baseline = _ccusage(env)
    name = "ccusage session --offline"
    if baseline is None:
        baseline, name = [sys.executable, "-c", USAGE_SUM, str(projects)], "python usage sum"
    base_wall, base_cpu = best(baseline, env, args.runs)
    with tempfile.TemporaryDirectory() as temp:
        cache = Path(temp) / "cache"
        scan_env = {**env, "CACHEVIZ_CACHE_DIR": str(cache)}
        scan = [sys.executable, "-m", "cacheviz", "scan", str(projects), "--json"]
        cold = best([*scan, "--no-cache"], scan_env, args.runs)
        subprocess.run(scan, env=scan_env, capture_output=True, check=True, cwd=ROOT)
        warm = best(scan, scan_env, args.runs)
        shutil.rmtree(cache, ignore_errors=True)
    print(f"{name:<28} {base_wall:7.2f} s wall {base_cpu:7.2f} CPU-s")
    for label, (wall, cpu) in (("cacheviz scan, cold", cold), ("cacheviz scan, warm", warm)):
        print(
            f"{label:<28} {wall:7.2f} s wall {cpu:7.2f} CPU-s  = {wall / base_wall:.2f}x wall, "
            f"{cpu / base_cpu:.2f}x CPU"
        )


if __name__ == "__main__":
    main()
