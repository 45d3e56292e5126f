"""Load + analyze time per transcript format, on the real files and on ~2 MB copies.

    python bench/bench_formats.py [REALDATA]    # default ../shared/realdata
    python bench/bench_formats.py --root /work/ref-main   # time another checkout

For the JSONL formats, a ~2 MB transcript is made by repeating the real one with fresh
ids (so nothing is deduplicated away). Times are the best of 3 in this process. Files
that are not transcripts (a sub-agent's ``.meta.json``) are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = 2_000_000


def _fresh_ids(record: object, copy: int) -> object:
    if isinstance(record, dict):
        out = {}
        for key, value in record.items():
            if key in ("uuid", "parentUuid", "id", "requestId", "instance_id") and isinstance(
                value, str
            ):
                out[key] = f"{value}-{copy}"
            else:
                out[key] = _fresh_ids(value, copy)
        return out
    if isinstance(record, list):
        return [_fresh_ids(v, copy) for v in record]
    return record


def scaled(path: Path, folder: Path) -> Path | None:
    """A ~2 MB copy of a JSONL transcript (None for other kinds of files)."""
    if path.suffix != ".jsonl":
        return None
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    copies = max(1, TARGET // path.stat().st_size + 1)
    out = folder / path.name
    with out.open("w") as handle:
        for copy in range(copies):
            for record in lines:
                handle.write(json.dumps(_fresh_ids(record, copy)) + "\n")
    return out


def timed(path: Path) -> tuple[str, int, float]:
    import cacheviz

    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        session = cacheviz.load(path)
        session.analyze()
        best = min(best, time.perf_counter() - start)
    return session.format, len(session.calls), best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "realdata", type=Path, nargs="?", default=HERE.parent.parent / "shared" / "realdata"
    )
    parser.add_argument("--root", type=Path, default=HERE.parent, help="the checkout to time")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    from cacheviz.request._tokens import get_encoding

    root = args.realdata
    get_encoding("o200k_base")
    get_encoding("cl100k_base")
    paths = sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and p.name != "README.md"
        and not p.name.endswith(".meta.json")
        and p.parent.name != "cline_task"
    )
    paths.append(root / "cline_task")
    print(
        f"{'format':<13} {'file MB':>8} {'calls':>6} {'load+analyze':>13}   {'~2 MB copy':>10} {'calls':>6} {'time':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            size = sum(f.stat().st_size for f in (path.iterdir() if path.is_dir() else [path]))
            fmt, calls, seconds = timed(path)
            big = scaled(path, Path(tmp)) if path.is_file() else None
            tail = ""
            if big is not None:
                _, big_calls, big_seconds = timed(big)
                tail = f"{big.stat().st_size / 1e6:>8.2f} MB {big_calls:>6} {big_seconds:>6.3f}s"
            print(f"{fmt:<13} {size / 1e6:>8.2f} {calls:>6} {seconds:>12.3f}s   {tail}")


if __name__ == "__main__":
    main()
