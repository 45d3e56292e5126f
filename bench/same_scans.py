"""Compare `cacheviz scan --no-cache` of two checkouts: the JSON and every table row.

A speed-up of the scan path must not change a number: run this with the checkout of the
reference commit (e.g. a ``git worktree`` of main before the change) and this one::

    python bench/same_scans.py /path/to/reference/checkout [--sessions 60] [--also FOLDER]

Scanned: the samples of this checkout, every file of ../shared/realdata (all formats),
its Claude Code files laid out as ``projects/<project>/<session>.jsonl``, and a
synthetic tree of Claude Code sessions (``bench_scan.synthetic_sessions``, deterministic). For each,
both checkouts run ``scan PATH --no-cache --json --by session`` and ``--by day`` (with
``--parquet``): the JSON documents, the messages on stderr and the sessions, calls,
drifts, misses, busters and files tables (Parquet, compared value for value, dtypes
included) must be identical. Exit status 1 lists what differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

TABLES = ("sessions", "calls", "drifts", "misses", "busters", "files")


def scan(checkout: Path, path: Path, by: str, out: Path) -> tuple[object, str]:
    """The scan document of ``path`` as ``checkout`` computes it, and its stderr."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    argv = [sys.executable, "-m", "cacheviz", "scan", str(path), "--no-cache", "--json"]
    proc = subprocess.run(
        [*argv, "--by", by, "--parquet", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=checkout,
        check=False,
    )
    doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    return {"status": proc.returncode, "doc": doc}, proc.stderr


def tables_differ(a: Path, b: Path) -> list[str]:
    """The tables of two ``--parquet`` folders that differ (names, with the first row)."""
    import polars as pl
    from polars.testing import assert_frame_equal

    out = []
    for name in TABLES:
        left, right = a / f"{name}.parquet", b / f"{name}.parquet"
        if not left.exists() or not right.exists():
            if left.exists() != right.exists():
                out.append(f"{name}: written by one checkout only")
            continue
        x, y = pl.read_parquet(left), pl.read_parquet(right)
        try:
            assert_frame_equal(x, y, check_exact=True)
        except AssertionError as exc:
            out.append(f"{name}: {str(exc).splitlines()[0]}")
    return out


def folders(temp: Path, sessions: int) -> list[Path]:
    """The folders scanned (see the module docstring)."""
    from bench_scan import claude_config, synthetic_sessions

    out = [ROOT / "sample_sessions"]
    real = ROOT.parent / "shared" / "realdata"
    if real.is_dir():
        out.append(real)
        if (real / "claude_code_jsonl").is_dir():
            out.append(claude_config(real, temp / "claude") / "projects")
    if sessions:
        synthetic_sessions(temp / "synthetic" / "projects", sessions)
        out.append(temp / "synthetic" / "projects")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="the reference checkout")
    parser.add_argument("--sessions", type=int, default=60, help="synthetic sessions (0: none)")
    parser.add_argument(
        "--also",
        type=Path,
        action="append",
        default=[],
        help="another folder to scan (repeat; over 8 MB it runs on the process pool)",
    )
    args = parser.parse_args()
    differ = 0
    with tempfile.TemporaryDirectory() as temp:
        for folder in [*folders(Path(temp), args.sessions), *args.also]:
            for by in ("session", "day"):
                ref_out, own_out = Path(temp) / "ref", Path(temp) / "own"
                ref, ref_err = scan(args.reference.resolve(), folder, by, ref_out)
                own, own_err = scan(ROOT, folder, by, own_out)
                problems = tables_differ(ref_out, own_out) if by == "session" else []
                if ref != own:
                    problems.insert(0, "the JSON documents differ")
                if ref_err != own_err:
                    problems.append("stderr differs")
                label = f"{folder} --by {by}"
                if problems:
                    differ += 1
                    print(f"DIFFERENT {label}: " + "; ".join(problems))
                else:
                    print(f"same      {label}")
                for out in (ref_out, own_out):
                    for name in TABLES:
                        (out / f"{name}.parquet").unlink(missing_ok=True)
    print(f"{differ} different" if differ else "all identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
