"""DeepSeek simulator, rules the first mutation run found untested (providers.md §3, §7).

Expectations by hand from the spec and the module's documented approximations; a small
``interval_tokens`` keeps the fixed-interval units short.
"""

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from cacheviz.providers._base import HandBuilt
from cacheviz.providers.deepseek import DeepSeekSimulator, PrefixDigests, prefix_key

BUILD = HandBuilt()
HOUR = 3600.0


def run(n, start=0):
    """``n`` distinct token ids from ``start`` on (a block's content)."""
    return list(range(start, start + n))


def call(index, blocks, roles=None, *, clock=0.0, output=None, timed=True):
    """A request at ``clock`` seconds, timestamped (so the 5 s build delay applies)."""
    built = BUILD.call(
        index,
        blocks,
        clock=clock,
        model="deepseek-v4-flash",
        roles=roles,
        output_tokens=output,
    )
    return replace(built, ts=datetime.fromtimestamp(clock, UTC)) if timed else built


def hits(calls, **rules):
    return [r.cache_read_tokens for r in DeepSeekSimulator(**rules).run(calls)]


S, U, R, U2 = run(120, 1000), run(30, 2000), run(120, 3000), run(10, 4000)
CONV = [None, "user", "assistant", "user"]


def test_the_output_is_cached_with_its_interval_units_at_the_prompt_time():
    first = call(0, [S, U], CONV[:2], output=120)
    # re-sends the output: its unit (270 tokens) and the interval unit at 200 inside it
    # were written at call 0's time, so they are usable before call 1's own units are
    resend = call(1, [S, U, R, U2], CONV, clock=100)
    branch = call(2, [S, U, R[:60] + run(50, 9000)], CONV[:3], clock=101)
    results = DeepSeekSimulator(interval_tokens=100).run([first, resend, branch])
    assert [r.cache_read_tokens for r in results] == [0, 270, 200]
    # ... and the 210 tokens it shares with call 1 become a common-prefix unit
    assert results[2].detail == "hit the interval unit of call #0; common prefix 210 persisted"


@pytest.mark.parametrize(("output", "hit"), [(110, 250), (111, 150)])
def test_the_output_count_may_exceed_the_resent_run_by_10_percent(output, hit):
    first = call(0, [S, U], CONV[:2], output=output)
    resend = call(1, [S, U, R[:100], U2], CONV, clock=10)  # a 100-token assistant run
    assert hits([first, resend]) == [0, hit]


def test_the_output_of_a_one_block_prompt_and_a_request_ending_with_it():
    first = call(0, [S], [None])
    resend = call(1, [S, R], [None, "assistant"], clock=10)
    results = DeepSeekSimulator().run([first, resend])
    assert [r.cache_read_tokens for r in results] == [0, 240]
    assert results[1].detail == "hit the prompt+output unit of call #0"


def test_pending_outputs_that_do_not_continue_are_kept_and_skipped():
    other = call(0, [run(50, 7000), run(20, 7100)], output=5)  # another thread's prompt
    turn1 = call(1, [S, U], CONV[:2], clock=1)
    turn2 = call(2, [S, U, U2], [None, "user", "user"], clock=2)  # appended, not the reply
    roles = [None, "user", "user", "assistant", "user"]
    resend = call(3, [S, U, U2, R, run(10, 8000)], roles, clock=20)
    # turn 2's output (the re-sent R) extends its prompt: 160 + 120
    assert hits([other, turn1, turn2, resend]) == [0, 0, 0, 280]


def test_a_re_persisted_unit_restarts_its_clock_and_keeps_its_build_time():
    prompt = [run(250)]
    branch = [run(150) + run(100, 9000)]  # shares 150 tokens: the interval unit at 100
    # the re-sent prompt (at 5 h) hits its prompt unit and re-persists the interval unit
    calls = [call(0, prompt), call(1, prompt, clock=5 * HOUR), call(2, branch, clock=7 * HOUR)]
    assert hits(calls, interval_tokens=100) == [0, 250, 100]
    # usable at once, as it was since call 0's build, not only after call 1's
    calls = [call(0, prompt), call(1, prompt, clock=5 * HOUR), call(2, branch, clock=5 * HOUR + 1)]
    assert hits(calls, interval_tokens=100) == [0, 250, 100]


def test_build_and_expiry_boundaries():
    prompt = [run(200)]
    assert hits([call(0, prompt), call(1, prompt, clock=5.0)]) == [0, 200]
    assert hits([call(0, prompt), call(1, prompt, clock=6 * HOUR)]) == [0, 0]
    untimed = [call(0, prompt, timed=False), call(1, prompt, clock=0.5, timed=False)]
    assert hits(untimed) == [0, 200]  # no timestamp: no build delay


def test_a_unit_inside_a_writer_block_can_end_at_a_reader_block_boundary():
    calls = [call(0, [run(250)]), call(1, [run(100), run(50, 9000)], clock=10)]
    results = DeepSeekSimulator(interval_tokens=100).run(calls)
    assert [r.cache_read_tokens for r in results] == [0, 100]
    assert results[1].detail == "hit the interval unit of call #0"
    # a request that ends before the units filed inside block 1 of call 0
    calls = [call(0, [run(50), run(250, 5000)]), call(1, [run(50)], clock=10)]
    assert hits(calls, interval_tokens=100) == [0, 0]


def test_details_of_the_common_prefix_unit():
    a, b, c, d = run(100), run(50, 1000), run(60, 2000), run(70, 3000)
    calls = [
        call(0, [a, b]),
        call(1, [a, c], clock=1),  # within call 0's build delay: still shared
        call(2, [a, d], clock=10),
        call(3, [a], clock=11),  # a prefix of earlier prompts: nothing new to persist
    ]
    results = DeepSeekSimulator().run(calls)
    assert [r.cache_read_tokens for r in results] == [0, 0, 100, 100]
    assert [r.detail for r in results] == [
        "no unit is a prefix",
        "no unit is a prefix; common prefix 100 persisted",
        "hit the common-prefix unit of call #1",
        "hit the common-prefix unit of call #1",
    ]
    assert [r.input_tokens for r in results] == [150, 160, 170, 100]
    prefix = DeepSeekSimulator().run([call(0, [a, b]), call(1, [a], clock=10)])[1]
    assert prefix.detail == "no unit is a prefix"


def test_invalid_options_are_refused():
    with pytest.raises(ValueError, match=r"expected one of units, legacy$"):
        DeepSeekSimulator(mode="disk")
    with pytest.raises(ValueError, match="must be positive"):
        DeepSeekSimulator(interval_tokens=0)
    with pytest.raises(ValueError, match="must be positive"):
        DeepSeekSimulator(legacy_unit_tokens=0)
    assert DeepSeekSimulator(interval_tokens=1, legacy_unit_tokens=1).interval_tokens == 1


def test_prefix_keys_are_the_same_with_any_memo():
    request = call(0, [run(100), run(250, 5000)])
    plain = [prefix_key(request, n) for n in (100, 150, 200, 350)]
    assert plain[0] == (request.chain[0], 0, b"")
    assert plain[3] == (request.chain[1], 0, b"")
    assert len(set(plain)) == 4
    memo, digests = {}, PrefixDigests()
    for _ in range(2):
        assert [prefix_key(request, n, memo) for n in (100, 150, 200, 350)] == plain
        assert [prefix_key(request, n, digests) for n in (200, 150, 100, 350)] == [
            plain[2],
            plain[1],
            plain[0],
            plain[3],
        ]


def test_a_unit_of_another_thread_at_the_same_offset_does_not_hide_a_longer_match():
    x, y = run(250), run(150, 5000)
    calls = [
        call(0, [x]),  # units at 100, 200 (x's tokens) and 250
        call(1, [x[:150] + y], clock=1),  # units at 100, 150 (common prefix), 200, 300
        # shares 250 tokens with call 1: its 200-token unit, not call 0's (another 200)
        call(2, [x[:150] + y[:100] + run(50, 9000)], clock=10),
    ]
    assert hits(calls, interval_tokens=100) == [0, 0, 200]
