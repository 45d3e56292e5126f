"""The diagnosis on the real transcripts (skips without ../shared/realdata).

Expectations come from the transcripts' own reported usage (computed here with plain
``json``), not from cacheviz's output.
"""

import json
import warnings

import polars as pl
import pytest

import cacheviz
from cacheviz import _schema


def _all(root):
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != "README.md" and not path.name.endswith(".meta.json"):
            yield path  # a Claude Code sub-agent's .meta.json is a description, no transcript


def test_every_real_transcript_is_diagnosed(realdata):
    for path in _all(realdata):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysis = cacheviz.load(path).analyze()
        calls = analysis.calls
        assert calls.height, path
        # every drift is judged within a thread, every miss has a cause of the closed set
        assert set(analysis.drifts["thread"]) <= set(calls["thread"])
        assert set(analysis.misses["cause"]) <= set(_schema.MISS_CAUSES)
        # the line never exceeds the request
        assert (calls["prefix_tokens"] <= calls["input_tokens"]).all()
        billed = calls["billed_usd"].drop_nulls()
        assert (billed >= 0).all()
        if billed.len():
            assert analysis.billed_usd == pytest.approx(billed.sum())


def test_the_codex_rollout_reports_a_miss_where_the_cache_was_not_served(realdata):
    (path,) = (realdata / "codex_rollout").glob("*.jsonl")
    reads = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        payload = record.get("payload") or {}
        info = payload.get("info") if isinstance(payload, dict) else None
        if payload.get("type") == "token_count" and info:
            usage = info["last_token_usage"]
            reads.append((usage["input_tokens"], usage["cached_input_tokens"]))
    analysis = cacheviz.load(path).analyze()
    misses = analysis.misses
    assert 3 in misses["call"].to_list()
    miss = misses.filter(misses["call"] == 3).row(0, named=True)
    # call 3 re-sent call 2's whole prompt (more than 16k tokens) seconds later and the
    # provider reported 2,048 cached tokens
    assert miss["reported_cache_read_tokens"] == 2048 == reads[3][1]
    assert miss["expected_read_tokens"] > 16_000
    assert miss["cause"] == "provider_side" and miss["cost_usd"] > 0
    assert analysis.simulate("openai").calls["verdict"][3] == "unexplained_miss"


def test_side_calls_of_a_claude_trace_capture_are_threads_of_their_own(realdata):
    path = realdata / "anthropic_raw" / "badlogic__lemmy__test-traffic.first10.jsonl"
    calls = cacheviz.load(path).analyze().calls
    main = calls.filter(calls["model"].str.contains("sonnet"))
    assert main["thread"].n_unique() == 1 and not main["drift"].any()
    side = calls.filter(calls["model"].str.contains("haiku"))
    assert set(side["thread"]).isdisjoint(set(main["thread"]))


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-5"),
        ("deepseek", "deepseek-chat"),
        ("google", "gemini-2.5-pro"),
    ],
)
def test_the_ideal_is_a_lower_bound_on_every_real_transcript(realdata, provider, model):
    # round 1's ideal (the line alone) was above the cost under DeepSeek (0.91x) and
    # Gemini (0.8x) on a real session: an ideal must be a true lower bound
    priced_rows = 0
    for path in _all(realdata):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sim = cacheviz.load(path).analyze().simulate(provider, model)
        calls = sim.calls
        # polars' all() skips nulls: compare where both are priced, and count them
        priced = calls.filter(pl.col("cost_usd").is_not_null())
        assert priced["ideal_usd"].null_count() == 0, path.name
        assert (priced["ideal_usd"] <= priced["cost_usd"] + 1e-12).all(), path.name
        priced_rows += priced.height
    assert priced_rows > 0  # the bound was checked on something
