"""On real captures the main conversation is the root of the thread tree, named ``main``."""

import warnings

import pytest

import cacheviz
from cacheviz.errors import CacheVizWarning

pytestmark = pytest.mark.realdata


def test_raw_claude_code_capture_with_haiku_side_calls(realdata):
    # a claude-trace capture: Haiku side calls come before the Sonnet conversation
    (path,) = (realdata / "anthropic_raw").glob("*.jsonl")
    calls = cacheviz.load(path).analyze().calls
    tree = dict(calls.select("thread", "parent_thread").unique().iter_rows())
    assert tree["main"] is None
    assert set(calls.filter(calls["thread"] == "main")["model"]) == {"claude-sonnet-4-20250514"}
    others = set(tree) - {"main"}
    assert others and all(tree[name] == "main" for name in others)
    # each side call says what it is for, from its words (issue 33, item 7)
    assert others == {
        "side call: title",
        "side call: quota probe",
        "side call: status word",
        "side call: status word #2",
    }


def test_every_real_transcript_has_one_root_named_for_what_it_is(realdata):
    for path in sorted(realdata.rglob("*.jsonl")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheVizWarning)
            try:
                calls = cacheviz.load(path).analyze().calls
            except cacheviz.errors.CacheVizError:
                continue  # not a transcript on its own (a sub-agent file read with its session)
        roots = calls.filter(calls["parent_thread"].is_null())["thread"].unique().to_list()
        assert "main" in roots or len(roots) == 1, (path.name, roots)
