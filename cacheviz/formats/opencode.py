"""OpenCode storage: the SQLite ``opencode.db`` (OpenCode 1.x) or the older JSON folders.

Both hold the same records. Sessions (``parent_id``/``parentID``: a sub-agent's parent),
messages (``role`` user or assistant; an assistant message names ``providerID`` and
``modelID`` and carries ``tokens`` = ``{input, output, reasoning, cache: {read,
write}}``) and parts (``text``, ``reasoning``, ``tool``, ``file``, ``step-start``,
``step-finish``, ...) in creation order:

- ``~/.local/share/opencode/opencode.db``: tables ``session``, ``message``
  (``id, session_id, time_created, data``) and ``part`` (``id, message_id, session_id,
  time_created, data``), ``data`` a JSON object. Opened read-only and immutable (a
  private copy when its ``-wal`` holds data: ``formats/_sqlite.py``), so nothing is
  written beside it; no other table is read. Kilo's CLI keeps the same tables in
  ``~/.local/share/kilo/kilo.db``.
- ``~/.local/share/opencode/storage/`` (also Kilo Code's CLI): ``session/<project>/
  <session>.json``, ``message/<session>/<message>.json``, ``part/<message>/<part>.json``.
  Load the ``storage`` folder (or the ``opencode`` folder holding it).

Each step of an assistant message (``step-start`` ... ``step-finish``) is one API call;
its usage is the ``step-finish`` part's ``tokens``: ``input`` excludes the cache reads
and writes (OpenCode subtracts them), ``reasoning`` is output. A step is a call only if
it was sent and answered: a ``step-start`` that no ``step-finish`` closes is counted
apart in ``Session.ignored``, as a *retried* step (another ``step-start`` follows in
the same message: OpenCode retried the request after an error), an *aborted or failed*
step (the message carries an ``error``) or an *unfinished* one (cut off, or still
running); its content, if any, stays in the conversation. (This is the count ccusage
and OpenCode's own per-message ``tokens`` give.) An assistant message without step
parts (older OpenCode) is one call with the message's ``tokens`` when any is non-zero.

Requests are rebuilt (the system prompt and tools are not stored): each OpenCode session
is a thread with its own unlogged prefix; its conversation is user text and files,
assistant text and tool calls, and tool results, as OpenCode sends them back (reasoning
is not re-sent). A session's sub-agent sessions are threads whose parent is it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats._sqlite import open_read_only, rows
from cacheviz.model import Call, Session, Usage
from cacheviz.reported._usage import normalize_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "opencode"
DESCRIPTION = "OpenCode storage: opencode.db (1.x) or the storage/ JSON folders (also Kilo CLI)"
_SQLITE = b"SQLite format 3\x00"
_TABLES = ("session", "message", "part")
_PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "google": "google"}
_STEP_PARTS = ("step-start", "step-finish")


def is_storage(path: Path) -> bool:
    """Whether ``path`` is an OpenCode ``storage`` folder (session/, message/, part/)."""
    return path.is_dir() and all((path / name).is_dir() for name in _TABLES)


def _storage(path: Path) -> Path | None:
    """The ``storage`` folder ``path`` is or holds, when it has the three record folders."""
    return next((f for f in (path, path / "storage") if is_storage(f)), None)


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is an OpenCode database or storage folder."""
    if path.is_dir():
        return _storage(path) is not None
    if not head.startswith(_SQLITE):
        return False
    try:
        with open_read_only(path) as con:
            names = {row[0] for row in con.execute("select name from sqlite_master")}
            columns = {row[1] for row in con.execute("pragma table_info(part)")}
    except (sqlite3.Error, OSError):
        return False
    return set(_TABLES) <= names and {"message_id", "data"} <= columns


@dataclass(slots=True)
class _Record:
    """One message or part, wherever it was stored."""

    id: str
    session: str
    created: int | None  # milliseconds
    data: dict[str, Any]
    message: str | None = None  # a part's message
    where: str = ""


@dataclass(slots=True)
class _Store:
    sessions: dict[str, str | None] = field(default_factory=dict)  # id -> parent id
    messages: list[_Record] = field(default_factory=list)
    parts: dict[str, list[_Record]] = field(default_factory=dict)  # message id -> parts


def _object(text: Any, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) else text
    except (ValueError, RecursionError) as exc:
        msg = f"{where}: not valid JSON ({exc})"
        raise ValueError(msg) from None
    if not isinstance(value, dict):
        msg = f"{where}: {json_type(value)}; expected a JSON object"
        raise ValueError(msg)
    return value


def _from_db(path: Path, reader: LineReader) -> _Store:
    with ExitStack() as stack:
        try:
            con = stack.enter_context(open_read_only(path))
        except (sqlite3.Error, OSError) as exc:
            msg = f"can't open the database ({exc}); expected an OpenCode or Kilo database"
            raise TranscriptError(msg, path=path) from None
        return _rows(con, path, reader)


def _rows(con: sqlite3.Connection, path: Path, reader: LineReader) -> _Store:
    store = _Store()
    try:
        for sid, parent in rows(con, "select id, parent_id from session order by id"):
            store.sessions[str(sid)] = parent
        for mid, sid, created, data in rows(
            con, "select id, session_id, time_created, data from message order by time_created, id"
        ):
            where = f"message {mid}"
            try:
                store.messages.append(_Record(mid, sid, created, _object(data, where), None, where))
            except ValueError as exc:
                reader.fail(None, str(exc))
        for pid, mid, sid, created, data in rows(
            con, "select id, message_id, session_id, time_created, data from part order by id"
        ):
            where = f"part {pid}"
            try:
                record = _Record(pid, sid, created, _object(data, where), mid, where)
            except ValueError as exc:
                reader.fail(None, str(exc))
                continue
            store.parts.setdefault(mid, []).append(record)
    except sqlite3.Error as exc:
        msg = f"can't read the OpenCode tables ({exc}); is this an opencode.db?"
        raise TranscriptError(msg, path=path) from None
    return store


def _json_files(folder: Path) -> Iterator[Path]:
    yield from sorted(p for p in folder.rglob("*.json") if p.is_file())


def _from_folders(root: Path, reader: LineReader) -> _Store:
    store = _Store()
    for file in _json_files(root / "session"):
        try:
            data = _object(file.read_bytes(), str(file.relative_to(root)))
        except (ValueError, OSError) as exc:
            reader.fail(None, str(exc))
            continue
        store.sessions[str(data.get("id") or file.stem)] = data.get("parentID")
    messages = []
    for file in _json_files(root / "message"):
        where = str(file.relative_to(root))
        try:
            data = _object(file.read_bytes(), where)
        except (ValueError, OSError) as exc:
            reader.fail(None, str(exc))
            continue
        created = (
            (data.get("time") or {}).get("created") if isinstance(data.get("time"), dict) else None
        )
        session = str(data.get("sessionID") or file.parent.name)
        messages.append(
            _Record(str(data.get("id") or file.stem), session, created, data, None, where)
        )
    store.messages = sorted(
        messages, key=lambda r: (r.created if isinstance(r.created, int) else 0, r.id)
    )
    for file in _json_files(root / "part"):
        where = str(file.relative_to(root))
        try:
            data = _object(file.read_bytes(), where)
        except (ValueError, OSError) as exc:
            reader.fail(None, str(exc))
            continue
        message = str(data.get("messageID") or file.parent.name)
        record = _Record(str(data.get("id") or file.stem), "", None, data, message, where)
        store.parts.setdefault(message, []).append(record)
    for parts in store.parts.values():
        parts.sort(key=lambda r: r.id)
    return store


def _time(ms: Any) -> datetime | None:
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _usage(tokens: Any, where: str) -> Usage | None:
    if tokens is None:
        return None
    if not isinstance(tokens, dict):
        msg = f"{where}: field `tokens` is {json_type(tokens)}; expected an object"
        raise ValueError(msg)
    found = tokens.get("cache")
    cache: dict[str, Any] = found if isinstance(found, dict) else {}
    output, reasoning = tokens.get("output"), tokens.get("reasoning")
    shaped = {
        "input_tokens": tokens.get("input"),
        "cache_read_input_tokens": cache.get("read"),
        "cache_creation_input_tokens": cache.get("write"),
        "output_tokens": output
        if not isinstance(reasoning, int) or not isinstance(output, int)
        else output + reasoning,
    }
    return normalize_usage({k: v for k, v in shaped.items() if v is not None}, where)


def _nonzero(usage: Usage | None) -> bool:
    return usage is not None and any(
        (v or 0) > 0 for v in (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens)
    )


class _Builder:
    """Turn the records into threads (one per OpenCode session) and calls."""

    def __init__(self, store: _Store, reader: LineReader) -> None:
        self.store = store
        self.reader = reader
        self.blocks = BlockStore()
        self.threads: dict[str, Thread] = {}
        self.calls: list[Call] = []

    def thread(self, session: str) -> Thread:
        thread = self.threads.get(session)
        if thread is None:
            thread = self.threads[session] = Thread(self.blocks, session)
        return thread

    def run(self) -> None:
        for message in self.store.messages:
            try:
                self._message(message)
            except ValueError as exc:
                self.reader.fail(None, str(exc))

    def _message(self, message: _Record) -> None:
        role = message.data.get("role")
        parts = self.store.parts.get(message.id, [])
        thread = self.thread(message.session)
        if role == "user":
            content = [block for part in parts for block in _user_blocks(part)]
            thread.append({"role": "user", "content": content})
            return
        if role != "assistant":
            self.reader.ignore(f"{role} message" if isinstance(role, str) else "untyped message")
            return
        model = message.data.get("modelID")
        if not isinstance(model, str) or not model:
            msg = f"{message.where}: field `modelID` is {json_type(model)}; expected the model"
            raise ValueError(msg)
        provider = str(message.data.get("providerID") or "unknown")
        provider = _PROVIDERS.get(provider, provider)
        stamp = message.data.get("time")
        if stamp is not None and not isinstance(stamp, dict):
            msg = (
                f"{message.where}: field `time` is {json_type(stamp)}; "
                "expected an object with `created` (epoch milliseconds)"
            )
            raise ValueError(msg)
        start = _time((stamp or {}).get("created"))
        turn = _Turn(thread)
        if not any(p.data.get("type") in _STEP_PARTS for p in parts):  # older OpenCode
            usage = _usage(message.data.get("tokens"), message.where)
            if _nonzero(usage):
                self._call(thread, model, provider, start, message, usage)
            else:
                self.reader.ignore("assistant message without a finished step (no API call)")
        finished = _finished_steps(parts)
        pending: Call | None = None
        for i, part in enumerate(parts):
            kind = part.data.get("type")
            if kind == "step-start":
                turn.flush()  # the step before: its turn and tool results are sent back
                pending = None
                if i in finished:
                    pending = self._call(thread, model, provider, start, message, None)
                else:
                    self.reader.ignore(_unfinished(message, parts, i))
            elif kind == "step-finish" and pending is None:  # a finish without its start
                turn.flush()
                pending = self._call(thread, model, provider, start, message, None)
            if kind == "step-finish" and pending is not None:  # always, set just above
                pending.usage = _usage(part.data.get("tokens"), part.where)
                pending = None
            elif kind == "text" and isinstance(part.data.get("text"), str):
                if not part.data.get("synthetic"):
                    turn.add({"type": "text", "text": part.data["text"]})
            elif kind == "tool":
                turn.tool(part)
            elif isinstance(kind, str) and kind != "step-start":
                self.reader.ignore(f"{kind} part")
        turn.flush()

    def _call(
        self,
        thread: Thread,
        model: str,
        provider: str,
        ts: datetime | None,
        message: _Record,
        usage: Usage | None,
    ) -> Call:
        call = thread.call(
            model=model, provider=provider, ts=ts, usage=usage, meta={"message_id": message.id}
        )
        parent = self.store.sessions.get(message.session)
        call.parent_hint = parent if isinstance(parent, str) else None
        call.line = len(self.calls) + 1
        self.calls.append(call)
        return call


def _finished_steps(parts: list[_Record]) -> set[int]:
    """The positions of the ``step-start`` parts that a ``step-finish`` closes."""
    out: set[int] = set()
    opened: int | None = None
    for i, part in enumerate(parts):
        kind = part.data.get("type")
        if kind == "step-start":
            opened = i
        elif kind == "step-finish" and opened is not None:
            out.add(opened)
            opened = None
    return out


def _unfinished(message: _Record, parts: list[_Record], at: int) -> str:
    """What a step that never finished was, as counted in ``Session.ignored``."""
    later = any(p.data.get("type") == "step-start" for p in parts[at + 1 :])
    if later:
        return "retried step (started, never answered; not a call)"
    if message.data.get("error") is not None:
        return "aborted or failed step (no usage reported; not a call)"
    return "unfinished step (cut off or still running; not a call)"


class _Turn:
    """The assistant turn of one step being built, and the tool results it gets back."""

    def __init__(self, thread: Thread) -> None:
        self.thread = thread
        self.content: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []
        self.open = False

    def add(self, block: dict[str, Any]) -> None:
        if not self.open:
            self.thread.append({"role": "assistant", "content": self.content})
            self.open = True
        self.content.append(block)
        self.thread.touch(len(self.thread.messages) - 1)

    def tool(self, part: _Record) -> None:
        call_id = str(part.data.get("callID") or part.id)
        found = part.data.get("state")
        state: dict[str, Any] = found if isinstance(found, dict) else {}
        self.add(
            {
                "type": "tool_use",
                "id": call_id,
                "name": str(part.data.get("tool") or "tool"),
                "input": state.get("input") or {},
            }
        )
        done = state.get("status") == "completed"
        output = state.get("output") if done else state.get("error")
        self.results.append(
            {"type": "tool_result", "tool_use_id": call_id, "content": str(output or "")}
        )

    def flush(self) -> None:
        if self.results:
            self.thread.append({"role": "user", "content": self.results})
        self.content, self.results, self.open = [], [], False


def _user_blocks(part: _Record) -> list[dict[str, Any]]:
    kind = part.data.get("type")
    if kind == "text" and isinstance(part.data.get("text"), str):
        return [{"type": "text", "text": part.data["text"]}]
    if kind == "file":
        return [{"type": "file", "name": str(part.data.get("filename") or part.data.get("url"))}]
    return []


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read an OpenCode database or storage folder: one call per assistant step."""
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    root = _storage(path) if path.is_dir() else None
    if path.is_dir() and root is None:
        msg = "not an OpenCode storage folder; expected session/, message/ and part/ in it"
        raise TranscriptError(msg, path=path)
    store = _from_folders(root, reader) if root is not None else _from_db(path, reader)
    builder = _Builder(store, reader)
    with reader.usage_policy() as done:
        builder.run()
        done(None)
    return reader.session(NAME, builder.calls, builder.blocks)
