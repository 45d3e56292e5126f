"""claude-trace captures: JSONL of raw HTTP exchanges with the Anthropic API.

Each line is ``{"request": {"timestamp", "method", "url", "headers", "body"},
"response": {"timestamp", "status_code", "headers", "body" | "body_raw"}, "logged_at"}``.
Request bodies are exact, so blocks keep their logged bytes. Streaming responses have
``body: null`` and the SSE text in ``body_raw``: usage comes from ``message_start`` with
the final ``output_tokens`` of ``message_delta``. Lines are in completion order; calls
are put in request order. Headers hold credentials: they are never kept or printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cacheviz.formats._body import (
    call_from_body,
    first_record,
    read_body_lines,
    scan_line,
    sse_events,
    sse_verdict,
)
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_epoch
from cacheviz.model import Call, Session
from cacheviz.reported._usage import normalize_usage
from cacheviz.reported._verdict import response_verdict_meta
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import ObjectScan

NAME = "claude-trace"
DESCRIPTION = "claude-trace raw HTTP captures of the Anthropic API (JSONL request/response pairs)"
_EXPECTED = "expected a claude-trace line {request: {timestamp, url, body}, response: {...}}"


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` looks like a claude-trace capture."""
    record = first_record(head)
    request = record.get("request") if isinstance(record, dict) else None
    return (
        isinstance(request, dict)
        and isinstance(request.get("url"), str)
        and ("anthropic" in request["url"] or "/v1/messages" in request["url"])
        and "body" in request
        and isinstance(record.get("response"), dict)
    )


def sse_usage(text: str) -> dict[str, Any] | None:
    """Usage from an Anthropic SSE stream: ``message_start`` plus the last ``message_delta``."""
    usage: dict[str, Any] | None = None
    for event in sse_events(text):
        if event.get("type") == "message_start":
            message = event.get("message")
            if isinstance(message, dict) and isinstance(message.get("usage"), dict):
                usage = dict(message["usage"])
        elif event.get("type") == "message_delta" and isinstance(event.get("usage"), dict):
            usage = {**(usage or {}), **event["usage"]}
    return usage


def sse_message_id(text: str) -> str | None:
    """The message id of an Anthropic SSE stream (``message_start.message.id``)."""
    for event in sse_events(text):
        if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
            return event["message"].get("id")
    return None


def _call(text: str, refs: list[ObjectScan], store: BlockStore, reader: LineReader) -> Call | None:
    record, body = scan_line(text, ("request", "body"), refs)
    request = record.value("request")
    if not isinstance(request, ObjectScan):
        msg = "no `request` object"
        raise ValueError(msg)
    url = request.value("url")
    if not isinstance(url, str) or "/v1/messages" not in url or "count_tokens" in url:
        reader.ignore("non-Messages request")
        return None
    response = record.value("response")
    response = response if isinstance(response, dict) else {}
    status = response.get("status_code")
    if isinstance(status, int) and not 200 <= status < 300:
        reader.ignore(f"HTTP {status} response")
        return None
    if body is None:
        msg = "`request.body` is missing"
        raise ValueError(msg)
    raw_usage = None
    message_id = None
    verdict: dict[str, Any] = {}
    if isinstance(response.get("body"), dict):
        raw_usage = response["body"].get("usage")
        message_id = response["body"].get("id")
        verdict = response_verdict_meta(response["body"])
    elif isinstance(response.get("body_raw"), str):
        raw_usage = sse_usage(response["body_raw"])
        message_id = sse_message_id(response["body_raw"])
        verdict = sse_verdict(response["body_raw"])
    meta = dict(verdict)
    if isinstance(message_id, str) and message_id:
        meta["response_id"] = message_id
    return call_from_body(
        body,
        store,
        model=None,
        provider="anthropic",
        api="messages",
        ts=parse_epoch(request.value("timestamp")),
        usage=normalize_usage(raw_usage),
        meta=meta or None,
    )


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a claude-trace capture; see :func:`cacheviz.formats.load` for ``errors``."""
    return read_body_lines(path, errors, NAME, _call, expected=_EXPECTED, body_path="request.body")
