"""Anthropic rules found untested by mutation (providers.md §1.1, §1.2, §7; docs/performance.md).

Dotted model names, every messages-level render parameter, the ``min_tokens`` override,
the static head that is warm before a session, and the automatic breakpoint's TTL.
"""

import pytest

from cacheviz.providers._base import Breakpoint, HandBuilt
from cacheviz.providers.anthropic import AnthropicSimulator, automatic_ttl, min_tokens_for

_BUILD = HandBuilt()
PARTS = ["tools", "system", "messages", "messages"]
POINTS = [Breakpoint(0, 300), Breakpoint(1, 300), Breakpoint(3, 300)]


def _call(index, sizes=(1200, 400, 50, 50), *, points=POINTS, parts=PARTS, **params):
    return _BUILD.call(
        index,
        [[i + 1] * size for i, size in enumerate(sizes)],
        clock=float(index),
        model="claude-sonnet-4-5",
        parts=parts,
        breakpoints=points,
        **params,
    )


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("claude-haiku-4.5", 4096),
        ("claude-opus-4.5", 4096),
        ("claude-opus-4.6", 4096),
        ("claude-opus-4.7", 2048),
        ("claude-3.5-haiku", 2048),
        ("claude-sonnet-4.5", 1024),
    ],
)
def test_dotted_model_names_have_the_minimum_of_their_model(model, minimum):
    assert min_tokens_for(model) == minimum == min_tokens_for(model.replace(".", "-"))


@pytest.mark.parametrize(
    ("param", "before", "after"),
    [
        ("tool_choice", {"type": "auto"}, {"type": "any"}),
        ("thinking", {"type": "enabled", "budget_tokens": 2048}, {"type": "disabled"}),
        ("disable_parallel_tool_use", False, True),
        ("output_config", {"effort": "high"}, {"effort": "low"}),
    ],
)
def test_a_messages_level_parameter_change_keeps_tools_and_system_cached(param, before, after):
    first = _call(0, **{param: before})
    second = _call(1, **{param: after})
    result = AnthropicSimulator().run([first, second])[1]
    assert result.cache_read_tokens == 1600  # tools + system still hit
    assert result.cache_write_tokens == 100  # the messages level is written anew
    same = AnthropicSimulator().run([first, _call(1, **{param: before})])[1]
    assert same.cache_read_tokens == 1700


def test_the_same_parameters_in_another_key_order_are_no_change():
    first = _call(0, thinking={"type": "enabled", "budget_tokens": 2048})
    second = _call(1, thinking={"budget_tokens": 2048, "type": "enabled"})
    assert AnthropicSimulator().run([first, second])[1].cache_read_tokens == 1700


def test_the_min_tokens_override_replaces_the_models_minimum():
    small = _call(0, sizes=(60, 30, 5, 5))
    assert AnthropicSimulator().run([small])[0].cache_write_tokens == 0  # below 1,024
    (result,) = AnthropicSimulator(min_tokens=50).run([small])
    assert result.cache_write_tokens == 100
    assert AnthropicSimulator(min_tokens=2000).run([_call(1)])[0].cache_write_tokens == 0


def test_a_static_head_warm_before_the_session_is_read_by_its_first_call():
    call = _call(0)
    call.warm_tokens = 1600
    (result,) = AnthropicSimulator().run([call])
    assert (result.cache_read_tokens, result.cache_write_tokens) == (1600, 100)
    assert result.detail == (
        "recorded: 3 breakpoint(s), 1,600 tokens warm before the session (its first reported read)"
    )


def test_nothing_is_warm_without_a_breakpoint_or_beyond_the_request():
    bare = _call(0, points=[])
    bare.warm_tokens = 1600
    (result,) = AnthropicSimulator().run([bare])
    assert (result.cache_read_tokens, result.cache_write_tokens) == (0, 0)
    too_long = _call(1)
    too_long.warm_tokens = too_long.total + 1
    assert AnthropicSimulator().run([too_long])[0].cache_read_tokens == 0


def test_a_hit_names_its_block():
    result = AnthropicSimulator().run([_call(0), _call(1)])[1]
    assert result.detail == "recorded: 3 breakpoint(s), hit at block 3"


def test_the_automatic_breakpoints_ttl():
    assert automatic_ttl({"type": "ephemeral"}) == 300
    assert automatic_ttl({"type": "ephemeral", "ttl": "5m"}) == 300
    assert automatic_ttl({"type": "ephemeral", "ttl": "1h"}) == 3600
    assert automatic_ttl({"type": "ephemeral", "ttl": "2h"}) == 300  # unknown: the default


def test_a_read_without_a_1h_breakpoint_writes_nothing_for_1h():
    result = AnthropicSimulator().run([_call(0), _call(1, sizes=(1200, 400, 50, 50, 30))])[1]
    assert result.cache_read_tokens == 1700
    assert result.cache_write_1h_tokens == 0


def test_the_auto_strategy_marks_the_last_tools_system_and_two_message_blocks():
    # providers.md §7: at most 4 breakpoints; tools, system, then the last two messages
    parts = ["tools"] * 3 + ["system"] * 3 + ["messages"] * 3
    call = _call(0, sizes=(400,) * 3 + (200,) * 3 + (50,) * 3, points=[], parts=parts)
    call.reconstructed = True  # no recorded breakpoints: the auto strategy places them
    points, strategy = AnthropicSimulator()._breakpoints(call)
    assert strategy == "auto"
    assert [p.block for p in points] == [2, 5, 7, 8]
    assert {p.ttl_seconds for p in points} == {300}
    kilocode, _ = AnthropicSimulator(breakpoints="kilocode")._breakpoints(call)
    assert [p.block for p in kilocode] == [3, 4, 7, 8]  # the first two system blocks


def test_a_top_level_cache_control_marks_the_last_block_with_its_ttl():
    call = _call(0, points=[])
    call.auto_breakpoint = 3600  # cache_control: {"type": "ephemeral", "ttl": "1h"}
    (result,) = AnthropicSimulator().run([call])
    assert result.cache_write_tokens == result.cache_write_1h_tokens == 1700


def test_a_request_below_the_minimum_says_so():
    (result,) = AnthropicSimulator().run([_call(0, sizes=(60, 30, 5, 5))])
    assert result.detail == "recorded: 3 breakpoint(s), below the 1024-token minimum"
