"""ZCode sessions (Z.ai's coding agent: ``~/.zcode/cli/db/db.sqlite``; ``$ZCODE_HOME``).

ZCode's client is not public; its store is read as the public readers of it agree
(``Cee-Ovo/zcode-usage-panel``, ``src-tauri/src/zcode/session_meta.rs`` and
``sqlite.rs``; a ZCode session-stats plugin's ``stats-core.mjs``; and a session
scanner's test that builds the store, ``createZcodeSessionDb``), an SQLite database
holding:

* ``session (id, parent_id, title, directory, time_created, time_updated)``: one row per
  conversation; a sub-agent's session (``sess_subagent…``) names its parent in
  ``parent_id``;
* ``model_usage (id, session_id, model_id, started_at, completed_at, status,
  query_source, logical_request_id, input_tokens, output_tokens, reasoning_tokens,
  cache_creation_input_tokens, cache_read_input_tokens, ...)``: **one row per model
  request**, written when it starts (``status: "running"``) and given its usage when it
  completes; ``query_source`` says what it was for (``main_turn``, ``subagent``,
  ``session_title``); retries of one request share its ``logical_request_id``;
* ``message (id, session_id, data, time_created)``: the conversation, ``data`` a JSON
  object (``role``, ``time.created``, ``agent``, and its ``content`` when kept).

Each row is a call **when it completed** (a ``status`` other than ``completed`` - still
running, failed, cancelled - is a request not answered: counted in ``Session.ignored``,
not a call; a store without the column has every row a call). ``input_tokens`` is the
whole prompt, the cache reads inside it (the readers above take it so: the stats plugin
shows the last request's ``input_tokens`` as the context's size and its hit ratio as
``cache_read / (input + cache_write)``), and the cache writes apart from it: the
inclusive input is ``input_tokens + cache_creation_input_tokens``
(``provenance="derived"``; ``meta["zcode_input_tokens"]`` keeps the column). A row whose
cache reads exceed its ``input_tokens`` cannot hold them: its parts are added up instead
(``meta["zcode_input_reading"] = "apart"``). ``reasoning_tokens`` is shown apart as a
part of the output when it is not more than it, else kept in ``meta``.

Each session is a thread, its requests rebuilt from the messages created before the call
started (the system prompt and tools are not stored); a sub-agent's session is a thread
under its ``parent_id``'s, and a session's requests of another ``query_source`` (a
title, a sub-agent's requests kept under its parent) are threads of their own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cacheviz.errors import EmptyTranscriptError
from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats._totals import (
    by_session,
    count,
    epoch,
    holds_tables,
    runs_by_thread,
    tables,
    vendor,
)
from cacheviz.model import Call, Session, Usage
from cacheviz.request._blocks import BlockStore

NAME = "zcode"
DESCRIPTION = "ZCode sessions (~/.zcode/cli/db/db.sqlite): a call per completed model_usage row"
_SESSION_COLUMNS = frozenset({"id", "parent_id", "directory"})
_USAGE_COLUMNS = frozenset({"session_id", "model_id", "input_tokens", "output_tokens"})
# ZCode speaks the Anthropic Messages API (GLM through Z.ai's Anthropic-compatible
# endpoint); a model no vendor claims is replayed under its rules
_API = "anthropic"
_MAIN = "main_turn"


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a ZCode store (its ``session`` and ``model_usage`` tables)."""
    return holds_tables(path, head, {"session": _SESSION_COLUMNS, "model_usage": _USAGE_COLUMNS})


def _usage(row: dict[str, Any], where: str) -> tuple[Usage | None, dict[str, Any]]:
    """A ``model_usage`` row's usage (``None`` when it counts nothing) and its extra meta."""
    prompt = count(row.get("input_tokens"), f"{where}.input_tokens")
    read = count(row.get("cache_read_input_tokens"), f"{where}.cache_read_input_tokens")
    write = count(row.get("cache_creation_input_tokens"), f"{where}.cache_creation_input_tokens")
    output = count(row.get("output_tokens"), f"{where}.output_tokens")
    reasoning = count(row.get("reasoning_tokens"), f"{where}.reasoning_tokens")
    meta: dict[str, Any] = {"zcode_input_tokens": prompt}
    if not any((prompt, read, write, output, reasoning)):
        return None, meta
    if prompt is not None and (read or 0) > prompt:
        meta["zcode_input_reading"] = "apart"  # the reads cannot be inside the prompt
        inclusive: int | None = prompt + (read or 0) + (write or 0)
    else:
        parts = [p for p in (prompt, write) if p is not None]
        inclusive = sum(parts) if parts else None
    apart = (
        reasoning if reasoning is not None and output is not None and reasoning <= output else None
    )
    if reasoning is not None and apart is None:
        meta["zcode_reasoning_tokens"] = reasoning
    usage = Usage(
        input_tokens=inclusive,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=output,
        provenance="derived",
        reasoning_tokens=apart,
    )
    return usage, meta


def _message(row: dict[str, Any]) -> dict[str, Any] | None:
    """A ``message`` row as the message it sent (``None``: not a message of the model)."""
    try:
        data = json.loads(row["data"]) if isinstance(row.get("data"), str) else row.get("data")
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("role") not in ("user", "assistant", "tool"):
        return None
    content = data.get("content")
    if content is None:
        content = data.get("parts", "")
    return {"role": data["role"], "content": content}


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a ZCode store: a call per completed ``model_usage`` row, a thread per session."""
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    store = BlockStore()
    found = tables(
        path,
        "ZCode",
        {
            "session": "select * from session order by time_created, id",
            "model_usage": "select * from model_usage order by session_id, started_at",
        },
        optional={"message": "select * from message order by session_id, time_created, rowid"},
    )
    sessions, usage_rows = found["session"] or [], found["model_usage"] or []
    messages = found["message"] or []
    grouped_messages = by_session(messages)
    grouped_usage = by_session(usage_rows)
    known = {str(s["id"]) for s in sessions}
    calls: list[Call] = []
    number = 0
    for session in sessions:
        key = str(session["id"])
        parent = session.get("parent_id")
        threads: dict[str, Thread] = {}
        pending = list(grouped_messages.get(key, []))
        for row in grouped_usage.get(key, []):
            number += 1
            status = row.get("status")
            if "status" in row and status != "completed":
                reader.ignore(f"model_usage row {status or 'without a status'} (not answered)")
                continue
            source = row.get("query_source")
            source = source if isinstance(source, str) and source else _MAIN
            main = source == _MAIN or (source == "subagent" and parent in known)
            name = f"zcode {key}" if main else f"zcode {key} {source}"
            thread = threads.setdefault(name, Thread(store, name))
            started = epoch(row.get("started_at"))
            while (
                main
                and pending
                and (
                    started is None or (epoch(pending[0].get("time_created")) or started) <= started
                )
            ):
                message = _message(pending.pop(0))
                if message is not None:
                    thread.append(message)
            try:
                usage, extra = _usage(row, f"model_usage[{row.get('id')}]")
            except ValueError as exc:
                reader.fail(None, str(exc))
                usage, extra = None, {}
            model = str(row.get("model_id") or "unknown")
            meta: dict[str, Any] = {"zcode_session": key, "query_source": source, **extra}
            if session.get("title"):
                meta["title"] = session["title"]
            call = thread.call(
                model=model, provider=vendor(model, None, _API), ts=started, usage=usage, meta=meta
            )
            call.line = number
            if not main:
                call.parent_hint = f"zcode {key}"
            elif isinstance(parent, str) and parent in known:
                call.parent_hint = f"zcode {parent}"
            calls.append(call)
    if not calls:
        msg = "no completed model request (model_usage row) in any ZCode session: no call to read"
        raise EmptyTranscriptError(msg, path=path)
    return reader.session(NAME, calls, store, runs=runs_by_thread(calls))
