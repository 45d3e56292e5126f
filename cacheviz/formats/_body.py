"""Shared plumbing for formats that log provider request bodies verbatim.

A JSONL line holds a request body at some path (``request`` in the native log,
``request.body`` in claude-trace captures). :func:`scan_line` walks the line with the
span scanner, so the body's blocks keep their bytes as logged and are re-used from the
previous lines when unchanged; :func:`call_from_body` turns the body into a :class:`Call`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.formats._lines import LineReader
from cacheviz.model import Call, Session, Usage
from cacheviz.reported._usage import UsageError
from cacheviz.reported._verdict import response_verdict_meta
from cacheviz.request._blocks import (
    APIS,
    BLOCK_KEYS,
    BlockStore,
    RenderError,
    blocks_from_scan,
    compact_json,
    infer_api,
)
from cacheviz.request._jsonspan import (
    JSONSyntaxError,
    ObjectScan,
    json_type,
    scan_object,
    scan_value,
)

ALL_BLOCK_KEYS = frozenset().union(*BLOCK_KEYS.values())
REFERENCE_SCANS = 3  # how many recent requests to try as a byte-prefix reference
_MODEL_PROVIDERS = (
    ("claude", "anthropic"),
    ("gpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("codex", "openai"),
    ("gemini", "google"),
    ("deepseek", "deepseek"),
    ("grok", "xai"),  # xAI alone serves its Grok models
)


# the provider of a call the openai SDK sent to a host that is not a known vendor's (a
# gateway, a local server): the API family it speaks, not who serves the model
OPENAI_COMPATIBLE = "openai-compatible"


def provider_for(model: str) -> str:
    """Guess the provider from a model name (``unknown`` when nothing fits)."""
    lowered = model.lower()
    for needle, provider in _MODEL_PROVIDERS:
        if lowered.startswith(needle) or f"/{needle}" in lowered:
            return provider
    return "unknown"


def _path_member(
    path: tuple[str, ...],
    depth: int,
    refs: list[ObjectScan],
    found: list[ObjectScan],
    inner: dict[str, Callable[[str, int], tuple[Any, int]]] | None,
) -> Callable[[str, int], tuple[Any, int]]:
    """The scanner of member ``path[depth]``: the body at the path's end, else an object.

    ``inner`` scans the next member of the path. (Built without a function that refers
    to itself: such a cycle would keep each line's text alive until a garbage collection.)
    """
    last = depth == len(path) - 1

    def scan(t: str, pos: int) -> tuple[Any, int]:
        if t[pos : pos + 1] != "{":
            value, end = scan_value(t, pos)
            if last:
                dotted = ".".join(path)
                msg = f"`{dotted}` is {json_type(value)}; expected the request body object"
                raise ValueError(msg)
            return value, end
        if last:
            body = scan_object(t, pos, ALL_BLOCK_KEYS, refs)
            found.append(body)
            return body, body.end
        obj = scan_object(t, pos, frozenset(), nested=inner)
        return obj, obj.end

    return scan


def scan_line(
    text: str, path: tuple[str, ...], refs: list[ObjectScan]
) -> tuple[ObjectScan, ObjectScan | None]:
    """Scan one JSONL line; return the line's object and the body found at ``path``.

    The body is ``None`` when a member on the path is missing or not an object (the
    caller says what was expected). Members off the path are parsed normally.
    """
    found: list[ObjectScan] = []
    nested: dict[str, Callable[[str, int], tuple[Any, int]]] | None = None
    for depth in range(len(path) - 1, -1, -1):  # innermost first: no closure cycle
        nested = {path[depth]: _path_member(path, depth, refs, found, nested)}
    record = scan_object(text, 0, frozenset(), nested=nested)
    rest = text[record.end :].strip()
    if rest:
        msg = f"unexpected text after the JSON object: {rest[:20]!r}"
        raise JSONSyntaxError(msg, record.end)
    body = found[-1] if found else None
    if body is not None:
        refs.insert(0, body)
        del refs[REFERENCE_SCANS:]
    return record, body


def call_from_body(
    body: ObjectScan,
    store: BlockStore,
    *,
    model: str | None,
    provider: str | None,
    api: str | None,
    ts: datetime | None,
    usage: Usage | None,
    thread: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Call:
    """Render a scanned request body into a :class:`Call` (index and line set later).

    Raises
    ------
    ValueError
        When no model is known or the API is not one of :data:`cacheviz.request._blocks.APIS`.
    cacheviz.request._blocks.RenderError
        When the body has no conversation.
    """
    model = model or body.value("model")
    if not isinstance(model, str) or not model:
        msg = "no model: set `model` on the line or in the request body"
        raise ValueError(msg)
    if provider == OPENAI_COMPATIBLE:
        # the rules follow the model (a gateway serving gpt-5 or claude); the recorded
        # API family stays in meta
        guess = provider_for(model)
        meta = {**(meta or {}), "recorded_provider": OPENAI_COMPATIBLE}
        meta.setdefault("api_family", "openai")
        provider = guess if guess != "unknown" else OPENAI_COMPATIBLE
    provider = provider or provider_for(model)
    api = api or infer_api(provider, {m.key for m in body.members})
    if api not in APIS:
        msg = f"field `api` is {api!r}; expected one of {', '.join(APIS)}"
        raise ValueError(msg)
    rendered = blocks_from_scan(api, body, store)
    params = {m.key: m.value for m in body.members if not m.is_block}
    return Call(
        -1,
        0,
        ts,
        provider,
        api,
        model,
        rendered.blocks,
        usage,
        thread,
        meta or {},
        hashes=rendered.hashes,
        message_start=rendered.message_start,
        params=params,
        breakpoints=rendered.breakpoints,
    )


def call_from_request(
    request: dict[str, Any],
    refs: list[ObjectScan],
    store: BlockStore,
    *,
    model: str | None,
    provider: str | None,
    api: str | None,
    ts: datetime | None,
    usage: Usage | None,
    thread: str | None = None,
    meta: dict[str, Any] | None = None,
    reconstructed: bool = True,
) -> Call:
    """A :class:`Call` from a request body the log holds as parsed JSON.

    The body is serialized compactly (key order kept) and scanned against ``refs``, so
    leading blocks shared with recent requests are re-used. The call is marked
    ``reconstructed`` unless the caller knows the log kept the request as sent.

    Raises
    ------
    ValueError
        When the body cannot be serialized (nested too deeply) or lacks a model/API.
    cacheviz.request._blocks.RenderError
        When the body has no conversation.
    """
    try:
        text = compact_json(request)
    except RecursionError:
        msg = "the request is nested too deeply to be rebuilt"
        raise ValueError(msg) from None
    except ValueError as exc:  # NaN/Infinity are allowed; circular data is not
        msg = f"the request cannot be serialized ({exc})"
        raise ValueError(msg) from None
    body = scan_object(text, 0, ALL_BLOCK_KEYS, refs)
    refs.insert(0, body)
    del refs[REFERENCE_SCANS:]
    call = call_from_body(
        body,
        store,
        model=model,
        provider=provider,
        api=api,
        ts=ts,
        usage=usage,
        thread=thread,
        meta=meta,
    )
    call.reconstructed = reconstructed
    return call


LineCall = Callable[[str, list[ObjectScan], BlockStore, LineReader], "Call | None"]


def sse_events(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent-events stream's ``data:`` lines (junk skipped)."""
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:])
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict):
            yield event


def sse_verdict(text: str) -> dict[str, Any]:
    """The provider's cache verdict in a stream, as ``Call.meta`` entries (empty: none).

    Anthropic puts ``diagnostics`` on ``message_start.message``; OpenAI Responses puts
    ``prompt_cache_diagnostics`` on the final ``response`` (``response.completed``). Read
    like a whole body's (:func:`cacheviz.reported._verdict.response_verdict_meta`).
    """
    found: dict[str, Any] = {}
    for event in sse_events(text):
        if event.get("type") == "message_start":
            return response_verdict_meta(event)
        verdict = response_verdict_meta(event)
        if verdict:
            found = verdict  # the last one the stream gives (the completed response's)
    return found


def first_record(head: bytes) -> Any:
    """The parsed first line of ``head`` (``None`` when it is not JSON)."""
    try:
        return json.loads(head.lstrip().split(b"\n", 1)[0])
    except (ValueError, RecursionError):
        return None


def read_body_lines(
    path: Path,
    errors: str,
    fmt: str,
    make_call: LineCall,
    *,
    expected: str,
    body_path: str = "request",
) -> Session:
    """Read a JSONL log with a request body per line; bad lines go through ``errors``.

    ``make_call(text, refs, store, reader)`` turns one line into a :class:`Call` (or
    ``None`` for a record that is not a call, counted with ``reader.ignore``).
    ``body_path`` is where the body sits in a line, for error messages.
    """
    reader = LineReader(path, errors=errors)
    store = BlockStore()
    refs: list[ObjectScan] = []
    calls = body_calls(
        reader, reader.lines(), make_call, refs, store, expected=expected, body_path=body_path
    )
    return reader.session(fmt, calls, store)


def body_calls(
    reader: LineReader,
    lines: Iterable[tuple[int, str]],
    make_call: LineCall,
    refs: list[ObjectScan],
    store: BlockStore,
    *,
    expected: str,
    body_path: str = "request",
) -> list[Call]:
    """The calls of ``lines``, in the order read (:func:`read_body_lines`'s loop).

    Also :class:`cacheviz.live._incremental.LiveLog`'s, on the lines appended to a log.

    Parameters
    ----------
    reader
        Its error policy handles a bad line and corrupt usage counts.
    lines
        ``(line number, text)`` of each line (:meth:`LineReader.lines`).
    make_call, expected, body_path
        As for :func:`read_body_lines`.
    refs, store
        The recent request bodies (byte-prefix references) and the blocks read so far,
        extended.

    Returns
    -------
    list of Call
        Each with its ``line``; index not set.
    """
    calls: list[Call] = []
    with reader.usage_policy() as done:
        for lineno, text in lines:
            call = call_of_line(reader, lineno, text, make_call, refs, store, expected, body_path)
            done(lineno)
            if call is not None:
                call.line = lineno
                calls.append(call)
    return calls


def call_of_line(
    reader: LineReader,
    lineno: int,
    text: str,
    make_call: Callable[..., Call | None],
    refs: list[ObjectScan],
    store: BlockStore,
    expected: str,
    body_path: str,
) -> Call | None:
    """One line's call, or ``None`` (not a call, or a bad line under ``errors="skip"``).

    ``make_call(text, refs, store, reader)`` reads the line; an error it raises goes
    through ``reader``'s policy, its reason ending with ``expected`` (what a line should
    be) or naming the field under ``body_path`` (where the body sits in a line).
    """
    try:
        return make_call(text, refs, store, reader)
    except JSONSyntaxError as exc:
        reader.fail(lineno, f"not valid JSON: {exc} (column {exc.pos + 1}); {expected}")
    except RenderError as exc:
        field = exc.field.replace("request", body_path, 1)
        reader.fail(lineno, f"{exc}; fix field `{field}` or skip the line")
    except UsageError as exc:
        reader.fail(lineno, str(exc))
    except ValueError as exc:
        reader.fail(lineno, f"{exc}; {expected}")
    except RecursionError:
        reader.fail(lineno, "JSON nested too deeply")
    return None
