"""The bundled samples are reproducible, small, and drift exactly where their layout says."""

import json
from pathlib import Path

import pytest

from cacheviz import cli
from cacheviz.teach.samples import SAMPLES, render_sample

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample_sessions"

# (calls that drift, cause, part) implied by each layout in cacheviz/teach/samples.py
EXPECTED = {
    "append_only": (set(), None, None),
    # the clock line is rewritten before every call
    "timestamp_in_system": (set(range(1, 8)), "volatile_value", "system"),
    # every call after the first sends the tools in a new order
    "shuffled_tools": (set(range(1, 8)), "reorder", "tools"),
    # balance and request counter change on every call
    "dynamic_profile": (set(range(1, 8)), "volatile_value", "system"),
    # 2k+1 messages at call k; the 7-message window is exceeded from call 4 on
    "sliding_window": (set(range(4, 12)), "truncated_front", "messages"),
    # the single flattened user message grows inside itself on every call
    "text_format": (set(range(1, 10)), "content_edited", "messages"),
    # turns of 3, 2, 3, 2 steps: the first step of turns 2-4 (calls 3, 5, 8) strips the details
    "environment_details": ({3, 5, 8}, "env_details_stripped", "messages"),
    # the memory block is re-read before every call
    "unpinned_memory": (set(range(1, 8)), "content_edited", "system"),
    # compaction before call 8: the summary starts a new thread (no drift; its tools and
    # system are still the namespace's common prefix)
    "compaction": (set(), None, None),
    # side calls and the sub-agent are separate threads; each is append-only
    "side_calls": (set(), None, None),
    # append-only with reported usage; the pause before call 8 is a miss, not a drift
    "reported_usage": (set(), None, None),
}


def test_every_sample_is_covered():
    assert set(EXPECTED) == set(SAMPLES)
    assert {p.stem for p in SAMPLE_DIR.glob("*.jsonl")} == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_bundled_samples_regenerate_byte_identically(name):
    path = SAMPLE_DIR / f"{name}.jsonl"
    assert path.read_bytes() == render_sample(name).encode("utf-8")
    assert path.stat().st_size < 300_000


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_summary_json_reports_exactly_the_drifts_of_the_layout(name, capsys):
    assert cli.main(["summary", str(SAMPLE_DIR / f"{name}.jsonl"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    drifting = {c["call"] for c in doc["calls"] if c["drift"] is not None}
    calls, cause, part = EXPECTED[name]
    assert drifting == calls
    for call in doc["calls"]:
        if call["drift"] is not None:
            assert (call["drift"]["cause"], call["drift"]["part"]) == (cause, part)


def test_the_usage_sample_has_a_bill_and_one_ttl_miss():
    import cacheviz

    analysis = cacheviz.load(SAMPLE_DIR / "reported_usage.jsonl").analyze()
    assert analysis.calls["reported_input_tokens"].null_count() == 0
    assert analysis.billed_usd is not None and analysis.billed_usd > 0.05
    assert analysis.misses["call"].to_list() == [8]
    assert analysis.misses["cause"].to_list() == ["ttl_expired"]
    assert set(analysis.calls["thread"]) == {"main", "side call: title"}


def test_thread_names_say_what_each_thread_is():
    import cacheviz

    side = cacheviz.load(SAMPLE_DIR / "side_calls.jsonl").analyze().calls
    tree = dict(side.select("thread", "parent_thread").unique().iter_rows())
    assert tree == {
        "main": None,
        "side call: title": "main",
        "side call: quota probe": "main",
        "sub-agent explore": "main",
    }
    compaction = cacheviz.load(SAMPLE_DIR / "compaction.jsonl").analyze().calls
    assert compaction["thread"].unique(maintain_order=True).to_list() == ["main", "main #2"]
