"""mitmproxy flow dumps (.mitm): tnetstring flows of Anthropic / OpenAI traffic."""

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz import cli
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect
from cacheviz.formats.mitm import TNetStringError, parse


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


# -- flows in the layouts mitmproxy itself writes ---------------------------------------
# The flow layout changed across mitmproxy versions (mitmproxy/io/compat.py upgrades old
# ones): 0.18 nests addresses in objects and has no `authority`; flow format 7 (mitmproxy
# 5) keeps a flow whose response never came (`response: null`) and HTTP/2 pseudo-headers;
# 18 and 20 (mitmproxy 9, 10) add `authority` beside `host` (which may be the IP address),
# `websocket`, `comment`, and a streamed response's `content: null` with an `error`.

CERT = b"-----BEGIN CERTIFICATE-----\nMIIB" + b"A" * 60 + b"\n-----END CERTIFICATE-----\n"
PAGE = b"<!doctype html>\n<html><head><title>Example</title></head></html>\n"


def _address_018(host, port):
    return {"address": [host, port], "use_ipv6": False}


def _flow_018(n):
    server = {
        "address": _address_018("www.example.org", 443),
        "ip_address": _address_018("192.0.2.10", 443),
        "source_address": _address_018("10.0.0.5", 52775 + n),
        "cert": CERT,
        "sni": "www.example.org",
        "ssl_established": True,
        "timestamp_start": 1482157523.9 + n,
        "timestamp_tcp_setup": 1482157524.0 + n,
        "timestamp_ssl_setup": 1482157524.2 + n,
        "timestamp_end": None,
    }
    return {
        "marked": False,
        "client_conn": {
            "address": _address_018("127.0.0.1", 52774 + n),
            "clientcert": None,
            "ssl_established": True,
            "timestamp_start": 1482157522.8 + n,
            "timestamp_ssl_setup": 1482157523.9 + n,
            "timestamp_end": None,
        },
        "server_conn": {**server, "via": {**server, "via": None}},
        "type": "http",
        "id": f"55367415-10f5-4938-b69f-8a523394f94{n}",
        "intercepted": False,
        "error": None,
        "version": [0, 18, 2],
        "request": {
            "first_line_format": "relative",
            "method": b"GET",
            "scheme": b"https",
            "host": b"www.example.org",
            "port": 443,
            "path": b"/",
            "http_version": b"HTTP/1.1",
            "headers": [[b"User-Agent", b"curl/7.35.0"], [b"Host", b"www.example.org"]],
            "content": b"",
            "timestamp_start": 1482157523.9 + n,
            "timestamp_end": 1482157523.9 + n,
            "is_replay": False,
            "stickycookie": False,
            "stickyauth": False,
        },
        "response": {
            "http_version": b"HTTP/1.1",
            "status_code": 200,
            "reason": b"OK",
            "headers": [[b"Content-Type", b"text/html"], [b"Content-Length", b"%d" % len(PAGE)]],
            "content": PAGE,
            "timestamp_start": None,
            "timestamp_end": None,
            "is_replay": False,
        },
    }


def _conn(n, *, client):
    """A connection as mitmproxy 5 and later store it (addresses as [host, port])."""
    conn = {
        "id": f"17a71f2a-a411-4a8f-bad5-690c2668ef{n:02d}",
        "address": ["::ffff:127.0.0.1", 53976 + n, 0] if client else ["www.example.org", 443],
        "sni": "www.example.org",
        "alpn_proto_negotiated": b"h2",
        "tls_established": True,
        "tls_version": "TLSv1.3",
        "timestamp_start": 1591300236.68 + n,
        "timestamp_tls_setup": 1591300237.18 + n,
        "timestamp_end": None,
    }
    if client:
        return {**conn, "clientcert": None, "mitmcert": CERT, "tls_extensions": [[0, b"\x00"]]}
    return {**conn, "cert": CERT, "ip_address": ["192.0.2.10", 443], "via": None}


def _flow_7(n):
    """mitmproxy 5 (flow format 7): an HTTP/2 request whose response never came."""
    return {
        "version": 7,
        "mode": "transparent",
        "response": None,
        "request": {
            "first_line_format": "relative",
            "method": b"GET",
            "scheme": b"https",
            "host": b"www.example.org",
            "port": 443,
            "path": b"/ad?width=400&height=300",
            "http_version": b"HTTP/2.0",
            "headers": [[b":authority", b"www.example.org"], [b"accept", b"*/*"]],
            "content": b"",
            "timestamp_start": 1591300243.26 + n,
            "timestamp_end": 1591300243.37 + n,
            "is_replay": False,
        },
        "client_conn": _conn(n, client=True),
        "server_conn": _conn(n, client=False),
        "error": None,
        "intercepted": False,
        "marked": False,
        "metadata": {},
        "id": f"665e312b-c1f6-4f86-93c2-be32c5c3af7{n}",
        "type": "http",
    }


def _flow_modern(n, version, *, streamed):
    """mitmproxy 9/10 (flow formats 18, 20): `authority` beside `host`, HTTP/2."""
    content_type = b"text/event-stream; charset=utf-8" if streamed else b"text/html"
    response = {
        "http_version": b"HTTP/2.0",
        "status_code": 200,
        "reason": b"",
        "headers": [[b"content-type", content_type], [b"cache-control", b"no-cache"]],
        "content": None if streamed else PAGE,  # a streamed body is not kept
        "trailers": None,
        "timestamp_start": 1699167601.79 + n,
        "timestamp_end": None if streamed else 1699167601.85 + n,
    }
    conn = {
        "id": f"d19eddc3-ebfe-4f6a-8847-df502419a5{n:02d}",
        "peername": ["10.0.0.4", 47050 + n],
        "sockname": ["192.0.2.10", 443],
        "alpn": b"h2",
        "alpn_offers": [b"h2", b"http/1.1"],
        "certificate_list": [],
        "cipher": "ECDHE-RSA-AES128-GCM-SHA256",
        "cipher_list": [],
        "error": None,
        "sni": "stream.example.org",
        "tls": True,
        "tls_version": "TLSv1.2",
        "transport_protocol": "tcp",
        "timestamp_start": 1699167601.59 + n,
        "timestamp_tls_setup": 1699167601.73 + n,
        "timestamp_end": 1699167634.15 + n,
    }
    error = {"msg": "stream reset by client (CANCEL)", "timestamp": 1699167633.1 + n}
    return {
        "websocket": None,
        "response": response,
        "request": {
            "authority": b"stream.example.org",
            "host": "192.0.2.10",  # the address connected to; the name is the authority
            "port": 443,
            "scheme": b"https",
            "method": b"GET",
            "path": f"/meval/{n}".encode(),
            "http_version": b"HTTP/2.0",
            "headers": [[b"accept", b"text/event-stream"], [b"authorization", b"api_key x"]],
            "content": b"",
            "trailers": None,
            "timestamp_start": 1699167601.738 + n,
            "timestamp_end": 1699167601.739 + n,
        },
        "client_conn": {**conn, "mitmcert": None, "proxy_mode": "wireguard"},
        "server_conn": {**conn, "address": ["192.0.2.10", 443], "via": None},
        "error": error if streamed else None,
        "id": f"bd854f99-a155-4d5b-849c-a3619ab386b{n}",
        "type": "http",
        "version": version,
        "comment": "",
        "intercepted": False,
        "is_replay": None,
        "marked": "",
        "metadata": {},
        "backup": None,
        "timestamp_created": 1699167601.7383 + n,
    }


LAYOUTS = {
    "mitmproxy 0.18": [_flow_018(0)],
    "mitmproxy 5, format 7": [_flow_7(0)],
    "mitmproxy 10, format 20, streamed": [_flow_modern(n, 20, streamed=True) for n in (0, 1)],
    "mitmproxy 9, format 18": [_flow_modern(n, 18, streamed=False) for n in (0, 1)],
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_dumps_in_mitmproxys_own_layouts_parse(tmp_path, layout):
    from cacheviz.formats.mitm import _flows

    flows = LAYOUTS[layout]
    path = _dump(tmp_path, flows)
    parsed = [flow for _, flow in _flows(path.read_bytes())]
    assert parsed == flows  # every value as written: text, bytes, lists, null, floats
    assert detect(path) == "mitmproxy"
    with pytest.raises(TranscriptError, match=f"none of its {len(flows)} flow"):
        cacheviz.load(path)  # browser traffic, no API call: said in one line


def test_an_api_exchange_in_mitmproxy_10s_layout(tmp_path):
    flow = _flow_modern(0, 20, streamed=False)
    flow["request"].update(
        authority=b"api.anthropic.com",
        host="160.79.104.10",
        method=b"POST",
        path=b"/v1/messages?beta=true",
        content=BODY_1,
        headers=[[b"x-api-key", b"sk-ant-secret"], [b"content-type", b"application/json"]],
    )
    flow["response"].update(
        content=json.dumps({"id": "msg_1", "usage": USAGE_1}).encode(),
        headers=[[b"content-type", b"application/json"]],
    )
    [call] = cacheviz.load(_dump(tmp_path, [flow])).calls
    assert call.provider == "anthropic" and call.usage.input_tokens == 1205
    assert call.meta["response_id"] == "msg_1"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_a_decompression_bomb_stops_at_the_limit_in_one_line(tmp_path, monkeypatch, encoding):
    """Issue 29 item 8: a body that inflates past the decompressed-size limit (lowered
    to 1 MiB here; 16 MiB of zeros in a few KiB) refuses the file, naming it and the
    limit, without inflating the rest; a body under the limit reads as before."""
    import zlib

    from cacheviz._limits import LimitError

    monkeypatch.setenv("CACHEVIZ_MAX_INFLATE_MB", "1")
    answer = json.dumps({"id": "m", "type": "message", "usage": USAGE_1}).encode()
    padded = answer + b" " * (16 << 20)
    if encoding == "gzip":
        bomb = gzip.compress(padded)
    else:
        packer = zlib.compressobj(9, zlib.DEFLATED, 15 if encoding == "deflate" else -15)
        bomb = packer.compress(padded) + packer.flush()
    assert len(bomb) < 64 << 10
    flow = _flow("api.anthropic.com", "/v1/messages", BODY_1, answer, ts=1)
    flow["response"]["content"] = bomb
    name = "deflate" if encoding != "gzip" else "gzip"
    flow["response"]["headers"].append([b"content-encoding", name.encode()])
    path = _dump(tmp_path, [flow])
    with pytest.raises(LimitError) as caught:
        cacheviz.load(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    assert "decompressed-size limit of 1 MiB" in message and "CACHEVIZ_MAX_INFLATE_MB" in message
    monkeypatch.setenv("CACHEVIZ_MAX_INFLATE_MB", "32")
    assert cacheviz.load(path).calls[0].usage.output_tokens == 9
