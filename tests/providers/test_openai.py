"""OpenAI simulator: one test per rule of providers.md §2 / §7, expectations by hand."""

import pytest

from cacheviz.providers._base import Breakpoint, HandBuilt
from cacheviz.providers.openai import OpenAISimulator, generation_for, granularity_for

BUILD = HandBuilt()


def run(n, start=0):
    """``n`` distinct token ids from ``start`` on (a block's content)."""
    return list(range(start, start + n))


def call(
    index, blocks, *, clock=0.0, model="gpt-5.4", roles=None, parts=None, breakpoints=(), **params
):
    return BUILD.call(
        index,
        blocks,
        clock=clock,
        model=model,
        roles=roles,
        parts=parts,
        breakpoints=breakpoints,
        **params,
    )


def reads(simulator, calls):
    return [r.cache_read_tokens for r in simulator.run(calls)]


SYSTEM = run(1200)


# --- GPT-5.5 and earlier: implicit caching ----------------------------------------------


def test_model_names_pick_the_generation_and_granularity():
    assert [generation_for(m) for m in ("gpt-4o", "gpt-5.5-pro", "gpt-5.6-luna", "gpt-6-sol")] == [
        "classic",
        "classic",
        "breakpoint",
        "breakpoint",
    ]
    assert granularity_for("gpt-5.5") == 2048
    assert granularity_for("gpt-5.4-mini") == 128


def test_prompts_under_1024_tokens_cache_nothing():
    short = [run(1000)]
    assert reads(OpenAISimulator(), [call(0, short), call(1, short)]) == [0, 0]
    exact = [run(1024)]  # the smallest cacheable prompt: fully cached the second time
    assert reads(OpenAISimulator(), [call(0, exact), call(1, exact)]) == [0, 1024]


def test_the_common_prefix_is_floored_to_128_tokens_with_no_write_fee():
    first = call(0, [SYSTEM, run(200, 5000)])
    # the second block shares its first 100 tokens: LCP = 1200 + 100 = 1300 -> 1280
    second = call(1, [SYSTEM, run(100, 5000) + run(50, 9000)], clock=10)
    results = OpenAISimulator().run([first, second])
    assert [r.cache_read_tokens for r in results] == [0, 1280]
    assert [r.cache_write_tokens for r in results] == [0, 0]
    assert results[1].uncached_tokens == 1350 - 1280


def test_a_match_under_1024_tokens_after_flooring_counts_nothing():
    first = call(0, [run(1000), run(1000, 5000)])
    second = call(1, [run(1000), run(1000, 9000)], clock=10)  # LCP 1000 -> 896 < 1024
    assert reads(OpenAISimulator(), [first, second]) == [0, 0]


def test_gpt55_caches_in_steps_of_2048_tokens():
    first = call(0, [run(3000), run(500, 5000)], model="gpt-5.5")
    second = call(1, [run(3000), run(500, 9000)], model="gpt-5.5", clock=10)
    assert reads(OpenAISimulator(), [first, second]) == [0, 2048]
    assert reads(OpenAISimulator(granularity=128), [first, second]) == [0, 2944]


def test_in_memory_entries_expire_after_five_idle_minutes():
    prompt = [SYSTEM, run(100, 5000)]
    grown = [*prompt, run(100, 6000)]
    sim = OpenAISimulator()
    assert reads(sim, [call(0, prompt), call(1, grown, clock=299)]) == [0, 1280]
    assert reads(sim, [call(0, prompt), call(1, grown, clock=301)]) == [0, 0]


def test_24h_retention_survives_the_idle_gap_for_30_minutes():
    prompt = [SYSTEM, run(100, 5000)]
    grown = [*prompt, run(100, 6000)]
    calls = [call(0, prompt), call(1, grown, clock=1000)]
    assert reads(OpenAISimulator(retention="24h"), calls) == [0, 1280]
    late = [call(0, prompt), call(1, grown, clock=1801)]
    assert reads(OpenAISimulator(retention="24h"), late) == [0, 0]


def test_the_request_retention_is_followed_when_not_overridden():
    prompt = [SYSTEM, run(100, 5000)]
    calls = [
        call(0, prompt, prompt_cache_retention="24h"),
        call(1, prompt, clock=1000, prompt_cache_retention="24h"),
    ]
    assert reads(OpenAISimulator(), calls) == [0, 1280]
    assert reads(OpenAISimulator(retention="in_memory"), calls) == [0, 0]


def test_a_read_refreshes_the_entry_it_hit():
    first = call(0, [run(2048), run(512, 5000)])
    # hits first's 2048-token head at t=200, which keeps `first` alive until 500
    branch = call(1, [run(2048), run(512, 9000)], clock=200)
    # at 450 `first` (refreshed) still matches 2560 tokens; without the refresh only `branch`
    # would be live, matching 2048
    again = call(2, [run(2048), run(512, 5000), run(100, 7000)], clock=450)
    assert reads(OpenAISimulator(), [first, branch, again]) == [0, 2048, 2560]


def test_a_prompt_written_at_a_later_clock_is_not_read_yet_nor_lost():
    # calls in the order written, one of them stamped earlier (clock skew, a created: 0):
    # the later-stamped prompt is not visible to it, and still there for the calls after
    prompt = [SYSTEM, run(100, 5000)]
    calls = [call(0, prompt, clock=100), call(1, prompt, clock=0), call(2, prompt, clock=120)]
    assert reads(OpenAISimulator(), calls) == [0, 0, 1280]


def test_prompt_cache_key_routes_requests_to_separate_caches():
    prompt = [SYSTEM, run(100, 5000)]
    calls = [
        call(0, prompt, prompt_cache_key="a"),
        call(1, prompt, clock=1, prompt_cache_key="b"),
        call(2, prompt, clock=2, prompt_cache_key="a"),
        call(3, prompt, clock=3),  # no key: the prefix bucket, empty so far
    ]
    assert reads(OpenAISimulator(), calls) == [0, 0, 1280, 0]


def test_without_a_key_the_blocks_covering_the_first_256_tokens_pick_the_bucket():
    calls = [
        call(0, [run(300), run(1000, 5000)]),
        call(1, [run(300), run(1000, 5000), run(10, 7000)], clock=1),
    ]
    assert reads(OpenAISimulator(), calls) == [0, 1280]
    # one 2000-token first block edited at token 1500: 1500 tokens in common, but the
    # block digest that stands for the first 256 tokens differs, so another bucket ...
    head, edited = run(2000), run(1500) + run(500, 9000)
    calls = [call(0, [head, run(10, 7000)]), call(1, [edited, run(10, 7000)], clock=1)]
    assert reads(OpenAISimulator(), calls) == [0, 0]
    # ... unless a prompt_cache_key puts both in one bucket: 1500 -> 1408
    keyed = [
        call(0, [head, run(10, 7000)], prompt_cache_key="k"),
        call(1, [edited, run(10, 7000)], clock=1, prompt_cache_key="k"),
    ]
    assert reads(OpenAISimulator(), keyed) == [0, 1408]


def test_the_model_and_render_parameters_split_the_cache():
    prompt = [SYSTEM, run(100, 5000)]
    calls = [
        call(0, prompt),
        call(1, prompt, clock=1, model="gpt-5.4-mini"),
        call(2, prompt, clock=2, reasoning={"effort": "high"}),
        call(3, prompt, clock=3),
    ]
    assert reads(OpenAISimulator(), calls) == [0, 0, 0, 1280]


def test_invalid_options_are_refused():
    with pytest.raises(ValueError, match="retention"):
        OpenAISimulator(retention="1h")
    with pytest.raises(ValueError, match="generation"):
        OpenAISimulator(generation="gpt-7")


# --- GPT-5.6 and later: breakpoints ------------------------------------------------------

NEW = "gpt-5.6-terra"
DEV = run(1100, 50_000)  # the initial developer block


def chat(index, messages, *, clock=0.0, breakpoints=(), **params):
    """A GPT-5.6 request: the developer block, then (role, tokens) messages."""
    return call(
        index,
        [DEV, *(tokens for _, tokens in messages)],
        clock=clock,
        model=NEW,
        parts=["system", *["messages"] * len(messages)],
        roles=[None, *(role for role, _ in messages)],
        breakpoints=[Breakpoint(b, 1800) for b in breakpoints],
        **params,
    )


U1, A1, U2 = ("user", run(100, 1)), ("assistant", run(50, 200)), ("user", run(100, 300))


def test_gpt56_writes_at_the_implicit_breakpoint_and_reads_it_exactly():
    results = OpenAISimulator().run([chat(0, [U1]), chat(1, [U1, A1, U2], clock=10)])
    first, second = results
    assert (first.cache_read_tokens, first.cache_write_tokens) == (0, 1200)
    # the earlier user message's ending is a candidate: read 1200 exactly (no 128 floor),
    # then write up to the new implicit breakpoint (billed 1.25x by pricing)
    assert (second.cache_read_tokens, second.cache_write_tokens) == (1200, 150)
    assert second.uncached_tokens == 0


def test_gpt56_explicit_breakpoints_add_writes():
    other = ("user", run(100, 900))
    plain = [chat(0, [U1]), chat(1, [other], clock=10)]
    # the developer block's end is a candidate, but nothing was written there
    assert reads(OpenAISimulator(), plain) == [0, 0]
    marked = [chat(0, [U1], breakpoints=[0]), chat(1, [other], clock=10)]
    results = OpenAISimulator().run(marked)
    assert results[0].cache_write_tokens == 1200  # entries at 1100 and 1200
    assert (results[1].cache_read_tokens, results[1].cache_write_tokens) == (1100, 100)


def test_gpt56_writes_at_most_four_breakpoints_the_latest_explicit_ones():
    users = [("user", run(10, 1000 * k)) for k in range(1, 7)]
    first = chat(0, users, breakpoints=[1, 2, 3, 4, 5])  # implicit at block 6
    result = OpenAISimulator().run([first])[0]
    assert "wrote at block(s) 3, 4, 5, 6" in result.detail
    assert result.cache_write_tokens == 1160
    new = ("user", run(10, 90_000))
    shares_two = chat(1, [*users[:2], new], clock=1)  # entries at blocks 1, 2: none
    shares_three = chat(2, [*users[:3], new], clock=2)  # entry at block 3: 1130 tokens
    assert reads(OpenAISimulator(), [first, shares_two]) == [0, 0]
    assert reads(OpenAISimulator(), [first, shares_three]) == [0, 1130]


def test_gpt56_needs_1024_visible_tokens():
    small = call(
        0, [run(500), run(100, 5000)], model=NEW, roles=[None, "user"], parts=["system", "messages"]
    )
    again = call(
        1, [run(500), run(100, 5000)], model=NEW, roles=[None, "user"], parts=["system", "messages"]
    )
    results = OpenAISimulator().run([small, again])
    assert [(r.cache_read_tokens, r.cache_write_tokens) for r in results] == [(0, 0), (0, 0)]


def test_gpt56_entries_live_30_minutes_after_their_last_write_or_reuse():
    sim = OpenAISimulator()
    assert reads(sim, [chat(0, [U1]), chat(1, [U1, A1, U2], clock=1799)]) == [0, 1200]
    assert reads(sim, [chat(0, [U1]), chat(1, [U1, A1, U2], clock=1801)]) == [0, 0]
    reused = [chat(0, [U1]), chat(1, [U1], clock=1000), chat(2, [U1, A1, U2], clock=2700)]
    assert reads(sim, reused) == [0, 1200, 1200]


def test_gpt56_only_the_last_tool_response_of_a_group_is_eligible():
    call_, tool_a, tool_b = (
        ("assistant", run(20, 400)),
        ("tool", run(30, 500)),
        ("tool", run(30, 600)),
    )
    first = chat(0, [U1, call_, tool_a])  # implicit breakpoint after tool_a: written
    # tool_a is no longer the last of its group: its ending is not looked up
    second = chat(1, [U1, call_, tool_a, tool_b], clock=1)
    results = OpenAISimulator().run([first, second])
    assert [(r.cache_read_tokens, r.cache_write_tokens) for r in results] == [(0, 1250), (0, 1280)]


def test_gpt56_explicit_mode_without_breakpoints_caches_nothing():
    options = {"prompt_cache_options": {"mode": "explicit"}}
    calls = [chat(0, [U1], **options), chat(1, [U1, A1, U2], clock=1, **options)]
    results = OpenAISimulator().run(calls)
    assert [(r.cache_read_tokens, r.cache_write_tokens) for r in results] == [(0, 0), (0, 0)]
    marked = [
        chat(0, [U1], breakpoints=[1], **options),
        chat(1, [U1, A1, U2], clock=1, breakpoints=[1], **options),
    ]
    assert reads(OpenAISimulator(), marked) == [0, 1200]
