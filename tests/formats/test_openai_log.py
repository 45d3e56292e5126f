import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect, openai_log

SYSTEM = {"role": "system", "content": "You are terse. " * 40}


def _chat(n):
    messages = [SYSTEM, {"role": "user", "content": "question 0"}]
    for i in range(n):
        messages.append({"role": "assistant", "content": f"answer {i}"})
        messages.append({"role": "user", "content": f"question {i + 1}"})
    return {"model": "gpt-4o", "messages": messages}


def _completion(prompt, cached, created):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": created,
        "model": "gpt-4o-2024-08-06",
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def test_pairs_with_chat_completions(tmp_path):
    lines = [
        json.dumps({"request": _chat(0), "response": _completion(1100, 0, 1767000000)}),
        json.dumps({"request": _chat(1), "response": _completion(1130, 1024, 1767000030)}),
    ]
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert detect(path) == "openai-log"
    session = cacheviz.load(path)
    first, second = session.calls
    assert (first.provider, first.api, first.model) == ("openai", "chat.completions", "gpt-4o")
    assert first.ts.isoformat() == "2025-12-29T09:20:00+00:00"
    assert (
        second.usage.input_tokens,
        second.usage.cache_read_tokens,
        second.usage.cache_write_tokens,
    ) == (1130, 1024, None)
    calls = session.analyze().calls
    assert calls["tokens_exact"].all()
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]


def _capture(url, body, raw, ts):
    return json.dumps(
        {
            "request": {
                "timestamp": ts,
                "method": "POST",
                "url": url,
                "headers": {"authorization": "Bearer sk-x"},
                "body": body,
            },
            "response": {"status_code": 200, "body": None, "body_raw": raw},
        }
    )


def test_http_captures_with_streamed_usage(tmp_path):
    chat_stream = 'data: {"choices":[{"delta":{"content":"hi"}}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}\n\ndata: [DONE]\n\n'
    responses_stream = (
        'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"x"}\n\n'
        'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":2100,'
        '"input_tokens_details":{"cached_tokens":2048,"cache_write_tokens":0},"output_tokens":5}}}\n\n'
    )
    body = {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [{"role": "user", "content": "hi"}],
    }
    lines = [
        _capture("https://api.openai.com/v1/chat/completions", _chat(0), chat_stream, 1767000000.5),
        _capture("https://api.openai.com/v1/responses", body, responses_stream, 1767000001.0),
        _capture("https://api.openai.com/v1/models", {}, "", 1767000002.0),
    ]
    path = tmp_path / "proxy.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert detect(path) == "openai-log"
    session = cacheviz.load(path)
    chat, responses = session.calls
    assert (chat.api, chat.usage.input_tokens) == ("chat.completions", 50)
    assert (
        responses.api,
        responses.usage.cache_read_tokens,
        responses.usage.cache_write_tokens,
    ) == ("responses", 2048, 0)
    assert session.ignored == {"request to another endpoint": 1}
    assert "sk-x" not in repr(session.calls) + repr(session.contents)


def test_the_other_formats_are_not_taken(tmp_path):
    native = tmp_path / "native.jsonl"
    native.write_text(
        json.dumps(
            {
                "ts": None,
                "provider": "openai",
                "request": _chat(0),
                "response": _completion(1, 0, 1),
            }
        )
        + "\n"
    )
    assert detect(native) == "cacheviz"
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        _capture(
            "https://api.anthropic.com/v1/messages", {"model": "claude-x", "messages": []}, "", 1.0
        )
        + "\n"
    )
    assert detect(trace) == "claude-trace"


def test_sse_usage_ignores_junk():
    assert openai_log.sse_usage("data: nope\n\ndata: [DONE]\n") is None


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(0, 400), junk=st.binary(max_size=12))
def test_fuzzed_logs_load_or_fail_in_one_line(tmp_path, cut, junk, loads_or_fails_cleanly):
    good = (json.dumps({"request": _chat(1), "response": _completion(10, 0, 5)}) + "\n").encode()
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(good + good[:cut] + junk + b"\n" + good)
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="openai-log", errors=e))


def test_bad_line(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text(
        json.dumps({"request": _chat(0), "response": _completion(1, 0, 1)})
        + '\n{"request": {"model": "gpt-4o"}, "response": {}}\n'
    )
    with pytest.raises(TranscriptError, match=r"calls\.jsonl:2: request has no `messages`"):
        cacheviz.load(path)
