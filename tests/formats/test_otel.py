"""OpenTelemetry GenAI spans: fixtures follow the OpenInference, OpenLLMetry and OTel GenAI
semantic conventions (attribute names as those projects document them)."""

import json

import polars as pl
import pytest

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect

SYSTEM = "You are a careful coding agent. " * 100  # within 10x of the usage reported
TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object"},
    },
}


def _otlp_attr(key, value):
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # OTLP/JSON: int64 as string
    return {"key": key, "value": {"stringValue": value}}


def _openinference_span(turns, start_ns, usage, span_id):
    """An OpenInference LLM span (flattened llm.input_messages.N.message.* attributes)."""
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.provider": "anthropic",
        "llm.system": "anthropic",
        "llm.model_name": "claude-sonnet-4-5",
        "llm.invocation_parameters": json.dumps({"max_tokens": 1024}),
        "llm.tools.0.tool.json_schema": json.dumps(TOOL),
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": SYSTEM,
    }
    for i, (role, text) in enumerate(turns, start=1):
        attributes[f"llm.input_messages.{i}.message.role"] = role
        attributes[f"llm.input_messages.{i}.message.contents.0.message_content.type"] = "text"
        attributes[f"llm.input_messages.{i}.message.contents.0.message_content.text"] = text
    prompt, read, write, completion = usage
    attributes |= {
        "llm.token_count.prompt": prompt,
        "llm.token_count.prompt_details.cache_read": read,
        "llm.token_count.prompt_details.cache_write": write,
        "llm.token_count.completion": completion,
        "llm.token_count.total": prompt + completion,
    }
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "name": "Messages",
        "kind": 3,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + 10**9),
        "attributes": [_otlp_attr(k, v) for k, v in attributes.items()],
    }


def _otlp(spans):
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_otlp_attr("service.name", "agent")]},
                "scopeSpans": [
                    {"scope": {"name": "openinference.instrumentation.anthropic"}, "spans": spans}
                ],
            }
        ]
    }


def test_otlp_json_with_openinference_spans(tmp_path):
    first = [("user", "Fix the failing test.")]
    second = [*first, ("assistant", "Reading tests/test_x.py."), ("user", "Go on.")]
    chain = {
        "spanId": "c0",
        "name": "agent",
        "startTimeUnixNano": "1767000000000000000",
        "attributes": [_otlp_attr("openinference.span.kind", "CHAIN")],
    }
    spans = [
        # exported out of order: the reader orders calls by start time
        _openinference_span(second, 1767000060 * 10**9, (5400, 5000, 300, 40), "b2"),
        chain,
        _openinference_span(first, 1767000000 * 10**9, (5100, 0, 5000, 30), "b1"),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_otlp(spans), indent=2))
    assert detect(path) == "otel"
    session = cacheviz.load(path)
    assert session.ignored == {"non-LLM span": 1}
    calls = session.analyze().calls
    assert calls["provider"].to_list() == ["anthropic", "anthropic"]
    assert calls["api"].to_list() == ["messages", "messages"]
    assert calls["reported_input_tokens"].to_list() == [5100, 5400]  # inclusive, as reported
    assert calls["reported_cache_read_tokens"].to_list() == [0, 5000]
    assert calls["reported_cache_write_tokens"].to_list() == [5000, 300]
    assert calls["reconstructed"].to_list() == [True, True]
    assert calls["ts"][0] < calls["ts"][1]
    segments = session.analyze().segments.filter(pl.col("call") == 1)
    assert segments["part"].to_list() == ["tools", "system", "messages", "messages", "messages"]
    # the second call repeats the first: its prefix reaches past the system prompt
    assert calls["prefix_tokens"][1] >= calls["input_tokens"][0] - 10


def test_openllmetry_span_objects_jsonl(tmp_path):
    def span(n_turns, start):
        attributes = {
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
            "llm.request.type": "chat",
            "llm.request.functions.0.name": "read_file",
            "llm.request.functions.0.description": "Read a file",
            "llm.request.functions.0.parameters": json.dumps({"type": "object"}),
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": SYSTEM,
            "gen_ai.usage.prompt_tokens": 1200 + n_turns,
            "gen_ai.usage.completion_tokens": 9,
        }
        for i in range(1, n_turns + 1):
            attributes[f"gen_ai.prompt.{i}.role"] = "user" if i % 2 else "assistant"
            attributes[f"gen_ai.prompt.{i}.content"] = f"turn {i}"
        return {
            "name": "openai.chat",
            "context": {"trace_id": "0x1", "span_id": f"0x{n_turns}"},
            "start_time": start,
            "attributes": attributes,
        }

    path = tmp_path / "spans.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(s)
            for s in (span(1, "2026-03-02T09:00:00Z"), span(3, "2026-03-02T09:00:30Z"))
        )
    )
    assert detect(path) == "otel"
    analysis = cacheviz.load(path).analyze()
    assert analysis.calls["model"].to_list() == ["gpt-4o", "gpt-4o"]
    assert analysis.calls["api"].to_list() == ["chat.completions", "chat.completions"]
    assert analysis.calls["reported_input_tokens"].to_list() == [1201, 1203]
    assert analysis.calls["reported_cache_read_tokens"].to_list() == [None, None]  # not reported
    assert analysis.calls["n_segments"].to_list() == [3, 5]  # tool + system + turns


def test_input_value_body_in_nested_phoenix_attributes(tmp_path):
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}],
        "tools": [TOOL],
    }
    span = {
        "name": "ChatCompletion",
        "context": {"span_id": "a1", "trace_id": "t1"},
        "start_time": "2026-03-02T09:00:00+00:00",
        "attributes": {
            "openinference": {"span": {"kind": "LLM"}},
            "input": {"value": json.dumps(body), "mime_type": "application/json"},
            "llm": {
                "model_name": "gpt-4o-mini-2024-07-18",
                "token_count": {"prompt": 900, "completion": 3},
            },
        },
    }
    path = tmp_path / "phoenix.jsonl"
    path.write_text(json.dumps(span) + "\n")
    calls = cacheviz.load(path, format="otel").analyze().calls
    assert calls["model"].to_list() == ["gpt-4o-mini"]  # the body's own model
    assert calls["n_segments"].to_list() == [3]
    assert calls["reported_input_tokens"].to_list() == [900]


def test_otel_genai_semconv_messages(tmp_path):
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-haiku-4-5",
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
        "gen_ai.input.messages": json.dumps(
            [
                {"role": "user", "parts": [{"type": "text", "content": "list files"}]},
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "tool_call", "id": "t1", "name": "ls", "arguments": {"path": "."}}
                    ],
                },
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": "t1", "response": "a.py"}],
                },
            ]
        ),
        "gen_ai.usage.input_tokens": 700,
        "gen_ai.usage.cache_read.input_tokens": 512,
        "gen_ai.usage.output_tokens": 5,
    }
    path = tmp_path / "semconv.json"
    path.write_text(
        json.dumps(
            _otlp(
                [
                    {
                        "spanId": "s",
                        "name": "chat",
                        "startTimeUnixNano": "1767000000000000000",
                        "attributes": [_otlp_attr(k, v) for k, v in attributes.items()],
                    }
                ]
            )
        )
    )
    session = cacheviz.load(path)
    [call] = session.calls
    assert (call.provider, call.api) == ("anthropic", "messages")
    assert [b.part for b in call.blocks] == ["system", "messages", "messages", "messages"]
    assert call.usage.cache_read_tokens == 512
    assert call.usage.input_tokens == 700


@pytest.mark.parametrize(
    ("named", "model", "provider"),
    [
        ("x_ai", "beta-model-1", "xai"),  # OTel GenAI's well-known value for xAI
        ("gcp.gemini", "tuned-model-7", "google"),
        ("vertex_ai", "claude-sonnet-4-5@20250929", "anthropic"),  # Claude on Vertex AI
        ("aws.bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic"),
        ("azure", "claude-opus-4-1", "anthropic"),  # Claude in Azure AI Foundry
        ("azure.ai.openai", "my-deployment", "openai"),
        ("gcp.vertex_ai", "some-tuned-model", "google"),  # the model says nothing: the cloud
        ("mistral_ai", "mistral-large-latest", "unknown"),  # no rules for it: said, not guessed
    ],
)
def test_otel_provider_names_and_hosting_clouds(tmp_path, named, model, provider):
    """The caching rules are the model vendor's: a cloud hosting it does not replace them."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": named,
        "gen_ai.request.model": model,
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
        ),
        "gen_ai.usage.input_tokens": 700,
        "gen_ai.usage.output_tokens": 5,
    }
    span = {
        "spanId": "s",
        "name": "chat",
        "startTimeUnixNano": "1767000000000000000",
        "attributes": [_otlp_attr(k, v) for k, v in attributes.items()],
    }
    path = tmp_path / "semconv.json"
    path.write_text(json.dumps(_otlp([span])))
    [call] = cacheviz.load(path).calls
    assert call.provider == provider


def test_a_trace_without_llm_calls_is_one_line(tmp_path):
    path = tmp_path / "trace.json"
    span = {
        "spanId": "a",
        "name": "llm",
        "attributes": [
            _otlp_attr("openinference.span.kind", "LLM"),
            _otlp_attr("llm.model_name", "gpt-4o"),
        ],
    }
    path.write_text(json.dumps(_otlp([span])))
    with pytest.raises(TranscriptError, match="no API call could be read") as caught:
        cacheviz.load(path, format="otel")
    assert "\n" not in str(caught.value)


def test_a_bad_line_names_its_line(tmp_path):
    good = {
        "name": "x",
        "context": {"span_id": "1"},
        "attributes": {
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "hi",
        },
    }
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({"name": "no attributes"}) + "\n")
    with pytest.raises(TranscriptError, match=r"spans.jsonl:2: no `attributes`"):
        cacheviz.load(path, format="otel")
    with pytest.warns(CacheVizWarning, match="skipped 1 bad line"):
        assert len(cacheviz.load(path, format="otel", errors="skip").calls) == 1
