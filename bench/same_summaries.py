"""Compare `cacheviz summary --json` of two checkouts on the samples and ../shared/realdata.

A restructure or a speed-up must not change a number: run this with the checkout of the
reference commit (e.g. a ``git worktree`` of main before the change) and this one::

    python bench/same_summaries.py /path/to/reference/checkout

Keys renamed on purpose are mapped with ``--renames`` (a JSON object old → new). Exit
status 1 lists every file whose summary differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def inputs(root: Path) -> list[Path]:
    """The samples of this checkout and every file of ../shared/realdata."""
    files = sorted((root / "sample_sessions").glob("*.jsonl"))
    real = root.parent / "shared" / "realdata"
    if real.is_dir():
        files += sorted(p for p in real.rglob("*") if p.is_file() and p.suffix != ".md")
    return files


def summary(checkout: Path, path: Path) -> object:
    """The summary document of ``path`` as ``checkout`` computes it (None when it fails)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    proc = subprocess.run(
        [sys.executable, "-m", "cacheviz", "summary", str(path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=checkout,
        check=False,
    )
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout)


def renamed(doc: object, renames: dict[str, str]) -> object:
    """``doc`` with its keys renamed."""
    if isinstance(doc, dict):
        return {renames.get(k, k): renamed(v, renames) for k, v in doc.items()}
    if isinstance(doc, list):
        return [renamed(v, renames) for v in doc]
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="the reference checkout")
    parser.add_argument("--renames", default="{}", help="JSON object: old key → new key")
    args = parser.parse_args()
    renames = json.loads(args.renames)
    differ = same = unreadable = 0
    for path in inputs(HERE):
        before = summary(args.reference.resolve(), path)
        if before is None:
            unreadable += 1
            continue
        after = summary(HERE, path)
        if renamed(before, renames) == after:
            same += 1
        else:
            differ += 1
            print(f"differs: {path}")
    print(f"{same} identical, {differ} different, {unreadable} unreadable by the reference")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
