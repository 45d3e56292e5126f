import json
import math

import pytest

from cacheviz.model import Usage
from cacheviz.reported._usage import UsageError, lenient_usage, normalize_usage


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(
            {
                "input_tokens": 12,
                "cache_creation_input_tokens": 300,
                "cache_read_input_tokens": 5000,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 100,
                    "ephemeral_1h_input_tokens": 200,
                },
                "output_tokens": 40,
            },
            Usage(5312, 5000, 300, 100, 200, 40, "derived"),
            id="anthropic-input-excludes-cache",
        ),
        pytest.param(
            {"input_tokens": 7, "output_tokens": 3},
            Usage(7, None, None, None, None, 3, "derived"),
            id="anthropic-without-cache-fields-is-not-zero",
        ),
        pytest.param(
            {
                "prompt_tokens": 2006,
                "completion_tokens": 300,
                "prompt_tokens_details": {"cached_tokens": 1920},
            },
            Usage(2006, 1920, None, None, None, 300, "reported"),
            id="openai-chat-input-includes-cached",
        ),
        pytest.param(
            {"prompt_tokens": 50, "completion_tokens": 5},
            Usage(50, None, None, None, None, 5, "reported"),
            id="openai-chat-without-details",
        ),
        pytest.param(
            {
                "input_tokens": 4000,
                "input_tokens_details": {"cached_tokens": 2048, "cache_write_tokens": 1024},
                "output_tokens": 10,
            },
            Usage(4000, 2048, 1024, None, None, 10, "reported"),
            id="openai-responses",
        ),
        pytest.param(
            {
                "prompt_tokens": 1000,
                "prompt_cache_hit_tokens": 896,
                "prompt_cache_miss_tokens": 104,
                "completion_tokens": 9,
            },
            Usage(1000, 896, None, None, None, 9, "reported"),
            id="deepseek",
        ),
        pytest.param(
            {"prompt_cache_hit_tokens": 896, "prompt_cache_miss_tokens": 104},
            Usage(1000, 896, None, None, None, None, "derived"),
            id="deepseek-hit-plus-miss",
        ),
        pytest.param(
            {
                "promptTokenCount": 9000,
                "cachedContentTokenCount": 8000,
                "candidatesTokenCount": 50,
                "thoughtsTokenCount": 25,
            },
            Usage(9000, 8000, None, None, None, 75, "reported"),
            id="gemini-thoughts-are-output",
        ),
    ],
)
def test_usage_is_normalized_to_inclusive_input(usage, expected):
    assert normalize_usage(usage) == expected


@pytest.mark.parametrize("usage", [None, {}, "x", [1], {"unrelated": 1}])
def test_nothing_reported_is_none(usage):
    assert normalize_usage(usage) is None


CORRUPT = [
    pytest.param("12", id="string"),
    pytest.param(-1, id="negative"),
    pytest.param(float("nan"), id="nan"),
    pytest.param(json.loads("1e400"), id="1e400-is-infinite"),
    pytest.param(10**8, id="a-hundred-million"),
    pytest.param(10**15, id="ten-to-the-15"),
    pytest.param(12.5, id="fractional"),
    pytest.param(True, id="bool"),
    pytest.param([3], id="list"),
]


@pytest.mark.parametrize("bad", CORRUPT)
@pytest.mark.parametrize(
    "field", ["cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens"]
)
def test_corrupt_anthropic_counts_never_make_a_derived_input(field, bad):
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": 200_000,
        "cache_creation_input_tokens": 500,
        "output_tokens": 9,
        field: bad,
    }
    with pytest.raises(UsageError, match=rf"`usage\.{field}`") as caught:
        normalize_usage(usage)
    assert caught.value.field == field
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("bad", CORRUPT)
@pytest.mark.parametrize(
    ("usage", "field"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 1}, "prompt_tokens"),
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0}},
            "prompt_tokens_details.cached_tokens",
        ),
        ({"prompt_cache_hit_tokens": 1, "prompt_cache_miss_tokens": 2}, "prompt_cache_hit_tokens"),
        ({"promptTokenCount": 9, "cachedContentTokenCount": 1}, "cachedContentTokenCount"),
        (
            {"input_tokens": 9, "cache_read_input_tokens": 1, "cache_creation": {}},
            "cache_creation.ephemeral_1h_input_tokens",
        ),
    ],
)
def test_corrupt_counts_of_every_shape_name_the_field(usage, field, bad):
    *parents, leaf = field.split(".")
    target = usage
    for key in parents:
        target = target[key]
    target[leaf] = bad
    with pytest.raises(UsageError, match=rf"`usage\.{field}`"):
        normalize_usage(usage)


def test_a_container_of_the_wrong_type_is_corrupt():
    with pytest.raises(UsageError, match=r"`usage\.prompt_tokens_details`"):
        normalize_usage({"prompt_tokens": 10, "prompt_tokens_details": "cached"})


def test_null_counts_and_containers_are_not_reported():
    usage = normalize_usage(
        {"prompt_tokens": 10, "completion_tokens": None, "prompt_tokens_details": None}
    )
    assert usage == Usage(10, None, None, None, None, None, "reported")


@pytest.mark.parametrize(
    ("count", "kept"),
    [(10**8 - 1, 10**8 - 1), (0, 0), (1000.0, 1000)],
    ids=["just-below-the-cap", "zero", "integral-float"],
)
def test_the_sanity_cap_and_whole_floats(count, kept):
    usage = normalize_usage({"prompt_tokens": count})
    assert usage.input_tokens == kept
    assert isinstance(usage.input_tokens, int)


def test_lenient_mode_nulls_the_whole_usage_and_says_why():
    with lenient_usage() as problems:
        usage = normalize_usage(
            {"input_tokens": 3, "cache_read_input_tokens": "200000", "output_tokens": 1}
        )
    assert usage is None
    assert len(problems) == 1
    assert "`usage.cache_read_input_tokens`" in problems[0]
    with pytest.raises(UsageError):  # the lenient scope ended
        normalize_usage({"input_tokens": "3", "cache_read_input_tokens": 1})


def test_litellm_shape_for_claude_is_inclusive_as_reported():
    # LiteLLM's OpenAI-style usage for a Claude call: prompt_tokens already inclusive
    usage = normalize_usage(
        {
            "prompt_tokens": 5312,
            "completion_tokens": 40,
            "cache_read_input_tokens": 5000,
            "cache_creation_input_tokens": 300,
        }
    )
    assert usage == Usage(5312, 5000, 300, None, None, 40, "reported")


def test_breakdown_only_writes_add_up_the_5m_and_1h_parts():
    usage = normalize_usage(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 1000,
            "cache_creation": {"ephemeral_5m_input_tokens": 70, "ephemeral_1h_input_tokens": 30},
            "output_tokens": 2,
        }
    )
    assert usage == Usage(1110, 1000, 100, 70, 30, 2, "derived")


def test_breakdown_with_only_one_ttl_reported():
    usage = normalize_usage(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_1h_input_tokens": 30},
        }
    )
    assert usage.cache_write_tokens == 30
    assert usage.cache_write_5m_tokens is None
    assert usage.input_tokens == 40
    assert not math.isnan(usage.input_tokens)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        pytest.param(
            {"input_tokens": 5, "cache_read_input_tokens": 100},
            Usage(105, 100, None, None, None, None, "derived"),
            id="anthropic-with-only-the-read-field",
        ),
        pytest.param(
            {"input_tokens": 5, "cache_creation_input_tokens": 40},
            Usage(45, None, 40, None, None, None, "derived"),
            id="anthropic-with-only-the-write-field",
        ),
        pytest.param(
            {"prompt_cache_miss_tokens": 104},
            Usage(104, None, None, None, None, None, "derived"),
            id="deepseek-with-only-misses",
        ),
        pytest.param(
            {"promptTokenCount": 9000},
            Usage(9000, None, None, None, None, None, "reported"),
            id="gemini-without-cache-or-output-is-not-zero",
        ),
        pytest.param(
            {"cachedContentTokenCount": 10},
            Usage(None, 10, None, None, None, None, "reported"),
            id="gemini-with-only-the-cached-count",
        ),
        pytest.param(
            {"prompt_tokens": 3000, "prompt_tokens_details": {"cache_write_tokens": 1024}},
            Usage(3000, None, 1024, None, None, None, "reported"),
            id="chat-completions-cache-writes",
        ),
        pytest.param(
            {"input_tokens": 10, "prompt_tokens": 999, "cache_read_input_tokens": 100},
            Usage(110, 100, None, None, None, None, "derived"),
            id="anthropic-input-wins-over-a-prompt-count",
        ),
        pytest.param(
            {
                "input_tokens": 1,
                "cache_creation_input_tokens": 300,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 100,
                    "ephemeral_1h_input_tokens": 150,
                },
            },
            Usage(301, None, 300, 100, 150, None, "derived"),
            id="the-reported-write-total-is-kept-over-its-breakdown",
        ),
    ],
)
def test_partial_shapes(usage, expected):
    assert normalize_usage(usage) == expected


def test_the_error_shows_the_bad_value():
    with pytest.raises(UsageError, match=r"is '12'; expected a whole number"):
        normalize_usage({"input_tokens": 1, "cache_read_input_tokens": "12"})
    with pytest.raises(UsageError, match=r"`usage\.prompt_tokens_details` is 'x'"):
        normalize_usage({"prompt_tokens": 1, "prompt_tokens_details": "x"})


def test_the_error_stays_one_short_line_for_a_huge_value():
    with pytest.raises(UsageError) as caught:
        normalize_usage({"input_tokens": "9" * 5000, "cache_read_input_tokens": 1})
    message = str(caught.value)
    assert f"is '{'9' * 36}..." in message  # the value cut to 40 characters
    assert len(message) < 140
    assert message.endswith("from 0 to 99,999,999")
