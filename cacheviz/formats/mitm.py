"""mitmproxy flow dumps (``.mitm``, ``mitmdump -w``): agent traffic as the wire saw it.

A dump is a sequence of tnetstrings (``<length>:<payload><type>``, types ``,`` bytes,
``;`` text, ``#`` integer, ``^`` float, ``!`` boolean, ``~`` null, ``]`` list, ``}``
dictionary), one per flow: ``{type: "http", request: {method, scheme, host, port,
authority, path, headers, content, timestamp_start, ...}, response: {status_code,
headers, content, ...}, ...}``. This module reads them itself (the ``mitmproxy``
package is not needed); bodies are decoded from their ``content-encoding`` (gzip,
deflate; ``br`` when the ``brotli`` package is installed).

Requests to ``/v1/messages`` are read as the claude-trace reader reads Anthropic
exchanges, ``/chat/completions`` and ``/responses`` as the openai-log reader reads
OpenAI HTTP captures: the request body's bytes are kept as sent (system, tools,
``cache_control``), usage comes from the JSON or SSE response. Other flows (telemetry,
token counting, other hosts) are counted and skipped. Errors name the flow by its
position (``file:N`` is the N-th flow); a dump cut short keeps the flows before the cut.
Headers (credentials) are never kept.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cacheviz._limits import INFLATE, LimitError, inflate
from cacheviz.errors import TranscriptError
from cacheviz.formats import claude_trace, openai_log
from cacheviz.formats._body import call_of_line
from cacheviz.formats._lines import LineReader
from cacheviz.model import Call, Session
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import ObjectScan

NAME = "mitmproxy"
DESCRIPTION = "mitmproxy flow dumps (.mitm, tnetstring) of agent traffic to Anthropic / OpenAI"
_MAX_DEPTH = 64
_LENGTH = re.compile(rb"\d{1,12}:")
_EXPECTED = "expected a mitmproxy HTTP flow"


class TNetStringError(ValueError):
    """A tnetstring that does not parse; ``offset`` is where, in bytes."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} at byte {offset}")
        self.offset = offset


def parse(data: bytes, start: int = 0, depth: int = 0, limit: int | None = None) -> tuple[Any, int]:
    """Parse the tnetstring at ``data[start:]``; return it and the offset after it.

    Dictionary keys are text; other strings stay bytes (``;`` strings are text).
    ``limit`` is where the enclosing value ends (the data's end at the top).
    """
    limit = len(data) if limit is None else limit
    if depth > _MAX_DEPTH:
        msg = f"nested more than {_MAX_DEPTH} deep"
        raise TNetStringError(msg, start)
    match = _LENGTH.match(data, start, limit)
    if match is None:
        msg = "expected a length prefix (digits and ':')"
        raise TNetStringError(msg, start)
    begin = match.end()
    end = begin + int(data[start : begin - 1])
    if end >= limit:
        msg = "the data ends early (a cut dump?)"
        raise TNetStringError(msg, start)
    payload, kind = data[begin:end], data[end : end + 1]
    after = end + 1
    if kind == b",":
        return payload, after
    if kind == b";":
        return payload.decode("utf-8", "surrogateescape"), after
    if kind == b"#":
        try:
            return int(payload), after
        except ValueError:
            msg = "an integer that is not a number"
            raise TNetStringError(msg, begin) from None
    if kind == b"^":
        try:
            return float(payload), after
        except ValueError:
            msg = "a float that is not a number"
            raise TNetStringError(msg, begin) from None
    if kind == b"!":
        return payload == b"true", after
    if kind == b"~":
        return None, after
    if kind == b"]":
        items, at = [], begin
        while at < end:
            item, at = parse(data, at, depth + 1, end)
            items.append(item)
        return items, after
    if kind == b"}":
        mapping: dict[str, Any] = {}
        at = begin
        while at < end:
            key, at = parse(data, at, depth + 1, end)
            if at >= end:
                msg = "a dictionary key without a value"
                raise TNetStringError(msg, at)
            value, at = parse(data, at, depth + 1, end)
            name = key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else key
            mapping[str(name)] = value
        return mapping, after
    msg = f"unknown type tag {kind!r}"
    raise TNetStringError(msg, end)


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens a mitmproxy dump (a tnetstring flow with a request)."""
    window = head[: 1 << 16]
    return (
        _LENGTH.match(window) is not None
        and b"7:request" in window
        and b"4:type" in window
        and b"4:http" in window
    )


def _flows(data: bytes) -> Iterator[tuple[int, Any]]:
    """Each top-level value, numbered from 1; a parse error is yielded and ends the dump."""
    at, number = 0, 0
    while at < len(data):
        if data[at : at + 1].isspace():
            at += 1
            continue
        number += 1
        try:
            value, at = parse(data, at)
        except (TNetStringError, RecursionError) as exc:
            yield number, exc
            return
        yield number, value


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return "" if value is None else str(value)


def _header(headers: Any, name: str) -> str:
    for pair in headers if isinstance(headers, list) else []:
        if isinstance(pair, list) and len(pair) == 2 and _text(pair[0]).lower() == name:
            return _text(pair[1]).lower()
    return ""


def _decoded(message: dict[str, Any], what: str) -> bytes | None:
    content = message.get("content")
    if content is None:
        return None
    if not isinstance(content, bytes):
        content = _text(content).encode("utf-8", "surrogateescape")
    encoding = _header(message.get("headers"), "content-encoding")
    try:
        if encoding in ("", "identity"):
            return content
        where = f"the {what} body ({encoding})"
        if encoding in ("gzip", "x-gzip"):
            return inflate(content, 31, where=where)  # bounded: a bomb stops at the limit
        if encoding == "deflate":
            try:
                return inflate(content, zlib.MAX_WBITS, where=where)
            except zlib.error:
                return inflate(content, -zlib.MAX_WBITS, where=where)
        if encoding == "br":
            try:
                import brotli
            except ImportError:
                msg = f"the {what} body is brotli-compressed; install `brotli` to read it"
                raise ValueError(msg) from None
            return _brotli(brotli, content, where)
    except (OSError, EOFError, zlib.error) as exc:
        msg = f"the {what} body does not decompress as {encoding} ({exc})"
        raise ValueError(msg) from None
    msg = f"the {what} body has content-encoding {encoding!r}, which cacheviz can't decode"
    raise ValueError(msg)


def _brotli(brotli: Any, content: bytes, where: str) -> bytes:
    """A brotli body, within the decompressed-size limit.

    Checked piece by piece when the installed ``brotli`` can bound its output, else after.
    """
    limit = int(INFLATE.value())
    decompressor = brotli.Decompressor()
    try:
        out = bytearray(decompressor.process(content, output_buffer_limit=limit + 1))
        while len(out) <= limit and not decompressor.is_finished():
            more = decompressor.process(b"", output_buffer_limit=limit + 1 - len(out))
            if not more:
                break
            out += more
    except TypeError:  # an older brotli: no output_buffer_limit
        out = bytearray(brotli.decompress(content))
    if len(out) > limit:
        msg = f"{where} decompresses to more than the {INFLATE.shown()}"
        raise LimitError(msg)
    return bytes(out)


def _url(request: dict[str, Any]) -> str:
    scheme = _text(request.get("scheme")) or "https"
    host = _text(request.get("authority")) or _text(request.get("host"))
    port = request.get("port")
    if host and ":" not in host and isinstance(port, int) and port not in (80, 443):
        host = f"{host}:{port}"
    return f"{scheme}://{host}{_text(request.get('path'))}"


def _response(response: Any) -> dict[str, Any]:
    """The exchange's response as claude-trace and openai-log read it (no headers)."""
    if not isinstance(response, dict):
        return {}
    out: dict[str, Any] = {"status_code": response.get("status_code")}
    body = _decoded(response, "response")
    text = "" if body is None else body.decode("utf-8", "replace")
    if "event-stream" in _header(response.get("headers"), "content-type"):
        out["body"], out["body_raw"] = None, text
        return out
    try:
        out["body"] = json.loads(text) if text else None
    except (ValueError, RecursionError):
        out["body"] = None
    return out


def _line(flow: dict[str, Any]) -> tuple[str, str] | None:
    """The flow as one capture line (request body spliced in as sent) and its endpoint."""
    request = flow.get("request")
    if flow.get("type") != "http" or not isinstance(request, dict):
        return None
    url = _url(request)
    path = url.split("?", 1)[0]
    if path.endswith("/v1/messages"):
        kind = "anthropic"
    elif path.endswith(("/chat/completions", "/responses")):
        kind = "openai"
    else:
        return None
    body = _decoded(request, "request")
    try:
        text = "null" if not body else body.decode("utf-8")
    except UnicodeDecodeError:
        msg = "the request body is not UTF-8 text; expected a JSON request body"
        raise ValueError(msg) from None
    head = json.dumps(
        {
            "timestamp": request.get("timestamp_start"),
            "method": _text(request.get("method")),
            "url": url,
        }
    )
    response = json.dumps({"response": _response(flow.get("response"))})
    return f'{{"request": {head[:-1]}, "body": {text}}}, {response[1:]}', kind


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read the Anthropic and OpenAI exchanges of a mitmproxy dump."""
    reader = LineReader(path, errors=errors)
    store = BlockStore()
    refs: list[ObjectScan] = []
    calls: list[Call] = []
    try:
        data = path.read_bytes()
    except OSError as exc:
        msg = f"can't be read ({exc.strerror})"
        raise TranscriptError(msg, path=path) from None
    with reader.usage_policy() as done:
        for number, flow in _flows(data):
            if isinstance(flow, Exception):
                reader.fail(number, f"not a tnetstring: {flow}; the dump may be cut here")
                break
            if not isinstance(flow, dict):
                reader.fail(number, f"{type(flow).__name__}; {_EXPECTED} (a dictionary)")
                continue
            try:
                line = _line(flow)
            except ValueError as exc:
                reader.fail(number, str(exc))
                continue
            except LimitError as exc:  # the whole file is refused: a bomb, not a bad flow
                msg = f"{path}: flow {number}: {exc}"
                raise LimitError(msg) from None
            if line is None:
                reader.ignore("flow to another endpoint")
                continue
            text, kind = line

            def make(
                text: str,
                refs: list[ObjectScan],
                store: BlockStore,
                reader: LineReader,
                kind: str = kind,
            ) -> Call | None:
                if kind == "anthropic":
                    return claude_trace._call(text, refs, store, reader)
                return openai_log._call(text, True, refs, store, reader)

            call = call_of_line(
                reader, number, text, make, refs, store, _EXPECTED, "request.content"
            )
            done(number)
            if call is not None:
                call.line = number
                calls.append(call)
    other = reader.ignored.get("flow to another endpoint", 0)
    if not calls and other and not reader.skipped:
        msg = (
            f"none of its {other} flow(s) is a request to an Anthropic /v1/messages or OpenAI "
            "/chat/completions or /responses endpoint; capture the agent's API traffic"
        )
        raise TranscriptError(msg, path=path)
    return reader.session(NAME, calls, store)
