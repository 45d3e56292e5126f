import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import TranscriptError
from cacheviz.formats import claude_trace, detect

SECRET = "sk-ant-api03-SECRETSECRET"
TRACE = "anthropic_raw/badlogic__lemmy__test-traffic.first10.jsonl"


def _sse(usage, output):
    events = [
        {"type": "message_start", "message": {"id": "m", "usage": usage}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": output},
        },
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def _line(
    ts,
    messages,
    *,
    url="https://api.anthropic.com/v1/messages?beta=true",
    status=200,
    body=None,
    raw=None,
):
    request = {
        "timestamp": ts,
        "method": "POST",
        "url": url,
        "headers": {"authorization": f"Bearer {SECRET}", "x-api-key": SECRET},
        "body": {
            "model": "claude-sonnet-4-5",
            "system": [{"type": "text", "text": "Be brief."}],
            "messages": messages,
        },
    }
    response = {"timestamp": ts + 1, "status_code": status, "headers": {}, "body": body}
    if raw is not None:
        response["body_raw"] = raw
    return json.dumps(
        {"request": request, "response": response, "logged_at": "2026-01-01T00:00:00"}
    )


MSGS = [{"role": "user", "content": "hello"}]
MORE = [*MSGS, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "again"}]


@pytest.fixture
def capture(tmp_path):
    usage = {
        "input_tokens": 5,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
    }
    lines = [
        # written in completion order: the second request finished first
        _line(
            1000.5,
            MORE,
            raw=_sse(
                {**usage, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}, 9
            ),
        ),
        _line(1000.0, MSGS, body={"usage": usage}),
        _line(1001.0, MSGS, url="https://api.anthropic.com/v1/messages/count_tokens"),
        _line(1002.0, MSGS, status=529, body={"type": "error"}),
        _line(1003.0, MSGS, url="https://api.anthropic.com/api/oauth/profile"),
    ]
    path = tmp_path / "log-2026.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_detected_and_read_in_request_order(capture):
    assert detect(capture) == "claude-trace"
    session = cacheviz.load(capture)
    assert [c.line for c in session.calls] == [2, 1]
    first, second = session.calls
    assert (first.usage.input_tokens, first.usage.cache_write_tokens) == (105, 100)
    # streaming: message_start usage with message_delta's final output_tokens
    assert (
        second.usage.input_tokens,
        second.usage.cache_read_tokens,
        second.usage.output_tokens,
    ) == (112, 100, 9)
    assert session.ignored == {"non-Messages request": 2, "HTTP 529 response": 1}
    analysis = session.analyze()
    assert analysis.calls["prefix_tokens"][1] == analysis.calls["input_tokens"][0]


def test_headers_are_never_kept(capture):
    session = cacheviz.load(capture)
    kept = repr(session.calls) + repr(session.contents) + repr([c.meta for c in session.calls])
    assert SECRET not in kept


def test_a_bad_line_names_the_line_and_never_prints_headers(capture):
    lines = capture.read_text().splitlines()
    lines[1] = lines[1].replace('"messages": [', '"messages": [}', 1)
    capture.write_text("\n".join(lines) + "\n")
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(capture)
    assert ":2: not valid JSON" in str(info.value)
    assert SECRET not in str(info.value)
    assert "\n" not in str(info.value)


def test_sse_usage_tolerates_junk():
    assert claude_trace.sse_usage("data: {oops\n\ndata: [1]\n\n") is None
    text = _sse({"input_tokens": 3, "output_tokens": 1}, 4)
    assert claude_trace.sse_usage(text) == {"input_tokens": 3, "output_tokens": 4}


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(0, 2000), junk=st.binary(max_size=20))
def test_fuzzed_captures_load_or_fail_in_one_line(capture, cut, junk, loads_or_fails_cleanly):
    good = capture.read_bytes()
    path = capture.with_name("fuzz.jsonl")
    path.write_bytes(good[: len(good) // 2] + junk + good[len(good) // 2 + cut % 50 :])
    loads_or_fails_cleanly(
        path, lambda p, e: cacheviz.load(p, format="claude-trace", errors=e), secret=SECRET
    )


def test_real_capture(realdata):
    path = realdata / TRACE
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    expected_calls = sum(
        "/v1/messages" in r["request"]["url"] and r["response"]["status_code"] == 200 for r in rows
    )
    expected_input = 0
    for row in rows:
        response = row["response"]
        usage = (
            response["body"]["usage"]
            if isinstance(response.get("body"), dict)
            else claude_trace.sse_usage(response["body_raw"])
        )
        expected_input += (
            usage["input_tokens"]
            + usage["cache_read_input_tokens"]
            + usage["cache_creation_input_tokens"]
        )
    session = cacheviz.load(path)
    assert session.format == "claude-trace"
    calls = session.analyze().calls
    assert calls.height == expected_calls == 10
    assert calls["reported_input_tokens"].sum() == expected_input
    assert calls["ts"].is_sorted()
