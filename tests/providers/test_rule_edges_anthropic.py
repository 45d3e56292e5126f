"""Edge cases of the Anthropic rules and drift causes (each found untested by mutation)."""

import pytest

import cacheviz
from cacheviz.providers._base import Breakpoint, HandBuilt
from cacheviz.providers.anthropic import AnthropicSimulator, min_tokens_for

_BUILD = HandBuilt()


def _call(index, sizes, points, *, clock=None, parts=None, params=None):
    """A request whose block ``i`` is ``sizes[i]`` tokens of value ``i`` (same blocks, same hash)."""
    return _BUILD.call(
        index,
        [[i + 1] * size for i, size in enumerate(sizes)],
        clock=clock,
        model="claude-sonnet-4-5",
        parts=parts,
        breakpoints=[Breakpoint(block, ttl) for block, ttl in points],
        **(params or {}),
    )


# -- Anthropic rules (providers.md §1, §7) -------------------------------------------------


def test_of_more_than_four_recorded_breakpoints_the_first_four_count():
    sizes = [1500, 100, 100, 100, 100, 10]
    five = [(0, 300), (1, 300), (2, 300), (3, 300), (4, 300)]
    first = _call(0, sizes, five)
    probe = _call(1, sizes, [(4, 300)], clock=5)  # looks back from block 4
    assert AnthropicSimulator().run([first, probe])[1].cache_read_tokens == 1800  # through 3
    (alone,) = AnthropicSimulator().run([first])
    assert alone.cache_write_tokens == 1800  # the fifth breakpoint wrote nothing


def test_a_tool_choice_change_keeps_tools_and_system_cached():
    parts = ["tools", "system", "messages", "messages"]
    points = [(0, 300), (1, 300), (3, 300)]
    first = _call(0, [1200, 400, 50, 50], points, parts=parts, params={"tool_choice": "auto"})
    second = _call(
        1, [1200, 400, 50, 50], points, parts=parts, params={"tool_choice": "any"}, clock=5
    )
    result = AnthropicSimulator().run([first, second])[1]
    assert result.cache_read_tokens == 1600  # tools + system still hit
    assert result.cache_write_tokens == 100  # the messages level is written anew


def test_the_1h_billing_point_is_the_last_of_several_1h_writes():
    points = [(0, 3600), (1, 3600), (2, 300)]
    (result,) = AnthropicSimulator().run([_call(0, [2000, 500, 300, 50], points)])
    assert result.cache_write_1h_tokens == 2500  # through block 1, the last 1h write
    assert result.cache_write_tokens == 2800
    assert result.uncached_tokens == 50


@pytest.mark.parametrize(("size", "written"), [(0, True), (-1, False), (1, True)])
def test_the_minimum_prefix_is_inclusive(size, written):
    minimum = min_tokens_for("claude-sonnet-4-5")
    (result,) = AnthropicSimulator().run([_call(0, [minimum + size], [(0, 300)])])
    assert (result.cache_write_tokens > 0) is written


# -- drift causes (public behaviour: the drifts frame) ----------------------------------------


def _thread(write_log, histories, name):
    system = [{"type": "text", "text": "You are a careful agent. " * 400}]
    bodies = [
        {"model": "claude-sonnet-4-5", "system": system, "messages": history}
        for history in histories
    ]
    return cacheviz.load(write_log(bodies, name=name)).analyze()


def _turns(n):
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "x" * 40}
        for i in range(n)
    ]


def _cause(analysis, call):
    drifts = analysis.drifts.filter(analysis.drifts["call"] == call)
    assert drifts.height == 1, analysis.drifts
    return drifts["cause"][0]


def test_dropping_messages_after_a_kept_first_message_is_front_truncation(write_log):
    turns = _turns(8)
    kept_task = [turns[0], *turns[3:8]]  # the task stays, turns 1-2 dropped
    analysis = _thread(write_log, [turns[:7], kept_task], "front.jsonl")
    assert _cause(analysis, 1) == "truncated_front"


def test_a_removed_run_that_ends_at_the_last_segment_is_found(write_log):
    turns = _turns(9)
    # previous m0..m5; current m0..m2, m5, m6: m3-m4 removed, the run search must reach m5,
    # the last segment of the previous request
    analysis = _thread(write_log, [turns[:6], [*turns[:3], turns[5], turns[6]]], "run.jsonl")
    assert _cause(analysis, 1) == "block_removed"
