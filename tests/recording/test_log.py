"""The recording core without any HTTP library: bodies, redaction, usage from streams, lines."""

import gzip
import json

import pytest
from fake_provider import ANTHROPIC_FINAL_OUTPUT, ANTHROPIC_USAGE, anthropic_events, chat_events

from cacheviz import CacheVizWarning
from cacheviz.formats import native
from cacheviz.recording._log import Exchange, LogWriter, redact_body

SECRET = "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt"


def test_a_body_without_secrets_keeps_its_bytes():
    text = '{"model": "m",  "messages":[{"role":"user","content":"caf\\u00e9"}]}'
    assert redact_body(text) is text


def test_a_secret_is_redacted_and_the_other_bytes_kept():
    text = f'{{"model": "m",  "system": "key {SECRET} here", "messages":[]}}'
    assert redact_body(text) == '{"model": "m",  "system": "key [REDACTED] here", "messages":[]}'


def test_a_match_that_would_cut_an_escape_falls_back_to_the_parsed_body():
    # the field pattern stops at a quote: on the JSON text it would eat the backslash of \"
    text = '{"content": "password=abcdefghijklmnop\\"x"}'
    redacted = redact_body(text)
    assert json.loads(redacted) == {"content": 'password=[REDACTED]"x'}


def test_a_custom_redactor_and_none():
    text = '{"content": "internal-host-42"}'
    assert (
        redact_body(text, lambda s: s.replace("internal-host-42", "HOST")) == '{"content": "HOST"}'
    )
    assert redact_body(f'{{"a": "{SECRET}"}}', None) == f'{{"a": "{SECRET}"}}'


def _exchange(
    writer, body=b'{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}'
):
    return Exchange.begin([writer], method="POST", path="/v1/messages", host="", body=body)


def test_usage_from_an_sse_stream_cut_into_single_bytes():
    writer = LogWriter()
    exchange = _exchange(writer)
    exchange.respond(200, "text/event-stream", "")
    stream = b"".join(anthropic_events("claude-sonnet-4-5")).replace(b"\n", b"\r\n")
    for i in range(len(stream)):
        exchange.feed(stream[i : i + 1])
    exchange.finish()
    [line] = writer.lines
    assert json.loads(line)["response"]["usage"] == {
        **ANTHROPIC_USAGE,
        "output_tokens": ANTHROPIC_FINAL_OUTPUT,
    }


def test_a_chat_stream_closed_after_done_is_complete():
    writer = LogWriter()
    exchange = Exchange.begin(
        [writer],
        method="POST",
        path="/v1/chat/completions",
        host="api.openai.com",
        body=b'{"model":"gpt-4o","messages":[]}',
    )
    exchange.respond(200, "text/event-stream", "")
    for event in chat_events("gpt-4o", include_usage=True):
        exchange.feed(event)
    exchange.closed_early()  # SDKs close right after [DONE]
    record = json.loads(writer.lines[0])
    assert record["provider"] == "openai"
    assert "error" not in record["response"]


def test_gzipped_json_and_a_line_the_native_reader_reads(tmp_path):
    writer = LogWriter(tmp_path / "log.jsonl")
    writer.open()
    exchange = _exchange(writer)
    exchange.respond(200, "application/json", "gzip")
    packed = gzip.compress(json.dumps({"usage": ANTHROPIC_USAGE}).encode())
    exchange.feed(packed[:10])
    exchange.feed(packed[10:])
    exchange.finish()
    exchange.finish()  # once only
    writer.close()
    session = native.read(tmp_path / "log.jsonl")
    [call] = session.calls
    assert call.usage.cache_read_tokens == ANTHROPIC_USAGE["cache_read_input_tokens"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/messages/count_tokens", b'{"model":"m"}'),
        ("/v1/messages", b"not json"),
        ("/v1/messages", b"[1]"),
    ],
)
def test_what_is_not_recorded(path, body):
    assert Exchange.begin([LogWriter()], method="POST", path=path, host="", body=body) is None
    assert (
        Exchange.begin([LogWriter()], method="GET", path="/v1/messages", host="", body=b"{}")
        is None
    )


def test_a_full_disk_warns_once(tmp_path):
    writer = LogWriter("/dev/full")
    writer.open()
    with pytest.warns(CacheVizWarning, match="^/dev/full: ") as caught:
        for _ in range(3):
            writer.write('{"a":1}')
        writer.close()
    messages = [str(w.message) for w in caught]
    assert len([m for m in messages if "can't write the request log" in m]) == 1
    assert [m for m in messages if "never written" in m] == [
        "/dev/full: 3 recorded call(s) were never written to the request log "
        "(No space left on device); they are lost"
    ]
    assert writer.written == 3


def test_a_gzip_bomb_from_the_upstream_is_not_inflated_past_the_limit(monkeypatch):
    """Issue 29 item 8: the answer passes as sent; the usage parser stops at the
    decompressed-size limit (lowered to 1 MiB) instead of inflating it all."""
    import tracemalloc

    monkeypatch.setenv("CACHEVIZ_MAX_INFLATE_MB", "1")
    writer = LogWriter()
    exchange = _exchange(writer)
    exchange.respond(200, "application/json", "gzip")
    bomb = gzip.compress(b" " * (64 << 20))  # 64 MiB of spaces in ~64 KiB
    tracemalloc.start()
    try:
        for at in range(0, len(bomb), 8192):
            exchange.feed(bomb[at : at + 8192])
        exchange.finish()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    [line] = writer.lines
    assert json.loads(line)["response"] == {
        "status": 200,
        "usage": None,
        "duration_ms": json.loads(line)["response"]["duration_ms"],
    }


def test_one_huge_sse_event_is_relayed_in_linear_time_and_usage_still_read():
    """Issue 29 item 9: one 64 MiB content event fed in 16 KiB chunks (the audit's
    150 MB event took 201 s: the held text was re-joined for every chunk)."""
    import time

    writer = LogWriter()
    exchange = _exchange(writer)
    exchange.respond(200, "text/event-stream", "")
    events = anthropic_events("claude-sonnet-4-5")
    big = b'data: {"type":"content_block_delta","delta":{"text":"' + b"x" * (64 << 20) + b'"}}\n\n'
    stream = events[0] + big + b"".join(events[1:])
    started = time.perf_counter()
    for at in range(0, len(stream), 16384):
        exchange.feed(stream[at : at + 16384])
    exchange.finish()
    took = time.perf_counter() - started
    assert took < 10  # linear: about a second here; quadratic was minutes
    [line] = writer.lines
    assert json.loads(line)["response"]["usage"] == {
        **ANTHROPIC_USAGE,
        "output_tokens": ANTHROPIC_FINAL_OUTPUT,
    }
