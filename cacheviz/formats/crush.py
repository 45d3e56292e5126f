"""Crush sessions (``<project>/.crush/crush.db``).

Crush (charmbracelet/crush, Go; read from ``internal/db/migrations`` and its agent's
usage tracking) keeps a project's sessions in one SQLite database in WAL mode, opened
here read-only and immutable (a private snapshot when its ``-wal`` holds data):

* ``sessions``: ``id, parent_session_id, title, message_count, prompt_tokens,
  completion_tokens, cost, created_at, updated_at``. After each response Crush
  **overwrites** ``prompt_tokens`` with that response's ``input + cache write`` and
  ``completion_tokens`` with its ``output + cache read``, and **adds** the response's
  price to ``cost``. So the token columns are neither sums nor separable (a cache read
  counted as output), and only ``cost`` covers the session: it is Crush's own figure,
  kept as ``meta["reported_cost_usd"]`` on the session's last call (so that a scan adds
  up to it); the last response's two counts are kept beside it
  (``meta["crush_last_prompt_tokens"]``, ``meta["crush_last_completion_tokens"]``). No
  usage is invented: every call's usage is not reported, and cacheviz bills nothing
  itself.
* ``messages``: ``session_id, role ('user', 'assistant', 'tool'), parts (JSON: {type:
  'text' | 'reasoning' | 'tool_call' | 'tool_result' | 'finish' | ..., data}), model,
  provider, created_at``. An assistant message is one API call when its ``finish``
  part says it was answered (not ``canceled`` or ``error``: counted apart).

Each Crush session is a thread (requests rebuilt from its messages; the system prompt
and tools are not stored); a child session (``parent_session_id``: the agent tool's
sub-agent, or a title or summary request) a thread under its parent's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats._totals import (
    by_session,
    epoch,
    holds_tables,
    runs_by_thread,
    tables,
    vendor,
)
from cacheviz.model import Call, Session
from cacheviz.request._blocks import BlockStore

NAME = "crush"
DESCRIPTION = "Crush sessions (<project>/.crush/crush.db): calls, Crush's own session cost"
_SESSION_COLUMNS = frozenset({"id", "prompt_tokens", "completion_tokens", "cost"})
_MESSAGE_COLUMNS = frozenset({"session_id", "role", "parts"})
_UNANSWERED = frozenset({"canceled", "cancelled", "error"})


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a Crush ``crush.db`` (its ``sessions`` and ``messages`` tables)."""
    return holds_tables(path, head, {"sessions": _SESSION_COLUMNS, "messages": _MESSAGE_COLUMNS})


def _parts(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    return [p for p in value if isinstance(p, dict)] if isinstance(value, list) else []


def _finish(parts: list[dict[str, Any]]) -> str | None:
    for part in parts:
        data = part.get("data")
        if part.get("type") == "finish" and isinstance(data, dict):
            reason = data.get("reason")
            return reason if isinstance(reason, str) else None
    return None


def _sent(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The message as Crush sends it back (finish and reasoning parts are not sent).

    Crush stores each part as ``{type, data}``; sent, a part is the provider's own block.
    Text, tool calls and tool results are written as the content blocks the tokenizer
    reads (``text``, ``function_call`` with its arguments as stored, ``tool_result``),
    every field kept; another kind of part is kept as stored.
    """
    content = [_block(p) for p in parts if p.get("type") not in ("finish", "reasoning")]
    return {"role": role, "content": content}


def _block(part: dict[str, Any]) -> dict[str, Any]:
    """One Crush part as a content block (module doc), its ``data`` fields all kept."""
    kind, data = part.get("type"), part.get("data")
    if not isinstance(data, dict):
        return part
    if kind == "text" and isinstance(data.get("text"), str):
        return {**data, "type": "text"}
    if kind == "tool_call":
        fields = {k: v for k, v in data.items() if k != "input"}
        return {**fields, "type": "function_call", "arguments": data.get("input", "")}
    if kind == "tool_result":
        return {**data, "type": "tool_result"}
    return part


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Crush ``crush.db``: each session a thread, its own running cost kept."""
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    store = BlockStore()
    found = tables(
        path,
        "Crush",
        {
            "sessions": "select * from sessions order by created_at, id",
            "messages": "select * from messages order by session_id, created_at, id",
        },
    )
    sessions, messages = found["sessions"] or [], found["messages"] or []
    grouped = by_session(messages)
    calls: list[Call] = []
    for index, session in enumerate(sessions):
        key = str(session["id"])
        thread = Thread(store, f"crush {key}")
        parent = session.get("parent_session_id")
        mine: list[Call] = []
        for row in grouped.get(key, []):
            role = str(row.get("role"))
            parts = _parts(row.get("parts"))
            if role == "assistant":
                reason = _finish(parts)
                if reason in _UNANSWERED:
                    reader.ignore(f"assistant message {reason} (no answer billed)")
                    continue
                model = row.get("model") if isinstance(row.get("model"), str) else None
                model = model or "unknown"
                call = thread.call(
                    model=model,
                    provider=vendor(model, row.get("provider"), "crush"),
                    ts=epoch(row.get("created_at")),
                    usage=None,
                    meta={"crush_session": key, "finish_reason": reason},
                )
                call.line = index + 1
                if isinstance(parent, str) and parent:
                    call.parent_hint = f"crush {parent}"
                mine.append(call)
            thread.append(_sent(role, parts))
        if mine:
            last = mine[-1].meta
            cost = session.get("cost")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                last["reported_cost_usd"] = float(cost)
            last["crush_last_prompt_tokens"] = session.get("prompt_tokens")
            last["crush_last_completion_tokens"] = session.get("completion_tokens")
        elif session.get("cost"):
            reader.ignore("session with a cost but no answered message (its cost not shown)")
        calls += mine
    if not calls:
        msg = "no answered assistant message in any Crush session: nothing to rebuild"
        raise TranscriptError(msg, path=path)
    return reader.session(NAME, calls, store, runs=runs_by_thread(calls))
