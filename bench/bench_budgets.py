"""Benchmark: issue 32's rows, each as a ratio to its baseline measured in the same run.

    python bench/bench_budgets.py                                  # this checkout
    python bench/bench_budgets.py --root ../main --root .          # before and after, paired
    python bench/bench_budgets.py --copies 15 --cc-mb 60 --repeat 3
    python bench/bench_budgets.py --ccusage /work/ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage

The inputs are written outside the repository (``--out``, default
``/tmp/cacheviz-bench/budgets``) when missing:

* a tree of Claude Code sessions: every ``../shared/realdata/claude_code_jsonl`` file
  copied ``--copies`` times with fresh ids (``bench/make_big_cc.py``'s substitutions), one
  project folder per copy;
* a big Claude Code session of ``--cc-mb`` MB (``bench/make_big_cc.py``: a real session
  repeated, compacting between copies).

Every command runs in a fresh process, measured on its own with ``os.wait4`` (its CPU
time, children included, and its peak RSS); the rounds interleave the baselines and each
``--root``, so that a change in the machine's load (2 cores shared) hits all alike; the
best of ``--repeat`` is kept. The rows (budgets from the issue):

1. ``cacheviz scan TREE --no-cache --json`` vs ccusage's ``claude session --json
   --offline`` on the same tree (``--ccusage PATH`` or ``$CACHEVIZ_BENCH_CCUSAGE``, an
   install outside the repository: ``_shared.ccusage``), else a plain-Python usage sum of
   the same files (``bench_cold_scan.USAGE_SUM``, measured either way): <= 3x CPU and wall;
2. ``cacheviz summary --json`` of the big session vs an orjson parse of every line of it:
   <= 3x CPU;
3. peak RSS of ``check`` / ``scan`` / ``summary`` of the big session against its size:
   <= 3x;
4. ``scan FILE --no-cache --json`` of the big session minus ``summary`` of it: <= +0.05 s.

The inspector's row is ``bench/bench_inspector.py``'s.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

REALDATA = ROOT.parent / "shared" / "realdata" / "claude_code_jsonl"
PARSE = r"""
import sys, orjson
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        if line.strip():
            orjson.loads(line)
"""


def tree(out: Path, copies: int) -> Path:
    """``copies`` copies of every real Claude Code file, with fresh ids, under ``out``."""
    from make_big_cc import _IDS, _UUID

    projects = out / "projects"
    if projects.is_dir():
        return projects
    files = sorted(REALDATA.glob("*.jsonl"))
    if not files:
        msg = f"no Claude Code session in {REALDATA}"
        raise SystemExit(msg)
    for copy in range(copies):
        folder = projects / f"-bench-project-{copy:03d}"
        folder.mkdir(parents=True, exist_ok=True)

        def uuid(match: re.Match[bytes], copy: int = copy) -> bytes:
            return b"%08x" % (copy * 7919 + int(match.group(0)[:8], 16) % 7919) + match.group(1)

        def ident(match: re.Match[bytes], copy: int = copy) -> bytes:
            return match.group(1) + b"_c%d" % copy + match.group(2)

        for path in files:
            data = _IDS.sub(ident, _UUID.sub(uuid, path.read_bytes()))
            name = _UUID.sub(uuid, path.name.encode()).decode()
            (folder / name).write_bytes(data)
    return projects


def measured(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (children included) and peak RSS (MB) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):  # 1: scan/check found something to say
        msg = f"{argv} exited with {process.returncode}"
        raise SystemExit(msg)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="a checkout (repeatable)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench/budgets"))
    parser.add_argument("--copies", type=int, default=15)
    parser.add_argument("--cc-mb", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--ccusage",
        help="a ccusage executable, the scan's baseline (default $CACHEVIZ_BENCH_CCUSAGE)",
    )
    parser.add_argument(
        "--only-scan", action="store_true", help="the cold scan row only (no big session)"
    )
    args = parser.parse_args()
    roots = [r.resolve() for r in args.root or [ROOT]]
    import make_big_cc
    from _shared import ccusage, ccusage_env
    from bench_cold_scan import USAGE_SUM

    projects = tree(args.out, args.copies)
    big = args.out / f"big_cc_{args.cc_mb:g}.jsonl"
    if not big.exists() and not args.only_scan:
        make_big_cc.write(make_big_cc.default_source(), big, args.cc_mb)
    native = ccusage(args.ccusage, args.out)
    files = sorted(projects.rglob("*.jsonl"))
    tree_mb = sum(p.stat().st_size for p in files) / 1e6
    big_mb = big.stat().st_size / 2**20 if big.exists() else 0.0
    print(f"tree: {len(files)} files, {tree_mb:.0f} MB; session: {big_mb:.0f} MiB")
    base_env = {**os.environ}
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)  # children keep their .pyc (as installed)
    py = sys.executable
    runs: list[tuple[str, Path | None, list[str]]] = [
        ("usage sum (tree)", None, [py, "-c", USAGE_SUM, str(projects)]),
        ("orjson parse (session)", None, [py, "-c", PARSE, str(big)]),
    ]
    if native is not None:
        runs.append(("ccusage claude session (tree)", None, native))
    per_root = 1 if args.only_scan else 4
    for root in roots:
        cli = [py, "-m", "cacheviz"]
        runs.append(
            ("scan --no-cache (tree)", root, [*cli, "scan", str(projects), "--no-cache", "--json"])
        )
        if not args.only_scan:
            runs += [
                ("summary (session)", root, [*cli, "summary", str(big), "--json"]),
                ("check (session)", root, [*cli, "check", str(big), "--json"]),
                (
                    "scan --no-cache (session)",
                    root,
                    [*cli, "scan", str(big), "--no-cache", "--json"],
                ),
            ]
    if args.only_scan:
        runs.pop(1)  # no session: no parse of it

    def env_of(root: Path | None, argv: list[str]) -> dict[str, str]:
        if root is None and argv is native:
            return ccusage_env(args.out)
        where = root or ROOT
        return {**base_env, "PYTHONPATH": str(where), "PYTHONPYCACHEPREFIX": f"/tmp/pyc{where}"}

    for _label, root, argv in runs:  # compile once, untimed
        measured(argv, env_of(root, argv), root or ROOT)
    best: dict[int, tuple[float, float, float]] = {}
    for _ in range(args.repeat):
        for i, (_label, root, argv) in enumerate(runs):
            got = measured(argv, env_of(root, argv), root or ROOT)
            old = best.get(i, (float("inf"),) * 3)
            best[i] = (min(old[0], got[0]), min(old[1], got[1]), min(old[2], got[2]))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"best of {args.repeat}; load average after: {load}")
    for i, (label, root, _argv) in enumerate(runs):
        wall, cpu, rss = best[i]
        where = "" if root is None else f" [{root.name}]"
        print(f"{label + where:<44} {wall:7.2f} s wall {cpu:7.2f} CPU-s {rss:6.0f} MB")
    labels = [label for label, _root, _argv in runs]
    sum_wall, sum_cpu, _ = best[0]
    parse_cpu = 0.0 if args.only_scan else best[1][1]
    first = labels.index("scan --no-cache (tree)")
    base = {"usage sum": (sum_wall, sum_cpu)}
    if native is not None:
        base["ccusage"] = best[labels.index("ccusage claude session (tree)")][:2]
    for n, root in enumerate(roots):
        at = first + per_root * n
        scan_tree = best[at]
        print(f"-- {root}")
        for name, (wall, cpu) in base.items():
            print(
                f"1. cold scan / {name}: {scan_tree[1] / cpu:5.1f}x CPU, "
                f"{scan_tree[0] / wall:5.1f}x wall (budget 3x); "
                f"{1000 * scan_tree[1] / len(files):.1f} ms CPU per file"
            )
        if args.only_scan:
            continue
        summary, check, scan_one = (best[at + k] for k in range(1, 4))
        print(f"2. summary / orjson parse: {summary[1] / parse_cpu:5.1f}x CPU (budget 3x)")
        print(
            f"3. peak RSS / file: check {check[2] / big_mb:.2f}x, scan {scan_one[2] / big_mb:.2f}x, "
            f"summary {summary[2] / big_mb:.2f}x (budget 3x)"
        )
        print(
            f"4. scan - summary of one file: {scan_one[1] - summary[1]:+.2f} CPU-s (budget +0.05)"
        )


if __name__ == "__main__":
    main()
