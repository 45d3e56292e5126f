"""Issue 29 item 11: impossible usage and prices are an error or a warning, never a number.

Hostile inputs built from the audit's description: a cache read above the input that
includes it (a hit ratio of 5,000 %), an OTel count of 10^15 tokens, one request 165x
the size its log shows (calibration), and price files holding NaN, Infinity, 1e308 or a
negative price.
"""

import json

import pytest

import cacheviz
from cacheviz import cli
from cacheviz.errors import CacheVizWarning, TranscriptError, UsageError
from cacheviz.formats.native import record_line
from cacheviz.model import Usage
from cacheviz.reported._usage import check_usage, normalize_usage

SYSTEM = "You are careful. " * 200


def _log(tmp_path, usages, *, model="gpt-4o", provider="openai", api="chat.completions"):
    lines = []
    for i, usage in enumerate(usages):
        body = {
            "model": model,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"question {i}"},
            ],
        }
        ts = f"2026-01-01T00:00:{i:02d}Z"
        lines.append(record_line(body, provider=provider, model=model, api=api, ts=ts, usage=usage))
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("usage", "field"),
    [
        (
            {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 5000}},
            "prompt_tokens_details.cached_tokens",
        ),
        ({"promptTokenCount": 100, "cachedContentTokenCount": 90000}, "cachedContentTokenCount"),
        ({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 11}}, "cached_tokens"),
        ({"prompt_tokens": 10, "prompt_cache_hit_tokens": 50}, "prompt_cache_hit_tokens"),
        (
            {
                "prompt_tokens": 100,
                "prompt_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 60},
            },
            "cached_tokens",
        ),
    ],
    ids=["openai-chat", "gemini", "openai-responses", "deepseek", "read-plus-write"],
)
def test_a_cache_read_above_the_input_that_includes_it_is_an_error(usage, field):
    with pytest.raises(UsageError, match=rf"{field}` is \d+; .*more than the input"):
        normalize_usage(usage)


def test_an_anthropic_input_adds_its_parts_and_is_never_contradictory():
    usage = normalize_usage(
        {"input_tokens": 10, "cache_read_input_tokens": 5000, "cache_creation_input_tokens": 9}
    )
    assert usage.input_tokens == 5019


def test_check_usage_bounds_what_a_reader_built_itself():
    with pytest.raises(UsageError, match="99,999,999"):
        check_usage(Usage(input_tokens=10**15))
    with pytest.raises(UsageError, match="-1"):
        check_usage(Usage(output_tokens=-1))
    assert check_usage(Usage(input_tokens=10**9), limit=10**12).input_tokens == 10**9


def test_the_cli_names_the_line_and_field_and_skip_nulls_that_usage(tmp_path, capsys):
    path = _log(
        tmp_path,
        [
            {"prompt_tokens": 900, "completion_tokens": 5},
            {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 5000}},
        ],
    )
    assert cli.main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{path}:2: field `usage.prompt_tokens_details.cached_tokens` is 5000" in err
    with pytest.warns(CacheVizWarning, match="line 2"):
        session = cacheviz.load(path, errors="skip")
    assert session.calls[1].usage is None
    ratio = session.analyze().calls["reported_cache_read_tokens"].drop_nulls()
    assert ratio.len() == 0


def _otel_span(count):
    """One OTLP/JSON export holding an OpenInference LLM span whose prompt count is ``count``."""
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "hello",
        "llm.token_count.prompt": count,
        "llm.token_count.completion": 5,
    }

    def value(v):
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}

    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "b1",
        "name": "ChatCompletion",
        "startTimeUnixNano": "1767000000000000000",
        "attributes": [{"key": k, "value": value(v)} for k, v in attributes.items()],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


@pytest.mark.parametrize("count", [10**15, 10**19, 12345678901234567890])
def test_an_otel_count_beyond_the_bound_is_one_line_naming_the_attribute(tmp_path, count):
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(_otel_span(count)) + "\n")
    with pytest.raises(TranscriptError) as caught:
        cacheviz.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:1: field `llm.token_count.prompt` is ")
    assert "\n" not in message
    with pytest.warns(CacheVizWarning, match="usage set to null"):
        session = cacheviz.load(path, errors="skip")
    assert session.calls[0].usage is None


def test_a_request_165x_its_logged_size_is_calibrated_with_a_warning(tmp_path):
    path = _log(tmp_path, [{"prompt_tokens": 900}, {"prompt_tokens": 165_000}])
    session = cacheviz.load(path)
    with pytest.warns(CacheVizWarning) as caught:
        calls = session.analyze().calls
    [warning] = [w for w in caught if "the request the log holds" in str(w.message)]
    text = str(warning.message)
    assert "#1 (line 2): 165,000 reported" in text
    assert "\n" not in text
    assert calls["input_tokens"][1] == 165_000  # the report is what was billed


def test_calls_within_the_factor_are_not_named(tmp_path, recwarn):
    path = _log(tmp_path, [{"prompt_tokens": 900}, {"prompt_tokens": 1800}])
    cacheviz.load(path).analyze()
    assert not [w for w in recwarn if "the request the log holds" in str(w.message)]


BAD_PRICES = [
    pytest.param("NaN", id="nan"),
    pytest.param("Infinity", id="infinity"),
    pytest.param("1e308", id="1e308"),
    pytest.param("-3", id="negative"),
    pytest.param('"3"', id="a-string"),
]


@pytest.mark.parametrize("value", BAD_PRICES)
def test_an_absurd_price_in_cacheviz_s_file_is_one_line_naming_file_model_field(
    tmp_path, capsys, value
):
    path = _log(tmp_path, [{"prompt_tokens": 900, "completion_tokens": 5}])
    prices = tmp_path / "prices.json"
    prices.write_text(
        '{"models": [{"model": "gpt-4o", "input_mtok": 2.5, "output_mtok": ' + value + "}]}"
    )
    assert cli.main(["simulate", str(path), "--provider", "openai", "--prices", str(prices)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{prices}: model 'gpt-4o': field `output_mtok` is " in err


@pytest.mark.parametrize("value", BAD_PRICES[:4])
def test_an_absurd_price_in_litellm_s_file_is_one_line_too(tmp_path, value):
    prices = tmp_path / "litellm.json"
    prices.write_text(
        '{"gpt-4o": {"input_cost_per_token": '
        + value
        + ', "output_cost_per_token": 1e-05, "litellm_provider": "openai"}}'
    )
    with pytest.raises(TranscriptError) as caught:
        cacheviz.money.pricing.PriceBook(prices)
    message = str(caught.value)
    assert message.startswith(f"{prices}: model 'gpt-4o': field `input_cost_per_token` is ")
    assert "USD per token" in message


def test_sane_prices_still_load(tmp_path):
    path = _log(tmp_path, [{"prompt_tokens": 900, "completion_tokens": 5}])
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": [{"model": "gpt-4o", "input_mtok": 0, "output_mtok": 600}]}')
    assert cacheviz.load(path).analyze(prices=prices).billed_usd == pytest.approx(5 * 600e-6)
