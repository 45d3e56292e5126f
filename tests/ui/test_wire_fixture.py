"""The JS tests' wire fixture is what the Python side writes now.

``widgets/test/fixtures/python-report.json`` is the report data of a bundled sample; the
vitest tests decode it and check it against what the front end reads, so a change of the
wire format shows up there only while the file is fresh. This regenerates it in memory
(nothing is written) and compares it with the committed file, like the freshness check of
the built bundles in the Makefile's ``test-js``.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import runpy
import tomllib
from collections import defaultdict
from importlib.metadata import distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "widgets" / "test" / "fixtures"
GENERATOR = FIXTURES / "make_python_fixture.py"
FIXTURE = FIXTURES / "python-report.json"


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _off_lock() -> list[str]:
    """Installed distributions at another version than uv.lock's (``make test-latest``)."""
    locked: dict[str, set[str]] = defaultdict(set)
    for package in tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))["package"]:
        if "version" in package:
            locked[_name(package["name"])].add(package["version"])
    off = []
    for dist in distributions():
        name = _name(dist.metadata["Name"])
        if name != "cacheviz" and name in locked and dist.version not in locked[name]:
            off.append(f"{name} {dist.version} (lock: {', '.join(sorted(locked[name]))})")
    return sorted(off)


def _split(text: str) -> tuple[str, bytes]:
    """The text without its gzip member, and the member inflated."""
    member = json.loads(text)["details_gz"]
    return text.replace(member, ""), gzip.decompress(base64.b64decode(member))


def _first_difference(fresh: str, committed: str) -> str:
    pairs = zip(fresh.splitlines(), committed.splitlines(), strict=False)
    for number, (new, old) in enumerate(pairs, 1):
        if new != old:
            return f"line {number}: {old.strip()[:40]}"
    return "length"


def test_the_committed_wire_fixture_is_what_the_python_side_writes() -> None:
    off = _off_lock()
    if off:
        pytest.skip(f"the fixture is written in the locked environment; here: {'; '.join(off[:3])}")
    # run_path compiles the script without writing __pycache__ next to it
    generator = runpy.run_path(str(GENERATOR), run_name="make_python_fixture")
    fresh = generator["fixture_text"]()
    committed = FIXTURE.read_bytes().decode("utf-8")
    if fresh == committed:
        return
    # another zlib build may deflate the same details to other bytes: compare them inflated
    if _split(fresh) == _split(committed):
        return
    pytest.fail(
        f"{FIXTURE.relative_to(ROOT).as_posix()} is stale ({_first_difference(fresh, committed)}):"
        f" run `{generator['COMMAND']}` from the repository root and commit it",
        pytrace=False,
    )
