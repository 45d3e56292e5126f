"""Gemini caching rules, one test per rule, on hand-built requests (providers.md §4, §7)."""

import hashlib
from array import array

import pytest

from cacheviz.providers._base import SimCall
from cacheviz.providers.google import GeminiSimulator, explicit_supported, min_tokens_for

HOUR = 3600.0

# Blocks with explicit token arrays; token values are disjoint unless a test shares them.
TOKENS = {
    "T": array("i", range(0, 1000)),  # tool definitions
    "S": array("i", range(10_000, 12_000)),  # system instruction
    "S2": array("i", range(20_000, 22_000)),  # another system instruction
    "SMALL": array("i", range(30_000, 31_000)),  # a short system instruction
    "U1": array("i", range(40_000, 40_500)),
    "U2": array("i", range(50_000, 50_200)),
    "U3": array("i", range(60_000, 60_300)),
    # U1b shares U1's first 123 tokens
    "U1b": array("i", [*range(40_000, 40_123), *range(70_000, 70_400)]),
    "Q": array("i", range(80_000, 81_500)),  # a short prompt on its own
}
PARTS = {"T": "tools", "S": "system", "S2": "system", "SMALL": "system"}


def _call(index, names, *, clock=0.0, model="gemini-2.5-pro"):
    """A request of the named blocks at ``clock`` seconds."""
    offsets = [0]
    for n in names:
        offsets.append(offsets[-1] + len(TOKENS[n]))
    chain, state = [], b""
    for n in names:
        state = hashlib.sha1(state + n.encode()).digest()
        chain.append(state)
    parts = [PARTS.get(n, "messages") for n in names]
    return SimCall(
        index=index,
        thread="main",
        ts=None,
        model=model,
        hashes=list(names),
        chain=chain,
        offsets=offsets,
        parts=parts,
        roles=[None if p != "messages" else "user" for p in parts],
        tokens=TOKENS.__getitem__,
        breakpoints=[],
        auto_breakpoint=None,
        params={},
        output_tokens=None,
        reported=None,
        clock=clock,
    )


def _run(calls, **rules):
    return GeminiSimulator(**rules).run(calls)


def _hits(results):
    return [r.cache_read_tokens for r in results]


def test_minimum_table_by_date():
    assert min_tokens_for("gemini-2.5-pro") == 2048  # 2026-10-13 row (the default)
    assert min_tokens_for("gemini-2.5-flash-lite") == 2048  # Flash-Lite taken as Flash
    assert min_tokens_for("gemini-2.5-pro", "2026-03-01") == 4096  # early-2026 row
    assert min_tokens_for("gemini-2.5-flash", "2025-10-01") == 1024  # Sept 2025 row
    assert min_tokens_for("gemini-3.6-flash") == 4096
    assert min_tokens_for("gemini-3.5-flash") == 4096  # from the 2026-07-07 row
    assert min_tokens_for("models/gemini-3-flash-preview") == 1024  # from early 2026
    assert min_tokens_for("some-new-model") == 4096


def test_implicit_minimum_not_reached_no_hit():
    flash = "gemini-2.5-flash"
    calls = [_call(0, ["Q"], model=flash), _call(1, ["Q"], clock=10, model=flash)]
    results = _run(calls)
    assert _hits(results) == [0, 0]  # 1,500 tokens < 2,048
    assert "below the 2048-token minimum" in results[1].detail
    assert _hits(_run(calls, min_tokens=1024)) == [0, 1500]  # the same prompt, re-sent


def test_implicit_hit_is_the_token_exact_common_prefix():
    results = _run([_call(0, ["S", "U1"]), _call(1, ["S", "U1b"], clock=30)])
    # 2,000 system tokens plus 123 shared tokens inside the first message: not rounded
    assert _hits(results) == [0, 2123]
    assert [r.cache_write_tokens for r in results] == [0, 0]
    assert results[1].uncached_tokens == 400


def test_implicit_entries_belong_to_one_model():
    calls = [_call(0, ["S", "U1"]), _call(1, ["S", "U1", "U2"], clock=30, model="gemini-3.1-pro")]
    assert _hits(_run(calls)) == [0, 0]


def test_implicit_ttl_expiry_and_refresh_on_use():
    calls = [
        _call(0, ["S", "U1"]),
        _call(1, ["S", "U1", "U2"], clock=200),  # hit; S+U1 now lives until 500
        _call(2, ["S", "U1", "U3"], clock=450),  # alive thanks to the refresh
        _call(3, ["S", "U1", "U3", "U2"], clock=751),  # idle for 301 s: expired
    ]
    assert _hits(_run(calls)) == [0, 2500, 2500, 0]
    gap = [_call(0, ["S", "U1"]), _call(1, ["S", "U1", "U2"], clock=301)]
    assert _hits(_run(gap)) == [0, 0]
    assert _hits(_run(gap, implicit_ttl_seconds=600)) == [0, 2500]


def test_explicit_creation_reads_and_storage_token_hours():
    calls = [
        _call(0, ["T", "S", "U1"]),
        _call(1, ["T", "S", "U1", "U2"], clock=600),
        _call(2, ["T", "S", "U3"], clock=HOUR),  # the object expired at 1 h: a new one
    ]
    results = _run(calls, mode="explicit")
    # the object holds tools + system: 3,000 tokens, created at input rate, stored 1 h
    assert [r.cache_write_tokens for r in results] == [3000, 0, 3000]
    assert _hits(results) == [0, 3000, 0]
    assert [r.extra.get("storage_token_hours", 0) for r in results] == [3000, 0, 3000]
    assert results[1].uncached_tokens == 700
    two_hours = _run(calls, mode="explicit", explicit_ttl_seconds=2 * HOUR)
    assert _hits(two_hours) == [0, 3000, 3000]
    assert [r.extra.get("storage_token_hours", 0) for r in two_hours] == [6000, 0, 0]


def test_explicit_extend_prorates_storage():
    calls = [
        _call(0, ["T", "S", "U1"]),
        _call(1, ["T", "S", "U2"], clock=1800),  # expiry 3600 → 5400: +0.5 h
        _call(2, ["T", "S", "U3"], clock=5000),  # expiry 5400 → 8600: +3200 s
    ]
    results = _run(calls, mode="explicit", explicit_extend=True)
    assert _hits(results) == [0, 3000, 3000]
    hours = [r.extra["storage_token_hours"] for r in results]
    assert hours == pytest.approx([3000, 1500, 3000 * 3200 / 3600])


def test_explicit_first_call_holds_the_whole_first_prompt():
    calls = [_call(0, ["T", "S", "U1"]), _call(1, ["T", "S", "U1", "U2"], clock=60)]
    results = _run(calls, mode="explicit", explicit_prefix="first_call")
    assert [r.cache_write_tokens for r in results] == [3500, 0]
    assert _hits(results) == [0, 3500]
    assert results[0].extra == {"storage_token_hours": 3500}


def test_explicit_a_new_prefix_gets_its_own_object():
    calls = [
        _call(0, ["T", "S", "U1"]),
        _call(1, ["T", "S2", "U1"], clock=60),  # another system: a second object
        _call(2, ["T", "S", "U2"], clock=120),  # the first object is still live
    ]
    results = _run(calls, mode="explicit")
    assert [r.cache_write_tokens for r in results] == [3000, 3000, 0]
    assert _hits(results) == [0, 0, 3000]


def test_explicit_object_below_the_minimum_is_not_created():
    calls = [_call(0, ["SMALL", "U1", "U2"]), _call(1, ["SMALL", "U1", "U2", "U3"], clock=60)]
    results = _run(calls, mode="explicit")
    assert [(r.cache_write_tokens, r.cache_read_tokens) for r in results] == [(0, 0), (0, 0)]
    assert "system prefix 1000 below the 2048-token minimum" in results[0].detail


def test_explicit_not_supported_on_gemini_4():
    assert explicit_supported("gemini-2.5-flash")
    assert not explicit_supported("gemini-4-argon")
    calls = [_call(0, ["T", "S", "U1"], model="gemini-4-argon")]
    (result,) = _run(calls, mode="explicit")
    assert (result.cache_write_tokens, result.extra) == (0, {})
    assert "not supported" in result.detail


def test_unknown_settings_are_refused():
    with pytest.raises(ValueError, match="mode="):
        GeminiSimulator(mode="context")
    with pytest.raises(ValueError, match="explicit_prefix="):
        GeminiSimulator(explicit_prefix="tools")
