"""DeepSeek caching rules, one test per rule, on hand-built requests (providers.md §3, §7)."""

import hashlib
from array import array
from datetime import UTC, datetime

import pytest

from cacheviz.providers._base import SimCall
from cacheviz.providers.deepseek import DeepSeekSimulator

HOUR = 3600.0

# Blocks with explicit token arrays; token values are disjoint unless a test shares them.
TOKENS = {
    "A": array("i", range(0, 100)),
    "B": array("i", range(1000, 1050)),
    "C": array("i", range(2000, 2060)),
    "D": array("i", range(3000, 3070)),
    "E": array("i", range(4000, 4040)),
    # B2 and B3 share B's first 30 tokens, then differ from B and from each other
    "B2": array("i", [*range(1000, 1030), *range(5000, 5020)]),
    "B3": array("i", [*range(1000, 1030), *range(6000, 6025)]),
    # C10 shares B's first 10 tokens; A27 shares A's first 27
    "C10": array("i", [*range(1000, 1010), *range(7000, 7040)]),
    "A27": array("i", [*range(0, 27), *range(8000, 8073)]),
    # X2 shares X's first 150 tokens
    "X": array("i", range(10000, 10200)),
    "X2": array("i", [*range(10000, 10150), *range(11000, 11050)]),
    # a conversation: system, user turn, the re-sent assistant reply, the next user turn
    "S": array("i", range(20000, 20100)),
    "U1": array("i", range(21000, 21020)),
    "R1": array("i", range(22000, 22030)),
    "U2": array("i", range(23000, 23010)),
}
ROLES = {"S": None, "U1": "user", "R1": "assistant", "U2": "user"}


def _call(index, names, *, clock=0.0, model="deepseek-v4-flash", output=None, timed=True):
    """A request of the named blocks at ``clock`` seconds (``timed=False``: no timestamp)."""
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
        ts=datetime.fromtimestamp(clock, UTC) if timed else None,
        model=model,
        hashes=list(names),
        chain=chain,
        offsets=offsets,
        parts=["system" if n == "S" else "messages" for n in names],
        roles=[ROLES.get(n, "user") for n in names],
        tokens=TOKENS.__getitem__,
        breakpoints=[],
        auto_breakpoint=None,
        params={},
        output_tokens=output,
        reported=None,
        clock=clock,
    )


def _run(calls, **rules):
    return DeepSeekSimulator(**rules).run(calls)


def _hits(results):
    return [r.cache_read_tokens for r in results]


def test_whole_prompt_is_a_unit_and_there_is_no_write_fee():
    results = _run([_call(0, ["A", "B"]), _call(1, ["A", "B", "C"], clock=60)])
    assert _hits(results) == [0, 150]
    assert [r.cache_write_tokens for r in results] == [0, 0]
    assert results[1].uncached_tokens == 60  # the miss
    assert "prompt unit of call #0" in results[1].detail


def test_common_prefix_unit_a_b_then_a_c_then_a_d():
    results = _run(
        [_call(0, ["A", "B"]), _call(1, ["A", "C"], clock=60), _call(2, ["A", "D"], clock=120)]
    )
    # A+C contains no complete unit (A+B is not its prefix): all miss; A is then persisted
    assert _hits(results) == [0, 0, 100]
    assert "common prefix 100 persisted" in results[1].detail
    assert "common-prefix unit of call #1" in results[2].detail


def test_partial_match_inside_a_unit_gives_nothing():
    results = _run(
        [_call(0, ["A", "B"]), _call(1, ["A", "B2"], clock=60), _call(2, ["A", "B3"], clock=120)]
    )
    # A+B2 shares 130 tokens with A+B, but no unit ends there: nothing hits (legacy: 128).
    # The shared 130 tokens, 30 of them inside a block, become a unit that A+B3 hits.
    assert _hits(results) == [0, 0, 130]
    legacy = _run([_call(0, ["A", "B"]), _call(1, ["A", "B2"], clock=60)], mode="legacy")
    assert _hits(legacy) == [0, 128]


def test_fixed_interval_units_inside_a_long_block():
    calls = [_call(0, ["X"]), _call(1, ["X2"], clock=60)]
    # X2 shares 150 tokens with X: with 64-token intervals, X's 128-token unit is a prefix
    assert _hits(_run(calls, interval_tokens=64)) == [0, 128]
    assert _hits(_run(calls)) == [0, 0]  # the default 4,096 interval leaves no unit inside


@pytest.mark.parametrize(
    ("output", "hit"),
    [
        (30, 150),  # the reply is re-sent as generated: prompt + output is a unit
        (20, 140),  # the unit ends inside the re-sent reply
        (33, 150),  # a few tokens over (tokenizer, end-of-turn): clipped to the reply
        (80, 120),  # reasoning not re-sent: prompt + output is not a prefix, the prompt is
        (None, 150),  # no reported count: the re-sent reply is taken as the output
    ],
)
def test_output_unit_reused_by_the_next_turn(output, hit):
    first = _call(0, ["S", "U1"], output=output)
    second = _call(1, ["S", "U1", "R1", "U2"], clock=60)
    results = _run([first, second])
    assert _hits(results) == [0, hit]
    assert ("prompt+output" in results[1].detail) == (hit != 120)


def test_output_unit_waits_for_the_turn_that_resends_it():
    calls = [
        _call(0, ["S", "U1"], output=30),
        _call(1, ["S", "U1"], clock=30),  # a retry: nothing after the prompt, kept pending
        _call(2, ["S", "U1", "R1", "U2"], clock=60),
    ]
    assert _hits(_run(calls)) == [0, 120, 150]


def test_units_are_usable_only_after_the_build_delay():
    calls = [
        _call(0, ["A", "B"]),
        _call(1, ["A", "B", "C"], clock=2),
        _call(2, ["A", "B", "C", "D"], clock=10),
    ]
    assert _hits(_run(calls)) == [0, 0, 210]
    untimed = [_call(0, ["A", "B"], timed=False), _call(1, ["A", "B", "C"], clock=2, timed=False)]
    assert _hits(_run(untimed)) == [0, 150]  # a synthetic clock: no build delay


def test_expiry_after_the_idle_gap():
    results = _run([_call(0, ["A", "B"]), _call(1, ["A", "B", "C"], clock=6 * HOUR + 1)])
    assert _hits(results) == [0, 0]


def test_expiry_is_refreshed_on_use():
    calls = [
        _call(0, ["A", "B"]),
        _call(1, ["A", "B", "C"], clock=5 * HOUR),  # hits A+B, which now lives until 11 h
        _call(2, ["A", "B", "E"], clock=10 * HOUR),  # A+B is still there (6 h after use)
        _call(3, ["A", "B", "D"], clock=16 * HOUR + 1),  # 6 h after the last use: gone
    ]
    assert _hits(_run(calls)) == [0, 150, 150, 0]


def test_units_belong_to_one_model():
    calls = [_call(0, ["A", "B"]), _call(1, ["A", "B", "C"], clock=60, model="deepseek-v4-pro")]
    assert _hits(_run(calls)) == [0, 0]


def test_legacy_floors_the_common_prefix_to_64_tokens():
    calls = [
        _call(0, ["A", "B"]),
        _call(1, ["A", "C10"], clock=60),  # LCP 110 → 64
        _call(2, ["A27"], clock=120),  # LCP 27: under one 64-token unit
        _call(3, ["A", "B"], clock=180),  # the whole earlier prompt: 150 → 128
    ]
    results = _run(calls, mode="legacy")
    assert _hits(results) == [0, 64, 0, 128]
    assert [r.cache_write_tokens for r in results] == [0, 0, 0, 0]
    assert "LCP 110" in results[1].detail


def test_legacy_expiry_and_build_delay():
    calls = [
        _call(0, ["A", "B"]),
        _call(1, ["A", "C"], clock=2),  # too soon: A is not built yet
        _call(2, ["A", "D"], clock=60),  # A lives (refreshed by call 1)
        _call(3, ["A", "E"], clock=60 + 6 * HOUR),  # idle for 6 h: expired
    ]
    assert _hits(_run(calls, mode="legacy")) == [0, 0, 64, 0]


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode="):
        DeepSeekSimulator(mode="lcp")
