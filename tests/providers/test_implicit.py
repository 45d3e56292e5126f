"""Automatic prefix caching with no write fee (Moonshot, xAI, Qwen's implicit cache; providers.md §7)."""

import hashlib
from array import array

import pytest

from cacheviz import providers
from cacheviz.providers._base import SimCall
from cacheviz.providers.moonshot import MoonshotSimulator
from cacheviz.providers.qwen import QwenSimulator
from cacheviz.providers.xai import XAISimulator

TOKENS = {
    "S": array("i", range(0, 1000)),  # a system prompt of 1,000 tokens
    "U1": array("i", range(10_000, 10_300)),
    "U2": array("i", range(20_000, 20_200)),
    "Q": array("i", range(30_000, 30_100)),  # a short prompt on its own
    "L": array("i", range(40_000, 42_000)),  # a system prompt of 2,000 tokens
}


def _call(index, names, *, clock=0.0, model="m"):
    offsets = [0]
    for n in names:
        offsets.append(offsets[-1] + len(TOKENS[n]))
    chain, state = [], b""
    for n in names:
        state = hashlib.sha1(state + n.encode()).digest()
        chain.append(state)
    return SimCall(
        index=index,
        thread="main",
        ts=None,
        model=model,
        hashes=list(names),
        chain=chain,
        offsets=offsets,
        parts=["system" if n in ("S", "L") else "messages" for n in names],
        roles=[None if n in ("S", "L") else "user" for n in names],
        tokens=TOKENS.__getitem__,
        breakpoints=[],
        auto_breakpoint=None,
        params={},
        output_tokens=None,
        reported=None,
        clock=clock,
    )


def test_moonshot_reads_the_live_common_prefix_in_256_token_chunks():
    first, second = _call(0, ["S", "U1"]), _call(1, ["S", "U1", "U2"], clock=10)
    results = MoonshotSimulator().run([first, second])
    assert results[0].cache_read_tokens == 0
    assert results[1].cache_read_tokens == 1280  # S + U1: 1,300 shared, in 256-token chunks
    assert results[1].cache_write_tokens == 0  # no write fee
    assert "1300 tokens shared" in results[1].detail
    exact = MoonshotSimulator(unit_tokens=1).run([first, second])
    assert exact[1].cache_read_tokens == 1300


def test_an_entry_expires_after_its_ttl_and_models_do_not_share():
    first = _call(0, ["S", "U1"])
    late = _call(1, ["S", "U2"], clock=301)
    assert MoonshotSimulator().run([first, late])[1].cache_read_tokens == 0
    other = _call(1, ["S", "U2"], clock=10, model="other")
    assert MoonshotSimulator().run([first, other])[1].cache_read_tokens == 0
    assert MoonshotSimulator(ttl_seconds=400).run([first, late])[1].cache_read_tokens == 768


def test_xai_reads_the_live_common_prefix_in_128_token_blocks_with_no_minimum():
    first, second = _call(0, ["S", "U1"]), _call(1, ["S", "U2"], clock=10)
    results = XAISimulator().run([first, second])
    assert results[0].cache_read_tokens == 0
    assert results[1].cache_read_tokens == 896  # 1,000 shared: 7 blocks of 128 (Moonshot: 768)
    assert MoonshotSimulator().run([first, second])[1].cache_read_tokens == 768
    assert [r.cache_write_tokens for r in results] == [0, 0]  # no write fee
    assert [r.input_tokens for r in results] == [first.total, second.total]
    assert "in 128-token units" in results[1].detail
    # no documented minimum: a 300-token prompt sent again reads its whole blocks
    short = XAISimulator().run([_call(0, ["U1"]), _call(1, ["U1"], clock=5)])
    assert short[1].cache_read_tokens == 256 and "minimum" not in short[1].detail


def test_xais_cache_lives_five_minutes_after_last_use_per_model():
    first = _call(0, ["S", "U1"])
    assert XAISimulator().run([first, _call(1, ["S"], clock=299)])[1].cache_read_tokens == 896
    assert XAISimulator().run([first, _call(1, ["S"], clock=301)])[1].cache_read_tokens == 0
    # a hit re-sends the prompt: it lives 5 minutes from then
    chain = [first, _call(1, ["S", "U1"], clock=200), _call(2, ["S"], clock=450)]
    assert XAISimulator().run(chain)[2].cache_read_tokens == 896
    other = _call(1, ["S", "U1"], clock=10, model="grok-4.6")
    assert XAISimulator().run([first, other])[1].cache_read_tokens == 0
    assert (
        XAISimulator(ttl_seconds=400).run([first, _call(1, ["S"], clock=350)])[1].cache_read_tokens
        == 896
    )


def test_qwen_implicit_is_token_exact_above_its_minimum():
    implicit = QwenSimulator(mode="implicit")
    results = implicit.run([_call(0, ["S", "U1"]), _call(1, ["S", "U2"], clock=5)])
    assert results[1].cache_read_tokens == 1000 and results[1].cache_write_tokens == 0
    short = implicit.run([_call(0, ["Q"]), _call(1, ["Q"], clock=5)])
    assert short[1].cache_read_tokens == 0 and "below the 256-token minimum" in short[1].detail


def test_qwen_explicit_writes_at_qwen_codes_markers_and_reads_them_back():
    # Qwen Code marks the system message and the latest message of every request
    calls = [
        _call(0, ["L", "U1"]),  # writes L (2,000) and L + U1 (2,300): nothing to read yet
        _call(1, ["L", "U1", "U2"], clock=10),  # reads 2,300, writes the 200 after it
        _call(2, ["L", "U2"], clock=20),  # U1 gone: reads the system marker's entry
        _call(3, ["L", "U2"], clock=400),  # 380 s idle: every entry expired (5 min)
    ]
    results = QwenSimulator().run(calls)
    got = [(r.cache_read_tokens, r.cache_write_tokens) for r in results]
    assert got == [(0, 2300), (2300, 200), (2000, 200), (0, 2200)]
    assert [r.input_tokens for r in results] == [c.total for c in calls]
    assert "read the entry call #0 wrote" in results[2].detail


def test_qwen_explicit_writes_nothing_below_1024_tokens_and_looks_back_20_blocks():
    tiny = QwenSimulator().run([_call(0, ["S"]), _call(1, ["S"], clock=5)])  # 1,000 tokens
    assert [r.cache_write_tokens for r in tiny] == [0, 0]
    assert "below the 1024-token minimum" in tiny[1].detail
    first = _call(0, ["L", "U1"])
    far = _call(1, ["L", "U1", *["Q"] * 20], clock=5)  # the end marker is 20 blocks on
    assert QwenSimulator().run([first, far])[1].cache_read_tokens == 2000  # the system's
    assert QwenSimulator(lookback=21).run([first, far])[1].cache_read_tokens == 2300


def test_bad_rules_are_one_line():
    with pytest.raises(ValueError, match="unit_tokens=0") as err:
        MoonshotSimulator(unit_tokens=0)
    assert "\n" not in str(err.value)


def test_the_profiles_name_their_providers_and_stay_out_of_the_default_comparison():
    assert providers.profile("moonshot").id == providers.profile("kimi").id == "moonshotai"
    assert providers.profile("dashscope").id == "qwen"
    assert providers.profile("x-ai").id == providers.profile("Grok").id == "xai"
    assert providers.simulator_class("xai") is XAISimulator
    targets = providers.reference_targets()
    assert not [t for t in targets if t.startswith(("moonshotai:", "qwen:", "xai:"))]
    assert {"moonshotai", "qwen", "xai"} <= set(providers.priced())
