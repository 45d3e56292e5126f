"""OpenAI simulator, rules the first mutation run found untested (providers.md §2, §7).

Expectations by hand from the spec and the module's documented approximations.
"""

import pytest

from cacheviz.providers._base import Breakpoint, HandBuilt
from cacheviz.providers.openai import OpenAISimulator, model_version, request_mode

BUILD = HandBuilt()
NEW = "gpt-5.6-terra"
EXPLICIT = {"prompt_cache_options": {"mode": "explicit"}}


def run(n, start=0):
    """``n`` distinct token ids from ``start`` on (a block's content)."""
    return list(range(start, start + n))


def call(index, blocks, *, clock=0.0, model="gpt-5.4", roles=None, parts=None, marks=(), **params):
    return BUILD.call(
        index,
        blocks,
        clock=clock,
        model=model,
        roles=roles,
        parts=parts,
        breakpoints=[Breakpoint(b, 1800) for b in marks],
        **params,
    )


def chat(index, developer, messages, *, clock=0.0, marks=(), **params):
    """A GPT-5.6 request: one developer block, then (role, tokens) messages."""
    return call(
        index,
        [developer, *(tokens for _, tokens in messages)],
        clock=clock,
        model=NEW,
        parts=["system", *["messages"] * len(messages)],
        roles=[None, *(role for role, _ in messages)],
        marks=marks,
        **params,
    )


def reads(simulator, calls):
    return [r.cache_read_tokens for r in simulator.run(calls)]


def read_write(simulator, calls):
    return [(r.cache_read_tokens, r.cache_write_tokens) for r in simulator.run(calls)]


DEV = run(1100, 50_000)
U1 = ("user", run(100, 1))


# --- GPT-5.5 and earlier --------------------------------------------------------------


def test_model_version_and_request_mode_defaults():
    assert model_version("gpt-5") == (5, 0)
    assert model_version("o3") is None
    assert request_mode({}) == "implicit"
    assert request_mode({"prompt_cache_options": {"mode": "explicit"}}) == "explicit"
    assert request_mode({"prompt_cache_options": "explicit"}) == "implicit"


def test_a_shorter_request_reads_the_stored_prompt_it_is_a_prefix_of():
    system = run(1200)
    calls = [call(0, [system, run(500, 5000)]), call(1, [system], clock=10)]
    assert reads(OpenAISimulator(), calls) == [0, 1152]  # 1200 floored to 128


def test_classic_details_name_the_matched_call_and_the_retention():
    prompt = [run(500), run(700, 5000), run(100, 7000)]
    results = OpenAISimulator().run(
        [
            call(0, [run(1000)]),
            call(1, prompt, clock=1),
            call(2, prompt, clock=2),
            call(3, [run(500), run(1000, 9000)], clock=3),  # the same first block: one bucket
        ]
    )
    assert [r.input_tokens for r in results] == [1000, 1300, 1300, 1500]
    assert results[0].detail == "below the 1024-token minimum"
    assert results[1].detail == "in_memory: no live prompt in the bucket"
    assert results[2].detail == "in_memory: 1300 tokens match call 1, 1280 cached (every 128)"
    assert results[3].detail == "in_memory: 500 tokens match, under 1024 once floored"


def test_a_match_under_the_minimum_does_not_refresh_the_entry():
    first = call(0, [run(500), run(1500, 5000)])
    near = call(1, [run(500), run(1500, 9000)], clock=200)  # 500 tokens: no hit
    # `first` was written at 0 and expired at 300; only `near` (500 in common) is live
    again = call(2, [run(500), run(1500, 5000)], clock=400)
    assert reads(OpenAISimulator(), [first, near, again]) == [0, 0, 0]


def test_the_longest_live_prompt_is_found_however_many_came_after_it():
    # the old search compared at most `max_compared` prompts, most recent first; the
    # indexed one finds what comparing all of them finds (the parameter is ignored)
    prompt = [run(1200), run(100, 5000)]
    calls = [
        call(0, prompt, prompt_cache_key="k"),
        call(1, [run(1200, 20_000)], clock=1, prompt_cache_key="k"),
        call(2, [run(1200, 30_000)], clock=2, prompt_cache_key="k"),
        call(3, prompt, clock=3, prompt_cache_key="k"),
    ]
    assert reads(OpenAISimulator(), calls) == [0, 0, 0, 1280]
    for cap in (1, 2, 3, 64):
        with pytest.warns(DeprecationWarning, match="max_compared=.*ignored"):
            simulator = OpenAISimulator(max_compared=cap)
        assert reads(simulator, calls) == [0, 0, 0, 1280]


def test_options_are_checked_and_normalised():
    with pytest.raises(ValueError, match="mode="):
        OpenAISimulator(mode="auto")
    with pytest.raises(ValueError, match="granularity"):
        OpenAISimulator(granularity=0)
    prompt = [run(1200), run(100, 5000)]
    edited = [run(1200), run(50, 5000) + run(50, 9000)]
    assert reads(OpenAISimulator(granularity=1), [call(0, prompt), call(1, edited)]) == [0, 1250]
    simulator = OpenAISimulator(retention="in-memory")
    assert simulator.retention == "in_memory"
    assert reads(simulator, [call(0, prompt), call(1, prompt, clock=400)]) == [0, 0]


# --- GPT-5.6 and later ----------------------------------------------------------------


def test_gpt56_a_request_under_256_tokens_is_routed_and_caches_nothing():
    small = call(0, [run(100), run(50, 5000)], model=NEW, parts=["system", "messages"])
    assert read_write(OpenAISimulator(), [small, small]) == [(0, 0), (0, 0)]


def test_gpt56_a_breakpoint_of_exactly_1024_tokens_is_written_and_read():
    calls = [chat(0, run(924, 50_000), [U1]), chat(1, run(924, 50_000), [U1], clock=1)]
    assert read_write(OpenAISimulator(), calls) == [(0, 1024), (1024, 0)]


def test_gpt56_caches_are_split_by_key_and_render_parameters():
    u2 = ("user", run(100, 300))
    calls = [
        chat(0, DEV, [U1]),
        chat(1, DEV, [U1, u2], clock=1, reasoning_effort="high"),
        chat(2, DEV, [U1, u2], clock=2, prompt_cache_key="x"),
        chat(3, DEV, [U1, u2], clock=3),
    ]
    assert reads(OpenAISimulator(), calls) == [0, 0, 0, 1200]


def test_gpt56_an_explicit_breakpoint_under_1024_tokens_writes_nothing():
    small = call(
        0,
        [run(500), run(100, 5000)],
        model=NEW,
        parts=["system", "messages"],
        marks=[0],
        **EXPLICIT,
    )
    result = OpenAISimulator().run([small])[0]
    assert (result.cache_read_tokens, result.cache_write_tokens) == (0, 0)
    assert result.detail == "1 candidate(s), below the 1024-token minimum"


def test_gpt56_details_list_the_hit_and_the_writes():
    other = ("user", run(100, 900))
    results = OpenAISimulator().run([chat(0, DEV, [U1], marks=[0]), chat(1, DEV, [other], clock=1)])
    assert results[0].detail == "2 candidate(s), wrote at block(s) 0, 1"
    assert results[1].detail == "2 candidate(s), hit at block 0, wrote at block(s) 1"


def test_gpt56_explicit_mode_looks_up_the_latest_explicit_breakpoints_too():
    users = [("user", run(100, 1000 * k)) for k in range(1, 4)]
    first = chat(0, DEV, users, marks=[1, 2, 3], **EXPLICIT)
    second = chat(1, DEV, [*users, ("user", run(100, 9000))], clock=1, marks=[1, 2, 3], **EXPLICIT)
    # the first 2 (blocks 1, 2) and the latest 50 (blocks 1-3): the hit is block 3
    assert reads(OpenAISimulator(), [first, second]) == [0, 1400]


def test_gpt56_looks_up_20_earlier_message_endings():
    def later(k):
        return [("user", run(10, 10_000 + 100 * j)) for j in range(k)]

    first = chat(0, DEV, [U1])  # written at U1's end: 1200 tokens
    # 21 user endings: the implicit one and 20 earlier, U1 the 20th
    assert reads(OpenAISimulator(), [first, chat(1, DEV, [U1, *later(20)], clock=1)]) == [0, 1200]
    # 22 endings: U1 is the 21st earlier one, not looked up
    assert reads(OpenAISimulator(), [first, chat(1, DEV, [U1, *later(21)], clock=1)]) == [0, 0]


def test_gpt56_without_messages_the_developer_block_end_is_the_implicit_breakpoint():
    only = call(0, [DEV], model=NEW, parts=["system"], roles=[None])
    again = call(1, [DEV], model=NEW, parts=["system"], roles=[None], clock=1)
    assert read_write(OpenAISimulator(), [only, again]) == [(0, 1100), (1100, 0)]


def test_gpt56_the_longest_live_candidate_wins_over_a_short_developer_block():
    developer = run(200, 50_000)
    u1 = ("user", run(1500, 1))
    first = chat(0, developer, [u1])
    second = chat(1, developer, [u1, ("assistant", run(50, 9000)), U1], clock=1)
    assert read_write(OpenAISimulator(), [first, second]) == [(0, 1700), (1700, 150)]


@pytest.mark.parametrize("role", ["function", "function_call_output", "custom_tool_call_output"])
def test_gpt56_function_and_call_output_items_are_tool_responses(role):
    messages = [U1, ("assistant", run(20, 400)), (role, run(30, 500))]
    result = OpenAISimulator().run([chat(0, DEV, messages)])[0]
    assert result.cache_write_tokens == 1250  # the implicit breakpoint after the response


def test_gpt56_a_reuse_restarts_the_30_minutes_at_its_own_time():
    def again(index, clock):
        return chat(index, DEV, [U1], clock=clock)

    # written at 3000, reused at 4500 (alive until 6300), so still live at 6200
    assert reads(OpenAISimulator(), [again(0, 3000), again(1, 4500), again(2, 6200)]) == [
        0,
        1200,
        1200,
    ]
