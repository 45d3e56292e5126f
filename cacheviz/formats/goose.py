"""Goose sessions (``~/.local/share/goose/sessions/sessions.db``; ``$GOOSE_PATH_ROOT``).

Goose (block/goose, Rust; read from ``crates/goose/src/session/`` and its providers'
``formats/*.rs``, schema 13 of Goose 1.35 as a public capture shows it) keeps every
session in one SQLite database, opened here read-only and immutable (older databases,
schema 5 as a real one from late 2025 shows, lack ``provider_name`` and
``model_config_json``: the model is then ``unknown``):

* ``sessions``: ``id, name, session_type ('user', 'sub_agent', 'scheduled', ...),
  working_dir, created_at, updated_at, provider_name, model_config_json ({"model_name":
  ...}), total_tokens, input_tokens, output_tokens`` (the last reply's) and
  ``accumulated_total_tokens, accumulated_input_tokens, accumulated_output_tokens``
  (the session's running totals), ``parent_session_id`` in newer versions. Goose's
  ``input_tokens`` include the cache reads and writes (its providers build their usage
  with ``Usage::from_cache_exclusive_input``), and **no cache split is stored**: cache
  reads and writes are not reported (null, not 0). The reasoning tokens are the part of
  ``total`` beyond input + output (kept in ``meta``; Goose bills them as output).
* ``messages``: ``session_id, message_id, role, content_json, created_timestamp,
  metadata_json`` (``agentVisible: false``: shown to the user only, not sent).

Usage is billed at the **session's scope** (``Session.session_usage``): the accumulated
totals, else (older databases) the last reply's, which ``meta["goose_totals"]`` names.
The calls are the assistant messages the model sees (one reply each), usage not
reported; each Goose session is a thread (requests rebuilt from its agent-visible
messages; the system prompt and tools are not stored), a sub-agent's session
(``parent_session_id``) a thread under its parent's.
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
    summed,
    tables,
    vendor,
)
from cacheviz.model import Call, Session, SessionUsage, Usage
from cacheviz.request._blocks import BlockStore

NAME = "goose"
DESCRIPTION = "Goose sessions (~/.local/share/goose/sessions/sessions.db): session totals"
# schema 5 (Goose 1.x, late 2025: no provider_name, model_config_json) and later alike
_SESSION_COLUMNS = frozenset({"id", "working_dir", "accumulated_input_tokens"})
_MESSAGE_COLUMNS = frozenset({"session_id", "role", "content_json", "created_timestamp"})


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a Goose ``sessions.db`` (its ``sessions`` and ``messages`` tables)."""
    return holds_tables(path, head, {"sessions": _SESSION_COLUMNS, "messages": _MESSAGE_COLUMNS})


def _model(raw: Any) -> str | None:
    try:
        config = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    name = config.get("model_name") if isinstance(config, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else None


def _usage(row: dict[str, Any], where: str) -> tuple[Usage | None, str, int | None]:
    """The session's usage, which columns gave it, and its reasoning tokens."""
    for prefix in ("accumulated_", ""):
        inp = count(row.get(f"{prefix}input_tokens"), f"{where}.{prefix}input_tokens")
        out = count(row.get(f"{prefix}output_tokens"), f"{where}.{prefix}output_tokens")
        every = count(row.get(f"{prefix}total_tokens"), f"{where}.{prefix}total_tokens")
        if inp or out:
            extra = every - (inp or 0) - (out or 0) if every is not None else None
            usage = Usage(input_tokens=inp, output_tokens=out)
            return usage, f"{prefix}*_tokens", extra if extra and extra > 0 else None
    return None, "", None


def _visible(raw: Any) -> bool:
    try:
        meta = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return True
    return not (isinstance(meta, dict) and meta.get("agentVisible") is False)


def _content(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Goose ``sessions.db``: each session a thread, its totals billed at its scope."""
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    store = BlockStore()
    found = tables(
        path,
        "Goose",
        {
            "sessions": "select * from sessions order by created_at, id",
            "messages": "select * from messages order by session_id, created_timestamp, id",
        },
    )
    sessions, messages = found["sessions"] or [], found["messages"] or []
    grouped = by_session(messages)
    calls: list[Call] = []
    usages: list[SessionUsage] = []
    for index, session in enumerate(sessions):
        key = str(session["id"])
        model = _model(session.get("model_config_json")) or "unknown"
        provider = vendor(model, session.get("provider_name"), "goose")
        try:
            usage, source, reasoning = _usage(session, f"sessions[{key}]")
        except ValueError as exc:
            reader.fail(None, str(exc))
            usage, source, reasoning = None, "", None
        if usage is not None:
            when = epoch(session.get("updated_at")) or epoch(session.get("created_at"))
            usages.append(SessionUsage(model, provider, usage, when))
        thread = Thread(store, f"goose {key}")
        parent = session.get("parent_session_id")
        first = True
        last_id: object = object()
        for row in grouped.get(key, []):
            if not _visible(row.get("metadata_json")):
                reader.ignore("message not sent to the model (agentVisible false)")
                continue
            role = row.get("role")
            same_reply = row.get("message_id") is not None and row.get("message_id") == last_id
            if role == "assistant" and not same_reply:
                meta: dict[str, Any] = {"goose_session": key}
                if session.get("session_type"):
                    meta["session_type"] = session["session_type"]
                if first and source:
                    meta["goose_totals"] = source
                    if reasoning:
                        meta["goose_reasoning_tokens"] = reasoning
                call = thread.call(
                    model=model,
                    provider=provider,
                    ts=epoch(row.get("created_timestamp")),
                    usage=None,
                    meta=meta,
                )
                call.line = index + 1
                if isinstance(parent, str) and parent:
                    call.parent_hint = f"goose {parent}"
                calls.append(call)
                first = False
            last_id = row.get("message_id") if role == "assistant" else object()
            thread.append({"role": role, "content": _content(row.get("content_json"))})
    if not calls:
        msg = (
            f"the Goose database holds {len(sessions)} session(s) and no assistant message: "
            "nothing was answered, so there is no call to read"
        )
        raise EmptyTranscriptError(msg, path=path)
    result = reader.session(NAME, calls, store, runs=runs_by_thread(calls))
    result.session_usage = usages
    result.reported_totals = summed(usages)
    return result
