import json
from datetime import UTC, datetime

import pytest

from cacheviz.errors import TranscriptError, UnknownModelError
from cacheviz.money.pricing import PriceBook, Rates

M = 1e-6


def test_library_prices_with_the_1h_write():
    rates = PriceBook().rates("anthropic", "claude-sonnet-4-5-20250929")
    assert (
        rates.input,
        rates.cache_read,
        rates.cache_write,
        rates.cache_write_1h,
        rates.output,
    ) == pytest.approx((3 * M, 0.3 * M, 3.75 * M, 6 * M, 15 * M))
    assert rates.source.startswith("genai-prices")


def test_a_one_hour_write_costs_twice_the_input():
    rates = Rates(
        input=3 * M, cache_read=0.3 * M, cache_write=3.75 * M, cache_write_1h=6 * M, output=15 * M
    )
    # 1,000 uncached, 10,000 read, 2,000 written of which 500 for 1h, 100 output
    cost = rates.cost(
        uncached=1000, cache_read=10_000, cache_write=2000, cache_write_1h=500, output=100
    )
    assert cost == pytest.approx((1000 * 3 + 10_000 * 0.3 + 1500 * 3.75 + 500 * 6 + 100 * 15) * M)


def test_missing_cache_prices_bill_at_the_input_rate():
    rates = Rates(input=2 * M, output=8 * M)
    assert rates.cost(uncached=10, cache_read=10, cache_write=10, output=None) == pytest.approx(
        30 * 2 * M
    )


def test_deepseek_peak_and_off_peak_by_time():
    book = PriceBook()
    peak = book.rates(
        "deepseek", "deepseek-flash", at=datetime(2026, 9, 1, 2, 30, tzinfo=UTC)
    )  # Tue 02:30 UTC
    off = book.rates("deepseek", "deepseek-flash", at=datetime(2026, 9, 1, 12, 0, tzinfo=UTC))
    weekend = book.rates(
        "deepseek", "deepseek-flash", at=datetime(2026, 9, 5, 2, 30, tzinfo=UTC)
    )  # Saturday
    assert (peak.input, off.input, weekend.input) == pytest.approx((0.30 * M, 0.15 * M, 0.15 * M))
    assert "peak hours" in peak.source
    # before the V4 change, the V3.2 prices of the overlay apply
    legacy = book.rates("deepseek", "deepseek-chat", at=datetime(2026, 1, 5, 3, tzinfo=UTC))
    assert (legacy.input, legacy.cache_read, legacy.output) == pytest.approx(
        (0.28 * M, 0.028 * M, 0.42 * M)
    )


def test_gemini_storage_comes_from_the_overlay():
    rates = PriceBook().rates("google", "gemini-2.5-pro", prompt_tokens=1000)
    assert rates.storage_hour == pytest.approx(4.5 * M)
    long = PriceBook().rates("google", "gemini-2.5-pro", prompt_tokens=250_000)
    assert long.input == pytest.approx(2 * rates.input)  # the >200k tier


def test_unknown_models_list_close_matches():
    with pytest.raises(
        UnknownModelError,
        match=r"no price for model 'claude-sonet-4-5'.*Close matches: claude-sonnet-4-5.*--prices FILE",
    ):
        PriceBook().rates("anthropic", "claude-sonet-4-5")


def test_user_prices_in_cacheviz_json(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps(
            {
                "models": [
                    {
                        "provider": "openai",
                        "model": "my-finetune",
                        "input_mtok": 4,
                        "cache_read_mtok": 1,
                        "output_mtok": 16,
                    }
                ]
            }
        )
    )
    rates = PriceBook(path).rates("openai", "my-finetune")
    assert (rates.input, rates.cache_read, rates.output) == pytest.approx((4 * M, 1 * M, 16 * M))
    assert str(path) in rates.source


def test_user_prices_in_litellm_format(tmp_path):
    path = tmp_path / "model_prices_and_context_window.json"
    path.write_text(
        json.dumps(
            {
                "sample_spec": {"input_cost_per_token": 0},
                "anthropic/claude-house": {
                    "litellm_provider": "anthropic",
                    "input_cost_per_token": 2e-6,
                    "output_cost_per_token": 1e-5,
                    "cache_read_input_token_cost": 2e-7,
                    "cache_creation_input_token_cost": 2.5e-6,
                },
            }
        )
    )
    rates = PriceBook(path).rates("anthropic", "claude-house")
    assert (rates.input, rates.cache_read, rates.cache_write) == pytest.approx((2e-6, 2e-7, 2.5e-6))
    assert rates.cache_write_1h == pytest.approx(4e-6)  # 2x input, from the overlay's rule


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{oops", "not valid JSON"),
        ('{"models": [{"model": "x"}]}', r"models\[0\]: expected"),
        ("[1]", "not a price file"),
    ],
)
def test_bad_price_files_are_one_line(tmp_path, content, expected):
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(TranscriptError, match=expected) as info:
        PriceBook(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("model", ["deepseek-chat", "deepseek-flash", "deepseek-reasoner"])
@pytest.mark.parametrize(
    "day", [datetime(2025, 3, 4, tzinfo=UTC), datetime(2026, 9, 1, tzinfo=UTC)]
)
@pytest.mark.parametrize("offset", [0, 5.5, -9.5])  # hours; half-hour zones cut UTC hours
@pytest.mark.parametrize("backwards", [False, True])
def test_the_rate_cache_prices_every_minute_as_the_book(model, day, offset, backwards):
    # DeepSeek's time-of-day prices change at 16:30 and 00:30 UTC, its peak at 01:00 and
    # 04:00: the cache may not reuse one call's rates for another across any of them
    from datetime import timedelta, timezone

    from cacheviz.money.pricing import RateCache

    book = PriceBook()
    cache = RateCache(book, "deepseek")
    zone = timezone(timedelta(hours=offset))
    moments = [(day + timedelta(minutes=10 * i)).astimezone(zone) for i in range(6 * 24)]
    for at in reversed(moments) if backwards else moments:
        assert cache(model, at, 1000) == book.rates("deepseek", model, at=at, prompt_tokens=1000)


def test_day_changes_come_from_the_data():
    from cacheviz.money.pricing import day_changes

    assert day_changes("deepseek", "deepseek-chat") == (30.0, 990.0)  # genai-prices' 00:30-16:30
    assert day_changes("deepseek", "deepseek-flash") == ()  # its peak windows start on the hour
    assert day_changes("anthropic", "claude-sonnet-4-5") == ()


def test_aliases_price_an_unpriced_model_as_another_by_date():
    from cacheviz.money.pricing import PriceBook

    book = PriceBook()
    march = datetime(2026, 3, 10, tzinfo=UTC)
    review = book.rates("openai", "codex-auto-review", at=march)
    gpt = book.rates("openai", "gpt-5.4", at=march)
    assert (review.input, review.output) == (gpt.input, gpt.output)
    assert "priced as openai/gpt-5.4" in review.source and "ccusage" in review.source
    october = book.rates("openai", "codex-auto-review", at=datetime(2025, 10, 1, tzinfo=UTC))
    assert "openai/gpt-5-codex" in october.source
    # a third-party model behind an Anthropic-compatible endpoint: its vendor's price
    minimax = book.rates("anthropic", "MiniMax-M2.1")
    own = book.rates("minimax", "MiniMax-M2.1")
    assert (minimax.input, minimax.output) == (own.input, own.output)
    assert "priced as minimax/minimax-m2.1" in minimax.source
    with pytest.raises(UnknownModelError):
        book.rates("anthropic", "minimax-not-a-model-at-all")


def test_grok_models_are_priced_under_xai_and_grok_build_names_as_their_models():
    from cacheviz.money.pricing import comparable_model, known_models, tier_starts

    book = PriceBook()
    at = datetime(2026, 12, 1, tzinfo=UTC)
    assert "grok-4.5" in known_models("xai")  # genai-prices' x-ai list, by the name xai
    for build, model in (("grok-4.5-build", "grok-4.5"), ("grok-4.6-build", "grok-4.6")):
        own, listed = book.rates("xai", build, at=at), book.rates("xai", model, at=at)
        assert (own.input, own.cache_read, own.output) == (
            listed.input,
            listed.cache_read,
            listed.output,
        )
        assert f"priced as xai/{model}" in own.source
    # a Grok model named under another provider (an OpenAI-compatible client) too
    via_openai = book.rates("openai", "grok-4.5-build", at=at)
    assert via_openai.input == book.rates("xai", "grok-4.5", at=at).input
    # xAI's 200k-token tier: a prompt of 200,000 tokens or more (inclusive)
    start = tier_starts("xai", "grok-4.5", at)
    assert start
    below = book.rates("xai", "grok-4.5", at=at, prompt_tokens=start[0])
    above = book.rates("xai", "grok-4.5", at=at, prompt_tokens=start[0] + 1)
    assert start[0] + 1 == 200_000 and above.input == pytest.approx(2 * below.input)
    assert comparable_model("xai", [("anthropic", "claude-sonnet-4-5")]).model == "grok-4.5"


def test_overlay_tiers_price_a_prompt_by_its_size():
    from cacheviz.money.pricing import RateCache, tier_starts

    book = PriceBook()
    assert tier_starts("qwen", "qwen3-coder-plus") == (32000, 128000, 256000)
    small = book.rates("qwen", "qwen3-coder-plus", prompt_tokens=32000)
    large = book.rates("qwen", "qwen3-coder-plus", prompt_tokens=32001)
    assert (small.input, small.cache_read, small.output) == pytest.approx((1e-6, 1e-7, 5e-6))
    assert (large.input, large.cache_read, large.output) == pytest.approx((1.8e-6, 1.8e-7, 9e-6))
    assert "dashscope/qwen3-coder-plus" in large.source
    cache = RateCache(book, "qwen")  # resolved once per tier, by the overlay's boundaries
    assert cache("qwen3-coder-plus", None, 300_000).input == pytest.approx(6e-6)
    assert cache("qwen3-coder-plus", None, 100).input == pytest.approx(1e-6)


def test_a_model_without_a_per_token_price_says_why():
    from cacheviz.money.pricing import unpriced_reason

    with pytest.raises(UnknownModelError, match="membership model"):
        PriceBook().rates("moonshotai", "kimi-for-coding")
    assert "Qwen OAuth" in unpriced_reason("qwen", "coder-model")
    assert unpriced_reason("qwen", "qwen-nothing") == "no price in genai-prices or the overlay"


def test_a_model_listed_without_a_price_says_so_and_is_not_its_own_close_match(monkeypatch):
    # genai-prices lists some models with no per-token price (Gemma on the Gemini API is
    # free of charge): the error said "no price in genai-prices" and offered the model
    # itself as a close match (sweep of a public OpenClaw session)
    from types import SimpleNamespace

    from cacheviz.money import _price_copy

    listed = SimpleNamespace(model_id="free-1", prices=lambda at: SimpleNamespace(input_mtok=None))
    real_lookup, real_models = _price_copy.lookup, _price_copy.models
    monkeypatch.setattr(
        _price_copy, "lookup", lambda p, m: listed if m == "free-1" else real_lookup(p, m)
    )
    monkeypatch.setattr(
        _price_copy, "models", lambda p: [*real_models(p), ("free-1", None), ("free-2", None)]
    )
    with pytest.raises(UnknownModelError) as caught:
        PriceBook().rates("google", "free-1")
    text = str(caught.value)
    assert "genai-prices lists it with no per-token price" in text
    assert "Close matches: free-2." in text and "\n" not in text
