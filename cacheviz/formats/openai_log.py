"""OpenAI request/response logs: what proxies and SDK loggers write, one call per line.

Two shapes are read, both with the request body verbatim (blocks keep their bytes):

* **pairs** ``{"request": <body>, "response": <chat.completion | response object>}``
  (optionally ``timestamp``/``created_at``), as SDK loggers write them;
* **HTTP captures** ``{"request": {"url", "body", "timestamp"}, "response": {"status_code",
  "body" | "body_raw"}}`` of ``/chat/completions`` or ``/responses``, as proxies write them;
  streamed responses keep usage in the last chunk (``stream_options.include_usage``) or in
  the ``response.completed`` event.

``cached_tokens`` sits under ``prompt_tokens_details`` (Chat Completions) or
``input_tokens_details`` (Responses); input counts include it. OpenAI-compatible
providers are recognised by their usage fields (DeepSeek's ``prompt_cache_hit_tokens``).
"""

from __future__ import annotations

import json
from datetime import datetime
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
from cacheviz.formats._time import parse_epoch, parse_ts
from cacheviz.model import Call, Session
from cacheviz.reported._usage import normalize_usage
from cacheviz.reported._verdict import response_verdict_meta
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import ObjectScan

NAME = "openai-log"
DESCRIPTION = (
    "OpenAI request/response logs (JSONL pairs or HTTP captures of /chat/completions, /responses)"
)
_OBJECTS = ("chat.completion", "response", "chat.completion.chunk")
_ENDPOINTS = {"/chat/completions": "chat.completions", "/responses": "responses"}
_NATIVE_FIELDS = ("provider", "api", "ts", "meta")
_EXPECTED = "expected {request: <body>, response: <OpenAI response>} or an HTTP capture"


def _endpoint(url: Any) -> str | None:
    if not isinstance(url, str):
        return None
    path = url.split("?", 1)[0]
    return next((api for suffix, api in _ENDPOINTS.items() if path.endswith(suffix)), None)


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` looks like an OpenAI request/response log."""
    record = first_record(head)
    if not isinstance(record, dict) or any(k in record for k in _NATIVE_FIELDS):
        return False
    request, response = record.get("request"), record.get("response")
    if not isinstance(request, dict):
        return False
    if "url" in request and "body" in request:
        return _endpoint(request["url"]) is not None
    return isinstance(response, dict) and (
        response.get("object") in _OBJECTS or "choices" in response or "output" in response
    )


def sse_usage(text: str) -> dict[str, Any] | None:
    """Usage from an OpenAI stream: the last chunk's ``usage`` or ``response.completed``."""
    usage = None
    for event in sse_events(text):  # "[DONE]" is not JSON: skipped
        if isinstance(event.get("usage"), dict):
            usage = event["usage"]
        response = event.get("response")
        if isinstance(response, dict) and isinstance(response.get("usage"), dict):
            usage = response["usage"]
    return usage


def _time(value: Any) -> datetime | None:
    return parse_epoch(value) if not isinstance(value, str) else parse_ts(value)


def _is_capture(text: str) -> bool:
    """Whether a line is an HTTP capture (its ``request`` has ``url`` and ``body``)."""
    try:
        record = json.loads(text)
    except ValueError:
        return False
    request = record.get("request") if isinstance(record, dict) else None
    return isinstance(request, dict) and "url" in request and "body" in request


def _call(
    text: str, capture: bool, refs: list[ObjectScan], store: BlockStore, reader: LineReader
) -> Call | None:
    record, body = scan_line(text, ("request", "body") if capture else ("request",), refs)
    response = record.value("response")
    response = response if isinstance(response, dict) else {}
    api = None
    ts = _time(record.value("timestamp") or record.value("created_at"))
    if capture:
        wrapper = record.value("request")
        api = _endpoint(wrapper.value("url")) if isinstance(wrapper, ObjectScan) else None
        if api is None:
            reader.ignore("request to another endpoint")
            return None
        status = response.get("status_code")
        if isinstance(status, int) and not 200 <= status < 300:
            reader.ignore(f"HTTP {status} response")
            return None
        ts = ts or (_time(wrapper.value("timestamp")) if isinstance(wrapper, ObjectScan) else None)
        payload = response.get("body")
        usage = payload.get("usage") if isinstance(payload, dict) else None
        raw = response.get("body_raw")
        verdict = sse_verdict(raw) if isinstance(raw, str) else {}
        if usage is None and isinstance(raw, str):
            usage = sse_usage(raw)
        response = payload if isinstance(payload, dict) else {}
    else:
        usage = response.get("usage")
        verdict = {}
    # the provider's own verdict (OpenAI prompt_cache_diagnostics), as Anthropic's is read
    verdict = response_verdict_meta(response) or verdict
    if body is None:
        msg = "no request body"
        raise ValueError(msg)
    ts = ts or parse_epoch(response.get("created")) or parse_epoch(response.get("created_at"))
    model = body.value("model") or response.get("model")
    response_id = response.get("id")  # chatcmpl-... / resp_...: de-duplication across files
    return call_from_body(
        body,
        store,
        model=model if isinstance(model, str) else None,
        provider=None,
        api=api,
        ts=ts,
        usage=normalize_usage(usage),
        meta=_meta(verdict, response_id),
    )


def _meta(verdict: dict[str, Any], response_id: Any) -> dict[str, Any] | None:
    meta = dict(verdict)
    if isinstance(response_id, str) and response_id:
        meta["response_id"] = response_id
    return meta or None


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read an OpenAI request/response log; see :func:`cacheviz.formats.load` for ``errors``."""
    capture: list[bool] = []  # a log holds one shape: told by its first line

    def make_call(
        text: str, refs: list[ObjectScan], store: BlockStore, reader: LineReader
    ) -> Call | None:
        if not capture:
            capture.append(_is_capture(text))
        return _call(text, capture[0], refs, store, reader)

    return read_body_lines(path, errors, NAME, make_call, expected=_EXPECTED)
