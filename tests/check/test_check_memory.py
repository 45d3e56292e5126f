"""``check`` keeps the call rows it reads only (issue 19's memory budget)."""

import ast
from pathlib import Path

import cacheviz
from cacheviz import _schema
from cacheviz.check._context import CALL_COLUMNS, Context

CHECK = Path(cacheviz.__file__).parent / "check"
SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def test_every_calls_column_a_rule_names_is_in_the_rows():
    """A rule reading ``row.get("x")`` of a column left out would see None, silently."""
    named = {
        (node.value, path.name)
        for path in CHECK.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in _schema.CALLS
    }
    assert named  # the rules do read call columns
    assert sorted(n for n in named if n[0] not in CALL_COLUMNS) == []


def test_the_rows_are_the_calls_frame_restricted_to_those_columns():
    analysis = cacheviz.load(SAMPLES / "compaction.jsonl").analyze()
    rows = Context(analysis).calls
    full = analysis.calls.to_dicts()
    assert rows == [{k: row[k] for k in CALL_COLUMNS} for row in full]
    assert set(CALL_COLUMNS) <= set(_schema.CALLS)
