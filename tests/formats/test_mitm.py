"""mitmproxy flow dumps (.mitm): tnetstring flows of Anthropic / OpenAI traffic."""

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz import cli
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect
from cacheviz.formats.mitm import TNetStringError, parse

EXAMPLES = Path("/work/examples/issue18/mitm")  # dumps written by mitmproxy (its test data)


def tnet(value):
    """An independent tnetstring encoder (keys as text, as mitmproxy 7+ writes them)."""
    if value is None:
        return b"0:~"
    if isinstance(value, bool):
        payload, tag = (b"true" if value else b"false"), b"!"
    elif isinstance(value, int):
        payload, tag = str(value).encode(), b"#"
    elif isinstance(value, float):
        payload, tag = repr(value).encode(), b"^"
    elif isinstance(value, bytes):
        payload, tag = value, b","
    elif isinstance(value, str):
        payload, tag = value.encode(), b";"
    elif isinstance(value, list):
        payload, tag = b"".join(tnet(v) for v in value), b"]"
    else:
        payload, tag = b"".join(tnet(k) + tnet(v) for k, v in value.items()), b"}"
    return str(len(payload)).encode() + b":" + payload + tag


def _flow(host, path, body, response_body, *, ts, content_type=b"application/json", gz=False):
    response_headers = [[b"content-type", content_type]]
    if gz:
        response_body = gzip.compress(response_body)
        response_headers.append([b"content-encoding", b"gzip"])
    return {
        "version": 20,
        "type": "http",
        "id": f"f{ts}",
        "request": {
            "host": host,
            "port": 443,
            "method": b"POST",
            "scheme": b"https",
            "authority": host.encode(),
            "path": path.encode(),
            "http_version": b"HTTP/1.1",
            "headers": [[b"x-api-key", b"sk-ant-secret"], [b"content-type", b"application/json"]],
            "content": body,
            "timestamp_start": ts,
            "timestamp_end": ts + 0.1,
        },
        "response": {
            "http_version": b"HTTP/1.1",
            "status_code": 200,
            "reason": b"OK",
            "headers": response_headers,
            "content": response_body,
            "timestamp_start": ts + 1,
            "timestamp_end": ts + 2,
        },
    }


SYSTEM = [
    {"type": "text", "text": "You are careful. " * 80, "cache_control": {"type": "ephemeral"}}
]
# exact bytes as an agent sends them: odd spacing and key order must survive
HEAD = '{"model": "claude-sonnet-4-5",  "max_tokens":1024, "system": ' + json.dumps(SYSTEM)
BODY_1 = (HEAD + ', "messages":[{"role":"user","content":"list files"}]}').encode()
BODY_2 = (
    HEAD + ', "messages":[{"role":"user","content":"list files"},'
    '{"role":"assistant","content":"a.py"},{"role":"user","content":"thanks"}]}'
).encode()
USAGE_1 = {
    "input_tokens": 5,
    "cache_creation_input_tokens": 1200,
    "cache_read_input_tokens": 0,
    "output_tokens": 9,
}
SSE = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":"msg_2","usage":{"input_tokens":8,'
    b'"cache_creation_input_tokens":20,"cache_read_input_tokens":1200,"output_tokens":1}}}\n\n'
    b"event: message_delta\n"
    b'data: {"type":"message_delta","usage":{"output_tokens":33}}\n\n'
)
OPENAI_BODY = b'{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}'
OPENAI_RESPONSE = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-5",
    "usage": {
        "prompt_tokens": 2048,
        "completion_tokens": 4,
        "prompt_tokens_details": {"cached_tokens": 1024},
    },
}


def _dump(tmp_path, flows, name="agent.mitm"):
    path = tmp_path / name
    path.write_bytes(b"".join(tnet(f) for f in flows))
    return path


@pytest.fixture
def dump(tmp_path):
    flows = [
        _flow(
            "api.anthropic.com",
            "/v1/messages?beta=true",
            BODY_1,
            json.dumps({"id": "msg_1", "usage": USAGE_1}).encode(),
            ts=1_750_000_000.0,
            gz=True,
        ),
        _flow("statsig.anthropic.com", "/v1/rgstr", b"{}", b"{}", ts=1_750_000_001.0),
        _flow(
            "api.anthropic.com",
            "/v1/messages",
            BODY_2,
            SSE,
            ts=1_750_000_002.0,
            content_type=b"text/event-stream",
        ),
        _flow(
            "api.openai.com",
            "/v1/chat/completions",
            OPENAI_BODY,
            json.dumps(OPENAI_RESPONSE).encode(),
            ts=1_750_000_003.0,
        ),
    ]
    return _dump(tmp_path, flows)


def test_tnetstrings_parse_as_written():
    value = {"a": [1, 2.5, None, True, b"x", "é"], "b": {}}
    assert parse(tnet(value)) == (value, len(tnet(value)))
    with pytest.raises(TNetStringError, match="ends early"):
        parse(tnet(value)[:-3])


def test_exchanges_are_read_with_their_bytes_and_usage(dump):
    assert detect(dump) == "mitmproxy"
    session = cacheviz.load(dump)
    assert [c.provider for c in session.calls] == ["anthropic", "anthropic", "openai"]
    assert session.ignored == {"flow to another endpoint": 1}
    first, second, third = session.calls
    assert first.usage.input_tokens == 1205 and first.meta["response_id"] == "msg_1"
    assert second.usage.cache_read_tokens == 1200 and second.usage.output_tokens == 33
    assert third.usage.cache_read_tokens == 1024
    assert first.breakpoints  # cache_control as sent
    raw = b"".join(session.contents[h].raw for h in first.hashes)
    assert b'"list files"' in raw
    analysis = session.analyze()
    calls = analysis.calls
    assert not calls["reconstructed"].any()
    assert calls["prefix_tokens"][1] > 0.9 * calls["input_tokens"][0]  # the system prompt and turn
    totals = analysis.summary()["reported_totals"]
    assert totals["input_tokens"] == 1205 + 1228 + 2048
    assert totals["output_tokens"] == 9 + 33 + 4
    text = json.dumps(analysis.summary())
    assert "sk-ant-secret" not in text  # headers are never kept


def test_a_cut_dump_keeps_the_flows_before_the_cut(dump):
    data = dump.read_bytes()
    dump.write_bytes(data[: len(data) - 40])
    with pytest.raises(TranscriptError, match=r":4: not a tnetstring: .*ends early"):
        cacheviz.load(dump)
    with pytest.warns(cacheviz.errors.CacheVizWarning, match="skipped 1 bad line"):
        session = cacheviz.load(dump, errors="skip")
    assert len(session.calls) == 2


def test_a_dump_without_api_traffic_says_so(tmp_path):
    path = _dump(tmp_path, [_flow("example.com", "/", b"", b"<html>", ts=1.0)])
    with pytest.raises(TranscriptError, match="none of its 1 flow"):
        cacheviz.load(path)


def test_the_cli_reads_a_dump(dump, capsys):
    assert cli.main(["summary", str(dump), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "mitmproxy" and len(doc["calls"]) == 3


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_dumps_load_or_fail_in_one_line(dump, data, loads_or_fails_cleanly):
    raw = dump.read_bytes()
    at = data.draw(st.integers(0, len(raw) - 1))
    mutated = data.draw(
        st.one_of(
            st.just(raw[:at]),
            st.binary(max_size=8).map(lambda b: raw[:at] + b + raw[at + len(b) :]),
            st.just(raw.replace(b"7:content,", b"7:contenx,", 1)),
            st.just(raw.replace(b"gzip", b"zstd", 1)),
            st.just(b"9" * 20 + b":" + raw),
        )
    )
    path = dump.with_name("fuzz.mitm")
    path.write_bytes(mutated)
    loads_or_fails_cleanly(
        path, lambda p, e: cacheviz.load(p, format="mitmproxy", errors=e), secret="sk-ant-secret"
    )


@pytest.mark.parametrize(
    ("name", "flows"),
    [
        ("dumpfile-018.mitm", 1),
        ("dumpfile-019.mitm", 1),
        ("event_stream.mitm", 2),
        ("successful_log.mitm", 2),
    ],
)
def test_dumps_written_by_mitmproxy_parse(name, flows):
    path = EXAMPLES / name
    if not path.is_file():
        pytest.skip(f"{path} is not present (mitmproxy's own test data, kept outside the repo)")
    from cacheviz.formats.mitm import _flows

    parsed = [flow for _, flow in _flows(path.read_bytes())]
    assert len(parsed) == flows and all(isinstance(f, dict) and "request" in f for f in parsed)
    assert detect(path) == "mitmproxy"
    with pytest.raises(TranscriptError, match=f"none of its {flows} flow"):
        cacheviz.load(path)  # browser traffic, no API call: said in one line
