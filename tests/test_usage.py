import pytest

from cacheviz.model import Usage
from cacheviz.usage import normalize_usage


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


def test_non_finite_counts_are_not_reported():
    usage = normalize_usage({"prompt_tokens": float("nan"), "completion_tokens": float("inf")})
    assert usage == Usage(None, None, None, None, None, None, "reported")


def test_wrong_types_are_not_reported_rather_than_crashing():
    usage = normalize_usage(
        {"input_tokens": "12", "output_tokens": True, "cache_read_input_tokens": 5}
    )
    assert usage == Usage(None, 5, None, None, None, None, "derived")
