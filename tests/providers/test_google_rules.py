"""Gemini simulator, rules the first mutation run found untested (providers.md §4, §7).

Expectations by hand from the spec and the module's documented approximations.
"""

import pytest

from cacheviz.providers._base import HandBuilt
from cacheviz.providers.google import PROFILE, GeminiSimulator, explicit_supported, min_tokens_for

BUILD = HandBuilt()
PRO = "gemini-2.5-pro"  # 2,048-token minimum in the default (2026-10-13) row


def run(n, start=0):
    """``n`` distinct token ids from ``start`` on (a block's content)."""
    return list(range(start, start + n))


def call(index, blocks, parts, *, clock=0.0, model=PRO):
    return BUILD.call(index, blocks, clock=clock, model=model, parts=parts)


SYSTEM = run(2048, 10_000)
TOOLS = run(1000, 0)
USER = run(300, 40_000)


def test_a_row_applies_from_its_own_date_and_the_profile_uses_the_default_row():
    assert min_tokens_for("gemini-2.5-flash", "2026-07-07") == 2048
    assert min_tokens_for("gemini-2.5-flash", "2026-07-06") == 1024
    assert PROFILE.min_tokens("gemini-2.5-pro") == 2048
    assert PROFILE.min_tokens("gemini-3-flash-preview") == 1024


def test_explicit_caching_is_refused_from_gemini_4_on():
    assert not explicit_supported("gemini-4-pro")
    assert not explicit_supported("gemini-5-flash")
    assert explicit_supported("gemini-3.8-flash")
    assert explicit_supported("tunedModels/my-model")  # no version in the name


def test_the_simulator_follows_the_row_it_is_given():
    prompt = [run(1500)]
    calls = [call(0, prompt, ["messages"]), call(1, prompt, ["messages"], clock=1)]
    flash = [call(c.index, prompt, ["messages"], model="gemini-2.5-flash") for c in calls]
    assert [r.cache_read_tokens for r in GeminiSimulator().run(flash)] == [0, 0]
    old = GeminiSimulator(min_tokens_as_of="2025-10-01")  # 2.5 Flash: 1,024
    assert [r.cache_read_tokens for r in old.run(flash)] == [0, 1500]


def test_implicit_a_prompt_of_exactly_the_minimum_is_cached():
    exact, short = [run(2048)], [run(2047)]
    results = GeminiSimulator().run(
        [
            call(0, short, ["messages"]),
            call(1, exact, ["messages"], clock=1),
            call(2, exact, ["messages"], clock=2),
        ]
    )
    # the short prompt got no hit but was cached at its start: only the current prompt's
    # size is checked against the minimum (providers.md §7)
    assert [r.cache_read_tokens for r in results] == [0, 2047, 2048]
    assert [r.detail for r in results] == [
        "implicit: prompt 2047 below the 2048-token minimum",
        "implicit: 2047 tokens shared with a live prompt",
        "implicit: 2048 tokens shared with a live prompt",
    ]


def test_explicit_a_one_block_system_object_of_exactly_the_minimum():
    calls = [
        call(0, [SYSTEM, USER], ["system", "messages"]),
        call(1, [SYSTEM, run(200, 60_000)], ["system", "messages"], clock=60),
    ]
    created, read = GeminiSimulator(mode="explicit").run(calls)
    assert (created.input_tokens, created.cache_write_tokens) == (2348, 2048)
    assert created.detail == "explicit: created a 2048-token object for 1 h"
    assert created.extra == {"storage_token_hours": 2048.0}
    assert (read.input_tokens, read.cache_read_tokens) == (2248, 2048)
    assert read.detail == "explicit: read the object created by call #0"


def test_explicit_the_object_holds_the_tools_and_system_part():
    calls = [
        call(0, [TOOLS, SYSTEM, USER], ["tools", "system", "messages"]),
        call(1, [TOOLS, SYSTEM], ["tools", "system"], clock=1),  # no messages at all
    ]
    results = GeminiSimulator(mode="explicit").run(calls)
    assert [(r.cache_read_tokens, r.cache_write_tokens) for r in results] == [(0, 3048), (3048, 0)]
    alone = GeminiSimulator(mode="explicit").run([call(0, [TOOLS, SYSTEM], ["tools", "system"])])
    assert alone[0].cache_write_tokens == 3048


def test_explicit_without_a_system_part_no_object_is_created():
    calls = [call(0, [run(3000)], ["messages"]), call(1, [run(3000)], ["messages"], clock=1)]
    results = GeminiSimulator(mode="explicit").run(calls)
    assert [(r.cache_read_tokens, r.cache_write_tokens) for r in results] == [(0, 0), (0, 0)]
    assert results[0].input_tokens == 3000
    assert results[0].detail == "explicit: system prefix 0 below the 2048-token minimum"


def test_explicit_objects_belong_to_one_model():
    prompt, parts = [SYSTEM, USER], ["system", "messages"]
    calls = [
        call(0, prompt, parts),
        call(1, prompt, parts, clock=1, model="gemini-2.5-flash"),
        call(2, prompt, parts, clock=2),
    ]
    results = GeminiSimulator(mode="explicit").run(calls)
    assert [(r.cache_read_tokens, r.cache_write_tokens) for r in results] == [
        (0, 2048),
        (0, 2048),
        (2048, 0),
    ]


def test_explicit_on_an_unsupported_model_is_uncached():
    result = GeminiSimulator(mode="explicit").run(
        [call(0, [SYSTEM, USER], ["system", "messages"], model="gemini-4-argon")]
    )[0]
    assert (result.input_tokens, result.cache_read_tokens, result.cache_write_tokens) == (
        2348,
        0,
        0,
    )
    assert result.detail == "explicit: cachedContents is not supported on gemini-4-argon"


def test_invalid_options_name_the_choices():
    with pytest.raises(ValueError, match=r"expected one of implicit, explicit$"):
        GeminiSimulator(mode="both")
    with pytest.raises(ValueError, match=r"expected one of system, first_call$"):
        GeminiSimulator(explicit_prefix="tools")
