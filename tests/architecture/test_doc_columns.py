"""The column lists of README.md and docs/analysis.md name the frames' real columns.

Columns are renamed in ``_schema.py``; a list in the docs that still named the old ones
(``drifts.token_offset``, ``misses.tokens``) would send a reader to a column that is gone.
"""

from __future__ import annotations

import re

import pytest
from import_graph import PACKAGE

from cacheviz import _schema

ROOT = PACKAGE.parent
FRAMES = {"segments": _schema.SEGMENTS, "drifts": _schema.DRIFTS, "misses": _schema.MISSES}
# values of the segments' stability and status columns, named in the same bullet
VALUES = {"immutable", "dynamic", "same", "changed", "invalidated", "new"}


def _bullet(frame: str) -> str:
    """The bullet of docs/analysis.md's frame list that describes ``frame``."""
    text = (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
    found = re.search(rf"^- `{frame}`.*?(?=^- |^\n|^#)", text, re.MULTILINE | re.DOTALL)
    assert found, frame
    return found[0]


@pytest.mark.parametrize("frame", sorted(FRAMES))
def test_the_analysis_doc_lists_every_column_and_no_other(frame):
    named = set(re.findall(r"`([a-z_0-9]+)`", _bullet(frame))) - {frame} - VALUES
    assert named == set(FRAMES[frame])


@pytest.mark.parametrize("frame", sorted(FRAMES))
def test_the_readme_names_only_real_columns(frame):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    line = re.search(rf"^analysis\.{frame} +# one row per [^:]*: (.*)$", text, re.MULTILINE)
    assert line, frame
    assert set(re.split(r",\s*", line[1])) <= set(FRAMES[frame])
