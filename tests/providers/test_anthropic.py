"""Anthropic caching rules, one test per rule, on hand-built requests (providers.md §1, §7)."""

import hashlib
from array import array

import pytest

from cacheviz.providers._base import Breakpoint, SimCall
from cacheviz.providers.anthropic import AnthropicSimulator, min_tokens_for

MINUTE = 60.0


def _call(
    index,
    sizes,
    breakpoints,
    *,
    clock=0.0,
    model="claude-sonnet-4-5",
    names=None,
    parts=None,
    reconstructed=False,
    auto=None,
    params=None,
):
    """A request of blocks with the given token sizes; block i is named names[i] (default b<i>)."""
    names = names or [f"b{i}" for i in range(len(sizes))]
    tokens = {n: array("i", [hash(n) % 1000] * s) for n, s in zip(names, sizes, strict=True)}
    offsets = [0]
    for s in sizes:
        offsets.append(offsets[-1] + s)
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
        parts=parts or ["messages"] * len(sizes),
        roles=[None] * len(sizes),
        tokens=tokens.__getitem__,
        breakpoints=[Breakpoint(b, ttl) for b, ttl in breakpoints],
        auto_breakpoint=auto,
        params=params or {},
        output_tokens=None,
        reported=None,
        reconstructed=reconstructed,
        clock=clock,
    )


def _run(calls, **rules):
    return AnthropicSimulator(**rules).run(calls)


def test_minimum_not_reached_caches_nothing():
    (first, second) = _run(
        [_call(0, [500, 400], [(1, 300)]), _call(1, [500, 400, 50], [(2, 300)], clock=10)]
    )
    assert (first.cache_write_tokens, second.cache_read_tokens, second.cache_write_tokens) == (
        0,
        0,
        0,
    )
    assert "below the 1024-token minimum" in first.detail
    assert min_tokens_for("claude-haiku-4-5") == 4096


def test_write_at_the_breakpoint_then_read_it():
    first, second = _run(
        [_call(0, [1000, 500], [(1, 300)]), _call(1, [1000, 500, 200], [(2, 300)], clock=30)]
    )
    assert (first.cache_write_tokens, first.uncached_tokens) == (1500, 0)
    # the second request finds the entry written at block 1 (one step back from its breakpoint)
    assert (second.cache_read_tokens, second.cache_write_tokens, second.uncached_tokens) == (
        1500,
        200,
        0,
    )


def test_lookback_is_twenty_blocks():
    sizes = [100] * 40
    names = [f"m{i}" for i in range(40)]
    write_at_15 = _call(0, sizes[:16], [(15, 300)], names=names[:16])
    from_35 = _call(1, sizes[:36], [(35, 300)], names=names[:36], clock=5)
    from_34 = _call(1, sizes[:35], [(34, 300)], names=names[:35], clock=5)
    # the docs' example: an entry at block 15 is not found from a breakpoint at block 35 ...
    assert _run([write_at_15, from_35])[1].cache_read_tokens == 0
    # ... but is from block 34 (34, 33, ..., 15: twenty positions)
    assert _run([write_at_15, from_34])[1].cache_read_tokens == 1600


def test_only_entries_written_at_breakpoints_are_found():
    first = _call(0, [800, 800, 800], [(2, 300)])  # writes the prefix through block 2 only
    second = _call(1, [800, 800, 900], [(2, 300)], names=["b0", "b1", "other"], clock=5)
    assert _run([first, second])[1].cache_read_tokens == 0  # block 1's prefix was never written


def test_ttl_expires_after_an_idle_gap_and_survives_with_1h():
    calls = [_call(0, [1500], [(0, 300)]), _call(1, [1500, 100], [(1, 300)], clock=6 * MINUTE)]
    assert _run(calls)[1].cache_read_tokens == 0  # 5 minutes passed
    assert _run(calls, ttl="1h")[1].cache_read_tokens == 1500


def test_a_hit_refreshes_the_ttl_from_the_request_start():
    calls = [
        _call(0, [1500], [(0, 300)]),
        _call(1, [1500], [(0, 300)], clock=4 * MINUTE),  # hit, refreshed to 9 min
        _call(2, [1500], [(0, 300)], clock=8 * MINUTE),  # still alive thanks to the refresh
    ]
    assert [r.cache_read_tokens for r in _run(calls)] == [0, 1500, 1500]


def test_1h_writes_are_billed_separately_positions_a_b_c():
    # breakpoints: 1h after block 0, 5m after block 2
    (result,) = _run([_call(0, [2000, 500, 300, 50], [(0, 3600), (2, 300)])])
    assert (result.cache_read_tokens, result.cache_write_1h_tokens, result.cache_write_tokens) == (
        0,
        2000,
        2800,
    )
    assert result.uncached_tokens == 50


def test_strategies_and_recorded_fallback_for_rebuilt_requests():
    parts = ["tools", "tools", "system", "messages", "messages", "messages"]
    call = _call(0, [600, 600, 600, 100, 100, 100], [], parts=parts)
    simulator = AnthropicSimulator(breakpoints="auto")
    assert [b.block for b in simulator._breakpoints(call)[0]] == [1, 2, 4, 5]
    assert [b.block for b in AnthropicSimulator(breakpoints="kilocode")._breakpoints(call)[0]] == [
        2,
        4,
        5,
    ]
    assert AnthropicSimulator(breakpoints="none")._breakpoints(call)[0] == []
    rebuilt = _call(0, [600, 600, 600, 100, 100, 100], [], parts=parts, reconstructed=True)
    assert AnthropicSimulator()._breakpoints(rebuilt)[1] == "auto"


def test_top_level_automatic_caching_adds_the_last_block():
    call = _call(0, [1200, 100], [], auto=300)
    assert [b.block for b in AnthropicSimulator()._breakpoints(call)[0]] == [1]


def test_changing_tool_choice_invalidates_the_messages_level():
    first = _call(0, [1200, 100], [(1, 300)], params={"tool_choice": {"type": "auto"}})
    second = _call(1, [1200, 100, 10], [(2, 300)], params={"tool_choice": {"type": "any"}}, clock=5)
    assert _run([first, second])[1].cache_read_tokens == 0
    same = _call(1, [1200, 100, 10], [(2, 300)], params={"tool_choice": {"type": "auto"}}, clock=5)
    assert _run([first, same])[1].cache_read_tokens == 1300


@pytest.mark.parametrize(("rule", "value"), [("breakpoints", "every"), ("ttl", "2h")])
def test_bad_rules_are_clear(rule, value):
    with pytest.raises(ValueError, match=f"{rule}={value!r}; expected one of"):
        AnthropicSimulator(**{rule: value})


def test_an_entry_is_per_model():
    # a cache is per model (providers.md §7: entries are (scope, model, prefix, ...)):
    # the same bytes sent to another model read nothing
    from cacheviz.providers._base import Breakpoint, HandBuilt
    from cacheviz.providers.anthropic import AnthropicSimulator

    build = HandBuilt()
    shared = list(range(2000))
    point = [Breakpoint(0, 300)]
    calls = [
        build.call(0, [shared], model="claude-sonnet-4-5", breakpoints=point),
        build.call(1, [shared], model="claude-opus-4-1", breakpoints=point),
        build.call(2, [shared], model="claude-sonnet-4-5", breakpoints=point),
    ]
    reads = [r.cache_read_tokens for r in AnthropicSimulator().run(calls)]
    assert reads == [0, 0, 2000]
