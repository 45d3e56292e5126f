"""cacheviz request log v1: JSONL, one API call per line (see docs/format.md).

``{"ts", "provider", "api", "model", "request": <body as sent>, "response": {"usage"}, "meta"}``
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeGuard

from cacheviz.formats._body import (
    body_calls,
    call_from_body,
    first_record,
    read_body_lines,
    scan_line,
)
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session
from cacheviz.reported._usage import normalize_usage
from cacheviz.reported._verdict import response_verdict_meta
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import ObjectScan, json_type

NAME = "cacheviz"
DESCRIPTION = "cacheviz request log v1 (JSONL: ts, provider, api, model, request, response, meta)"


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` (the file's first bytes) looks like a cacheviz request log."""
    record = first_record(head)
    if not isinstance(record, dict) or not isinstance(record.get("request"), dict):
        return False
    request = record["request"]
    if "body" in request and ("method" in request or "url" in request):
        return False  # a raw HTTP capture (claude-trace), not a request body
    return any(k in record for k in ("provider", "api", "model")) or any(
        k in request for k in ("messages", "input", "model")
    )


def _string_field(record: ObjectScan, key: str) -> str | None:
    value = record.value(key)
    if value is not None and not isinstance(value, str):
        msg = f"field `{key}` is {json_type(value)}; expected a string"
        raise ValueError(msg)
    return value


def _call_from_line(
    text: str,
    refs: list[ObjectScan],
    store: BlockStore,
    in_flight: dict[int, float] | None = None,
) -> Call:
    record, request = scan_line(text, ("request",), refs)
    if request is None:
        msg = "no `request` object; expected the provider's request body under `request`"
        raise ValueError(msg)
    response = record.value("response")
    usage = None
    if isinstance(response, dict):
        usage = normalize_usage(response.get("usage") or response.get("usageMetadata"))
    meta = record.value("meta")
    meta = meta if isinstance(meta, dict) else {}
    if isinstance(response, dict) and isinstance(response.get("id"), str) and response["id"]:
        meta = {**meta, "response_id": response["id"]}  # for de-duplication across files
    verdict = response_verdict_meta(response)
    if verdict and "provider_verdict" not in meta:
        meta = {**meta, **verdict}
    hint = meta.get("thread", meta.get("lineage"))  # "lineage": the round-1 name
    if not isinstance(hint, str):
        parts = [str(meta[k]) for k in ("session", "agent") if isinstance(meta.get(k), str)]
        hint = "/".join(parts) or None
    call = call_from_body(
        request,
        store,
        model=_string_field(record, "model"),
        provider=_string_field(record, "provider"),
        api=_string_field(record, "api"),
        ts=parse_ts(record.value("ts")),
        usage=usage,
        thread=hint,
        meta=meta,
    )
    parent = meta.get("parent")
    call.parent_hint = parent if isinstance(parent, str) else None
    took = response.get("duration_ms") if isinstance(response, dict) else None
    if in_flight is not None and _is_ms(took):
        in_flight[id(call)] = took / 1000  # written when the answer ended: see call_order
    if isinstance(response, dict):
        call.prompt_token_ids = _token_ids(response.get("prompt_token_ids"))
    return call


def _is_ms(value: Any) -> TypeGuard[float]:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value < 86_400_000
    )


def _token_ids(value: Any) -> list[int] | None:
    """A response's ``prompt_token_ids`` (vLLM's ``return_token_ids``), if a list of ints."""
    if value is None or value == []:
        return None
    if isinstance(value, list) and all(type(t) is int for t in value):
        return value
    msg = "`response.prompt_token_ids` is not a list of token ids (whole numbers)"
    raise ValueError(msg)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a cacheviz request log into a :class:`~cacheviz.model.Session`.

    Parameters
    ----------
    path
        The JSONL file.
    errors
        ``"raise"`` stops at the first bad line with ``file:line: what was wrong``;
        ``"skip"`` leaves bad lines out and records them in ``Session.skipped``.

    Raises
    ------
    TranscriptError
        On the first bad line (``errors="raise"``) or when no call could be read.
    """
    return read_body_lines(path, errors, NAME, _line_call, expected=_EXPECTED)


def calls_from_lines(
    reader: LineReader,
    lines: Iterable[tuple[int, str]],
    refs: list[ObjectScan],
    store: BlockStore,
) -> list[Call]:
    """The calls of some lines of a cacheviz request log, as :func:`read` reads them.

    For :class:`cacheviz.live._incremental.LiveLog`, which reads a growing log's new lines.

    Parameters
    ----------
    reader
        The log's reader: its error policy handles a bad line.
    lines
        ``(line number, text)`` of each line.
    refs, store
        The recent request bodies and the blocks read from the earlier lines, extended.

    Returns
    -------
    list of Call
        In the order of the lines, each with its ``line``; index not set.
    """
    return body_calls(reader, lines, _line_call, refs, store, expected=_EXPECTED)


def _line_call(text: str, refs: list[ObjectScan], store: BlockStore, reader: Any) -> Call:
    return _call_from_line(text, refs, store, getattr(reader, "in_flight", None))


_EXPECTED = "expected one JSON object per line with `request`, `model`, `provider` (docs/format.md)"


def record_line(
    request: dict[str, Any],
    *,
    provider: str,
    model: str,
    api: str,
    ts: str | None = None,
    usage: dict[str, Any] | None = None,
    response: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> str:
    """Serialize one call as a cacheviz request log line (compact, keys in spec order)."""
    body: dict[str, Any] = {"ts": ts, "provider": provider, "api": api, "model": model}
    body["request"] = request
    body["response"] = {**(response or {}), "usage": usage}
    if meta:
        body["meta"] = meta
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


__all__ = ["DESCRIPTION", "NAME", "calls_from_lines", "detect", "read", "record_line"]
