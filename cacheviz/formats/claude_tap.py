"""claude-tap captures: its SQLite trace store, its compact export and JSONL records.

claude-tap (PyPI ``claude-tap``, read and tested at 0.1.146) is a reverse / forward proxy
in front of Claude Code, Codex, Gemini CLI, OpenCode, Kimi and more. Three shapes:

* the **trace store** ``traces.sqlite3`` (``$CLOUDTAP_DB``, else
  ``$XDG_DATA_HOME/claude-tap/``, else ``~/.local/share/claude-tap/``), in WAL mode: tables
  ``sessions`` (one per claude-tap run: client, proxy mode), ``records`` (``session_id``,
  ``record_index``, ``turn``, ``timestamp``, ``payload_json``), ``record_blobs``
  (content-addressed ``sha256:…`` JSON payloads) and ``proxy_logs``. It is opened
  read-only and immutable, or, when its ``-wal`` holds records, from a private copy of
  the store and its ``-wal`` (``formats/_sqlite.py``): records still in the ``-wal`` are
  read and nothing beside the store is created or changed. The folder holding it loads
  too;
* the **compact export** (``claude-tap export``: one JSON document
  ``{"__claude_tap_compact_trace__": {...}, "records": [...], "blobs": {...}}``);
* **JSONL records**, one per line (the dashboard's ``export/jsonl``, older ``.traces``).

A record is ``{timestamp, request_id, turn, duration_ms, request: {method, path, headers,
body}, response: {status, headers, body}, upstream_base_url, capture: {client,
proxy_mode}}``; ``timestamp`` is when the response ended, so the request time is
``timestamp - duration_ms``. JSON values of 512 bytes or more (``tools``,
``instructions``, each item of ``messages`` / ``input``) are stored once as blobs and
referenced from a *compact record*; they are resolved before anything is hashed.

What the capture keeps, and what it does not:

* claude-tap parses each request body and stores it re-serialized as compact JSON (key
  order kept, non-ASCII unescaped). Every key, value and order the provider saw is there,
  so token counts are exact; the bytes are the same as sent only when the client sent
  compact JSON with the same escaping. ``Call.meta["request_bytes"]`` says so
  (``"re-serialized by claude-tap"``); ``reconstructed`` stays false.
* Streamed responses are stored rebuilt from the events (``meta["streamed"]``). For
  OpenAI-shaped usage claude-tap adds Anthropic-style copies (``input_tokens``,
  ``cache_read_input_tokens``, ``cache_read_in_input``) beside the provider's own fields;
  the copies are dropped so the provider's own fields are read (else the cached tokens
  would be counted twice).
* ``GET /v1/models`` status probes, token counts, failed requests and non-model
  endpoints are records, not calls: they are counted in ``Session.ignored``. Gemini
  ``generateContent`` bodies are counted there too (not rendered yet).
* WebSocket records (``method: "WEBSOCKET"``, status 101: Codex's Responses socket) hold
  a body claude-tap merged from the client's messages on the socket: they are read as
  ``reconstructed`` calls (``meta["transport"] = "websocket"``).
* ``--tap-export-prompt`` (capture-only) records never reached the provider: their
  placeholder usage (all zero) is not reported usage, so it is null, with
  ``meta["capture_only"] = True``.

``Call.meta`` keeps ``client`` (claude, codex, gemini, …), ``proxy_mode``, ``upstream``,
``claude_tap_session``, ``turn``, ``duration_ms``, ``response_id``. claude-tap's cache-miss
cards are computed by its viewer when shown, not stored, so there is no outside verdict
to keep. Headers are never kept (they may hold credentials).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import unquote

from cacheviz._limits import Expansion
from cacheviz.errors import TranscriptError
from cacheviz.formats._body import call_from_request, first_record, provider_for
from cacheviz.formats._lines import LineReader, load_json_document
from cacheviz.formats._sqlite import open_read_only, rows
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session
from cacheviz.reported._usage import UsageError, normalize_usage
from cacheviz.request._blocks import BlockStore, RenderError
from cacheviz.request._jsonspan import ObjectScan, json_type

NAME = "claude-tap"
DESCRIPTION = (
    "claude-tap captures: the traces.sqlite3 store (or its folder), "
    "its compact export (.ctap.json) and JSONL records"
)
DB_NAME = "traces.sqlite3"
TRACE_MARKER = "__claude_tap_compact_trace__"
RECORD_MARKER = "__claude_tap_compact_record__"
BLOB_MARKER = "__claude_tap_blob_ref__"
REQUEST_BYTES = "re-serialized by claude-tap"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_EXPECTED = (
    "expected a claude-tap record {timestamp, duration_ms, request: {method, path, body}, "
    "response: {status, body}}"
)
_PROBE = re.compile(r"/(?:v1(?:alpha|beta)?/)?models(?:/[^/:]+)?")
_BEDROCK = re.compile(r"/model/([^/]+)/(?:invoke|invoke-with-response-stream)")
_VERTEX = re.compile(r"/v1/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/([^/:]+)")
_CAPTURE_ONLY_IDS = frozenset(
    {
        "msg_claude_tap_capture",
        "chatcmpl_claude_tap_capture",
        "cmpl_claude_tap_capture",
        "compl_claude_tap_capture",
        "resp_claude_tap_capture",
    }
)

BlobLoader = Callable[[str], Any]


# -- detection ----------------------------------------------------------------------


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a claude-tap store (file or folder), export or JSONL capture."""
    if path.is_dir():
        return (path / DB_NAME).is_file() and _is_trace_db(path / DB_NAME)
    if head.startswith(_SQLITE_MAGIC):
        return _is_trace_db(path)
    start = head.lstrip()[:64]
    if start.startswith(b"{") and TRACE_MARKER.encode() in start:
        return True
    return _is_record(first_record(head))


def _is_record(record: Any) -> bool:
    if isinstance(record, dict) and isinstance(record.get(RECORD_MARKER), dict):
        record = record.get("record")
    if not isinstance(record, dict):
        return False
    request, response = record.get("request"), record.get("response")
    return (
        isinstance(request, dict)
        and isinstance(request.get("path"), str)
        and "method" in request
        and "body" in request
        and isinstance(response, dict)
        and "status" in response
    )


def _is_trace_db(path: Path) -> bool:
    try:
        with open_store(path) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            if not {"sessions", "records"} <= tables:
                return False
            columns = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    except (sqlite3.Error, OSError, TranscriptError):
        return False
    return {"session_id", "record_index", "payload_json"} <= columns


# -- opening the store --------------------------------------------------------------


@contextmanager
def open_store(path: Path) -> Iterator[sqlite3.Connection]:
    """Open a claude-tap ``traces.sqlite3`` read-only, with what its ``-wal`` still holds.

    Through :func:`cacheviz.formats._sqlite.open_read_only`: immutable when no journal
    holds data, else a private copy of the store and its ``-wal``; nothing beside the
    store is created or changed.

    Raises
    ------
    TranscriptError
        When the file is not an SQLite database or cannot be read.
    """
    with ExitStack() as stack:
        try:
            conn = stack.enter_context(open_read_only(path))
        except (sqlite3.Error, OSError) as exc:
            msg = f"not a readable SQLite database ({exc}); expected claude-tap's {DB_NAME}"
            raise TranscriptError(msg, path=path) from None
        yield conn


# -- compact records ----------------------------------------------------------------


def _ref_path(text: Any) -> tuple[str, ...] | None:
    if not isinstance(text, str) or not text.startswith("/"):
        return None
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/"))


def _is_blob_ref(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {BLOB_MARKER}
        and isinstance(value[BLOB_MARKER], dict)
        and isinstance(value[BLOB_MARKER].get("hash"), str)
    )


def _resolve_at(record: Any, path: tuple[str, ...], load: BlobLoader, own: set[int]) -> None:
    """Replace the blob reference at ``path`` in ``record`` by its payload.

    The containers on the way are copied the first time a path goes through them (their
    ids are kept in ``own``), then changed in place: a record's references are resolved
    in time linear in their number (copying a list of n messages once per message was
    quadratic), and a payload shared by other records is never changed.
    """
    parent: Any = None
    key: Any = None
    value = record
    for step in path:
        if not isinstance(value, (dict, list)):
            return
        if id(value) not in own:
            value = value.copy()
            own.add(id(value))
            parent[key] = value  # parent is owned: the root is, and each step makes it so
        if isinstance(value, dict):
            if step not in value:
                return
            parent, key, value = value, step, value[step]
        else:
            if not step.isdigit() or int(step) >= len(value):
                return
            parent, key, value = value, int(step), value[int(step)]
    if parent is not None and _is_blob_ref(value):
        parent[key] = load(value[BLOB_MARKER]["hash"])


def materialize(payload: Any, load: BlobLoader) -> Any:
    """A stored record with its blob references resolved (other records unchanged).

    Raises
    ------
    ValueError
        When the compact record is malformed or a referenced blob is missing.
    """
    if not isinstance(payload, dict) or RECORD_MARKER not in payload:
        return payload
    marker = payload[RECORD_MARKER]
    if not isinstance(marker, dict) or marker.get("version") != 1:
        msg = f"`{RECORD_MARKER}` is {json_type(marker)} of an unknown version; expected version 1"
        raise ValueError(msg)
    record = payload.get("record")
    if not isinstance(record, dict):
        msg = f"`record` of a compact record is {json_type(record)}; expected an object"
        raise ValueError(msg)
    refs = marker.get("refs")
    paths = [_ref_path(r.get("path")) for r in refs if isinstance(r, dict)] if refs else []
    record = dict(record)
    own = {id(record)}
    for path in paths:
        if path:
            _resolve_at(record, path, load, own)
    return record


# -- one record ---------------------------------------------------------------------


def provider_usage(usage: Any) -> Any:
    """The provider's own usage fields, without the copies claude-tap adds to streams.

    On streamed OpenAI-shaped responses claude-tap stores ``normalize_usage(usage)``: the
    provider's fields plus ``input_tokens`` / ``output_tokens`` (copies of
    ``prompt_tokens`` / ``completion_tokens``), ``cache_read_input_tokens`` (a copy of the
    cached count, which the input already includes) and its marker ``cache_read_in_input``.
    Read as Anthropic usage, the cached tokens would be added to the input a second time.

    Examples
    --------
    >>> provider_usage({"prompt_tokens": 900, "prompt_tokens_details": {"cached_tokens": 800},
    ...                 "input_tokens": 900, "cache_read_input_tokens": 800,
    ...                 "cache_read_in_input": True})
    {'prompt_tokens': 900, 'prompt_tokens_details': {'cached_tokens': 800}}
    """
    if not isinstance(usage, dict) or "cache_read_in_input" not in usage:
        return usage
    own = dict(usage)
    embedded = own.pop("cache_read_in_input")
    if embedded is True:
        own.pop("cache_read_input_tokens", None)
    if "prompt_tokens" in own or "promptTokenCount" in own:
        own.pop("input_tokens", None)
        own.pop("output_tokens", None)
    return own


def _endpoint(method: Any, path: str) -> tuple[str, str | None] | str:
    """``(api, model from the path)`` for a model call, else the kind of record it is."""
    clean = path.split("?", 1)[0].rstrip("/")
    if method == "GET" or _PROBE.fullmatch(clean):
        return "status probe (GET /v1/models)"
    if clean.endswith("/count_tokens") or clean.endswith("count-tokens:rawPredict"):
        return "token count request"
    if match := _BEDROCK.fullmatch(clean):
        return "messages", unquote(match.group(1))
    if match := _VERTEX.match(clean):
        return "messages", unquote(match.group(1))
    if clean.endswith("/messages"):
        return "messages", None
    if clean.endswith("/chat/completions"):
        return "chat.completions", None
    if clean.endswith("/responses"):
        return "responses", None
    if ":generateContent" in clean or ":streamGenerateContent" in clean:
        return "Gemini request (not rendered yet)"
    return "non-model request"


def _meta(record: dict[str, Any], session: str | None, body: Any) -> dict[str, Any]:
    capture = record.get("capture")
    capture = capture if isinstance(capture, dict) else {}
    response = record["response"]
    headers = response.get("headers") if isinstance(response.get("headers"), dict) else {}
    content_type = next((str(v) for k, v in headers.items() if k.lower() == "content-type"), "")
    request_body = record["request"].get("body")
    streamed = (
        "event-stream" in content_type
        or (isinstance(request_body, dict) and request_body.get("stream") is True)
        or record.get("transport") == "websocket"
    )
    found = {
        "client": capture.get("client"),
        "proxy_mode": capture.get("proxy_mode"),
        "upstream": record.get("upstream_base_url"),
        "claude_tap_session": session,
        "turn": record.get("turn"),
        "duration_ms": record.get("duration_ms"),
        "transport": record.get("transport"),
        "response_id": body.get("id") if isinstance(body, dict) else None,
    }
    meta: dict[str, Any] = {
        k: v for k, v in found.items() if isinstance(v, (str, int)) and not isinstance(v, bool)
    }
    meta["request_bytes"] = REQUEST_BYTES
    meta["streamed"] = streamed
    return meta


def record_call(
    record: Any,
    store: BlockStore,
    refs: list[ObjectScan],
    reader: LineReader,
    *,
    session: str | None = None,
) -> Call | None:
    """One materialized record as a :class:`Call` (``None`` when it is not a model call).

    Raises
    ------
    ValueError
        When the record lacks what a call needs (its reason names the field).
    """
    if not isinstance(record, dict):
        msg = f"the record is {json_type(record)}; expected an object"
        raise ValueError(msg)
    request, response = record.get("request"), record.get("response")
    if not isinstance(request, dict) or not isinstance(request.get("path"), str):
        msg = "no `request.path`"
        raise ValueError(msg)
    if not isinstance(response, dict):
        msg = f"`response` is {json_type(response)}; expected an object"
        raise ValueError(msg)
    endpoint = _endpoint(request.get("method"), request["path"])
    if isinstance(endpoint, str):
        reader.ignore(endpoint)
        return None
    api, path_model = endpoint
    status = response.get("status")
    websocket = request.get("method") == "WEBSOCKET" and status == 101
    if not (isinstance(status, int) and (200 <= status < 300 or websocket)):
        reader.ignore("failed request (HTTP error)")
        return None
    if isinstance(response.get("error"), str) and response["error"]:
        reader.ignore("failed request (HTTP error)")
        return None
    body = request.get("body")
    if isinstance(body, dict) and "_encoding" in body:
        reader.ignore("binary request body")
        return None
    if not isinstance(body, dict):
        msg = f"`request.body` is {json_type(body)}; expected the request body object"
        raise ValueError(msg)
    answer = response.get("body")
    meta = _meta(record, session, answer)
    usage = None
    if isinstance(answer, dict):
        if answer.get("id") in _CAPTURE_ONLY_IDS:
            meta["capture_only"] = True
        else:
            usage = normalize_usage(provider_usage(answer.get("usage")))
    ts = parse_ts(record.get("timestamp"), "timestamp")
    duration = record.get("duration_ms")
    if ts is not None and _is_duration(duration):
        try:
            ts -= timedelta(milliseconds=duration)
        except OverflowError:  # a time in year 1 less its duration
            msg = (
                f"field `timestamp` {record.get('timestamp')!r} less `duration_ms` "
                f"{duration!r} is before year 1, not a time a call was made"
            )
            raise ValueError(msg) from None
    model = body.get("model") if isinstance(body.get("model"), str) else path_model
    provider = provider_for(model) if isinstance(model, str) and model else "unknown"
    if provider == "unknown":
        provider = "anthropic" if api == "messages" else "openai"
    return call_from_request(
        body,
        refs,
        store,
        model=model,
        provider=provider,
        api=api,
        ts=ts,
        usage=usage,
        meta=meta,
        reconstructed=websocket,  # claude-tap merged the socket's client messages
    )


def _is_duration(value: Any) -> TypeGuard[float]:
    """A sane ``duration_ms`` (a number of milliseconds under a day)."""
    return (
        isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 86_400_000
    )


def _add(
    reader: LineReader,
    line: int | None,
    where: str,
    make: Callable[[], Call | None],
    calls: list[Call],
    position: int,
) -> None:
    """Run ``make`` under the error policy; a bad record fails with ``where`` named."""
    prefix = f"{where}: " if where else ""
    try:
        call = make()
    except RenderError as exc:
        field = exc.field.replace("request", "request.body", 1)
        reader.fail(line, f"{prefix}{exc}; fix field `{field}` or skip the record")
        return
    except UsageError as exc:
        reader.fail(line, f"{prefix}{exc}")
        return
    except ValueError as exc:
        reader.fail(line, f"{prefix}{exc}; {_EXPECTED}")
        return
    except RecursionError:
        reader.fail(line, f"{prefix}JSON nested too deeply")
        return
    if call is not None:
        call.line = position
        calls.append(call)


# -- the three shapes ---------------------------------------------------------------


class _StoreBlobs:
    """Blob payloads of the store's ``record_blobs``, by (session, hash), parsed once.

    The table is read whole at the first reference (one pass: a store without its index
    on ``(session_id, hash)`` was searched from the start for every reference). Each
    payload expanded is counted against the file's reference-expansion budget.
    """

    def __init__(self, conn: sqlite3.Connection, present: bool, budget: Expansion) -> None:
        self.conn = conn
        self.present = present
        self.budget = budget
        self.raw: dict[tuple[str, str], Any] | None = None
        self.cache: dict[tuple[str, str], Any] = {}

    def loader(self, session: str) -> BlobLoader:
        return lambda digest: self.load(session, digest)

    def load(self, session: str, digest: str) -> Any:
        key = (session, digest)
        if self.raw is None:
            self.raw = {}
            if self.present:
                sql = "SELECT session_id, hash, payload_json FROM record_blobs"
                for sid, name, text in rows(self.conn, sql):
                    self.raw.setdefault((str(sid), str(name)), text)
        text = self.raw.get(key)
        if text is None:
            msg = f"blob {digest[:20]}… is not in `record_blobs`; the store is incomplete"
            raise ValueError(msg)
        self.budget.spend(len(text) if isinstance(text, (str, bytes)) else 0)
        if key not in self.cache:
            self.cache[key] = _json(text, f"record_blobs[{digest[:20]}…].payload_json")
        return self.cache[key]


def _read_store(path: Path, reader: LineReader, store: BlockStore) -> list[Call]:
    try:
        return _read_rows(path, reader, store)
    except sqlite3.Error as exc:
        msg = (
            f"the SQLite store cannot be read ({exc}); expected claude-tap's {DB_NAME} "
            "(tables sessions, records, record_blobs)"
        )
        raise TranscriptError(msg, path=path) from None


def _read_rows(path: Path, reader: LineReader, store: BlockStore) -> list[Call]:
    calls: list[Call] = []
    refs: list[ObjectScan] = []
    with open_store(path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        blobs = _StoreBlobs(conn, "record_blobs" in tables, Expansion(path))
        found = rows(
            conn,
            "SELECT r.session_id, r.record_index, r.payload_json FROM records AS r "
            "LEFT JOIN sessions AS s ON s.id = r.session_id "
            "ORDER BY s.started_at, r.session_id, r.record_index",
        )
        with reader.usage_policy() as done:
            for position, (session, index, payload) in enumerate(found, 1):
                sid = str(session)
                where = f"records[session {sid[:8]}, record_index {index}]"

                def make(payload: Any = payload, sid: str = sid) -> Call | None:
                    record = materialize(_json(payload, "payload_json"), blobs.loader(sid))
                    return record_call(record, store, refs, reader, session=sid)

                _add(reader, None, where, make, calls, position)
                done(None)
    return calls


def _json(text: Any, field: str) -> Any:
    if not isinstance(text, (str, bytes)):
        msg = f"`{field}` is {type(text).__name__}; expected JSON text"
        raise ValueError(msg)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"`{field}` is not valid JSON ({exc.msg}, column {exc.colno})"
        raise ValueError(msg) from None


def _read_bundle(doc: dict[str, Any], reader: LineReader, store: BlockStore) -> list[Call]:
    records, blobs = doc.get("records"), doc.get("blobs")
    if not isinstance(records, list):
        msg = f"`records` is {json_type(records)}; expected the list of records"
        raise TranscriptError(msg, path=reader.path)
    blobs = blobs if isinstance(blobs, dict) else {}
    budget = Expansion(reader.path)
    sizes: dict[str, int] = {}

    def load(digest: str) -> Any:
        blob = blobs.get(digest)
        if not isinstance(blob, dict) or "payload" not in blob:
            msg = f"blob {digest[:20]}… is not in `blobs`; the export is incomplete"
            raise ValueError(msg)
        if digest not in sizes:
            sizes[digest] = len(json.dumps(blob["payload"], ensure_ascii=False, default=str))
        budget.spend(sizes[digest])
        return blob["payload"]

    calls: list[Call] = []
    refs: list[ObjectScan] = []
    with reader.usage_policy() as done:
        for position, payload in enumerate(records, 1):

            def make(payload: Any = payload) -> Call | None:
                return record_call(materialize(payload, load), store, refs, reader)

            _add(reader, None, f"records[{position - 1}]", make, calls, position)
            done(None)
    return calls


def _read_lines(reader: LineReader, store: BlockStore) -> list[Call]:
    calls: list[Call] = []
    refs: list[ObjectScan] = []

    def load(digest: str) -> Any:
        msg = f"blob {digest[:20]}… is referenced but a JSONL line carries no blobs"
        raise ValueError(msg)

    with reader.usage_policy() as done:
        for lineno, text in reader.lines():

            def make(text: str = text) -> Call | None:
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as exc:
                    msg = f"not valid JSON ({exc.msg}, column {exc.colno})"
                    raise ValueError(msg) from None
                return record_call(materialize(value, load), store, refs, reader)

            _add(reader, lineno, "", make, calls, lineno)
            done(lineno)
    return calls


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a claude-tap store, export or JSONL capture; see :func:`cacheviz.formats.load`.

    Raises
    ------
    TranscriptError
        On the first bad record (``errors="raise"``) or when no call could be read.
    """
    if path.is_dir():
        path = path / DB_NAME
    reader = LineReader(path, errors=errors)
    store = BlockStore()
    with path.open("rb") as handle:
        head = handle.read(64)
    if head.startswith(_SQLITE_MAGIC):
        calls = _read_store(path, reader, store)
    elif head.lstrip().startswith(b"{") and TRACE_MARKER.encode() in head:
        doc = load_json_document(path)
        if not isinstance(doc, dict):
            msg = "expected claude-tap's compact export (one JSON object)"
            raise TranscriptError(msg, path=path)
        calls = _read_bundle(doc, reader, store)
    else:
        calls = _read_lines(reader, store)
    return reader.session(NAME, calls, store)
