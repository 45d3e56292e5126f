"""Compare the HTML report's data of two checkouts on the samples and ../shared/realdata.

The report's speed-ups (each distinct block redacted once, the content browser built
from the rows it lists) must not change what it shows. This computes
``cacheviz.ui.report.report_data`` (tables decoded, details inflated) of every input in
a process per checkout and compares them::

    git worktree add /tmp/ref main      # the reference, before the change
    python bench/same_reports.py /tmp/ref

Exit status 1 lists every file whose report data differs, with the first differing key.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "bench"))

from same_summaries import inputs  # noqa: E402

CHILD = r"""
import base64, gzip, json, sys, warnings
import polars as pl
import cacheviz
try:
    from cacheviz.ui.report import report_data
except ImportError:  # a checkout from before the ui/ folder
    from cacheviz.report import report_data
warnings.simplefilter("ignore")
docs = {}
for path in sys.argv[2:]:
    try:
        data = report_data(cacheviz.load(path).analyze())
    except Exception as exc:
        docs[path] = None
        continue
    doc = {"meta": data["meta"], "selected_call": data["selected_call"]}
    doc["details"] = json.loads(gzip.decompress(base64.b64decode(data["details_gz"])))
    for name in ("timeline", "shape", "costs"):
        doc[name] = pl.read_ipc_stream(base64.b64decode(data[name])).to_dicts()
    docs[path] = doc
with open(sys.argv[1], "w") as out:
    json.dump(docs, out, default=str)
"""


def report_docs(checkout: Path, paths: list[Path]) -> dict[str, object]:
    """``{path: report data}`` as ``checkout`` computes it (None where it fails)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "docs.json"
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        subprocess.run(
            [sys.executable, "-c", CHILD, str(out), *map(str, paths)],
            env=env,
            cwd=checkout,
            check=True,
        )
        return json.loads(out.read_text())


def first_difference(a: object, b: object, where: str = "") -> str | None:
    """The path of the first value that differs between ``a`` and ``b`` (None: equal)."""
    if type(a) is not type(b):
        return where or "."
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where} (keys)"
        for key in a:
            found = first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if a == b else where


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="the reference checkout")
    args = parser.parse_args()
    paths = inputs(HERE)
    before = report_docs(args.reference.resolve(), paths)
    after = report_docs(HERE, paths)
    same = differ = unreadable = 0
    for path in map(str, paths):
        if before[path] is None:
            unreadable += 1
            continue
        where = first_difference(before[path], after[path])
        if where is None:
            same += 1
        else:
            differ += 1
            print(f"differs: {path} at {where}")
    print(f"{same} identical, {differ} different, {unreadable} unreadable by the reference")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
