"""Hermes Agent's session store (``~/.hermes/state.db``; ``$HERMES_HOME``).

Hermes Agent (NousResearch/hermes-agent, Python; read from its ``hermes_state.py`` and
``agent/usage_pricing.py``) keeps every session in one SQLite database (WAL mode), opened
here read-only and immutable (``formats/_sqlite.py``):

* ``sessions``: ``id, source, model, system_prompt, parent_session_id, started_at,
  ended_at, message_count, api_call_count, input_tokens, output_tokens,
  cache_read_tokens, cache_write_tokens, reasoning_tokens, billing_provider,
  estimated_cost_usd, actual_cost_usd, ...`` (older databases lack the cache, reasoning,
  cost and call-count columns). The counts are **totals over the session**, never per
  call: ``input_tokens`` is the uncached input (Hermes's ``CanonicalUsage``: prompt =
  input + cache read + cache write), so the inclusive input is their sum (``derived``).
  Newer databases also keep ``session_model_usage`` (the same totals per session and
  model); when present, its rows are the figures. ``reasoning_tokens`` is the reasoning
  part of ``output_tokens`` (Hermes's pricing treats it as telemetry inside the output):
  the reasoning column, not added to the output.
* ``messages``: ``session_id, role, content, tool_calls, tool_call_id, timestamp``,
  OpenAI chat messages.

Usage is billed at the **session's scope** (``Session.session_usage``, one entry per
Hermes session and model, as for Copilot CLI): the hit ratio comes from these totals and
no per-call figure is invented. The calls are the assistant messages (one API call
each), usage not reported; ``api_call_count`` (Hermes's own count of API calls, retries
and auxiliary calls included) and Hermes's cost (actual, else estimated: the agent's
own figure for the whole session, as ``reported_cost_usd``) are in the first call's
``meta``. Each Hermes session is a thread (its requests rebuilt from its messages after its logged
``system_prompt``; the tool schemas are not stored), a child session
(``parent_session_id``: a compression continuation or a delegated sub-agent) a thread
whose parent is its parent session's. A session with totals but no messages is billed
at its scope and has no calls.
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

NAME = "hermes"
DESCRIPTION = "Hermes Agent session store (~/.hermes/state.db): session totals billed at its scope"
_SESSION_COLUMNS = frozenset({"id", "source", "started_at", "input_tokens", "output_tokens"})
_MESSAGE_COLUMNS = frozenset({"session_id", "role", "content"})
_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a Hermes ``state.db`` (its ``sessions`` and ``messages`` tables)."""
    return holds_tables(path, head, {"sessions": _SESSION_COLUMNS, "messages": _MESSAGE_COLUMNS})


def _usage(row: dict[str, Any], where: str) -> Usage | None:
    counts = {key: count(row.get(key), f"{where}.{key}") for key in _COUNTS}
    if not any(counts.values()):
        return None
    parts = [counts["input_tokens"], counts["cache_read_tokens"], counts["cache_write_tokens"]]
    present = [p for p in parts if p is not None]
    reasoning = count(row.get("reasoning_tokens"), f"{where}.reasoning_tokens")
    return Usage(
        input_tokens=sum(present) if present else None,
        cache_read_tokens=counts["cache_read_tokens"],
        cache_write_tokens=counts["cache_write_tokens"],
        output_tokens=counts["output_tokens"],
        provenance="derived",
        # part of the output (Hermes keeps it as telemetry, billed within output_tokens)
        reasoning_tokens=reasoning,
    )


def _provider(model: str, billing: Any) -> str:
    return vendor(model, billing, "hermes")


def _message(row: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": row["role"], "content": row.get("content") or ""}
    calls = row.get("tool_calls")
    if isinstance(calls, str) and calls:
        try:
            message["tool_calls"] = json.loads(calls)
        except ValueError:
            message["tool_calls"] = calls
    if row.get("tool_call_id"):
        message["tool_call_id"] = row["tool_call_id"]
    return message


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Hermes ``state.db``: each session a thread, its totals billed at its scope."""
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    store = BlockStore()
    found = tables(
        path,
        "Hermes",
        {
            "sessions": "select * from sessions order by started_at, id",
            "messages": "select session_id, role, content, tool_calls, tool_call_id, timestamp "
            "from messages order by session_id, timestamp, id",
        },
        optional={"session_model_usage": "select * from session_model_usage"},
    )
    sessions, messages = found["sessions"] or [], found["messages"] or []
    per_model = found["session_model_usage"]
    grouped = by_session(messages)
    calls: list[Call] = []
    usages: list[SessionUsage] = []
    for index, session in enumerate(sessions):
        key = str(session["id"])
        where = f"sessions[{key}]"
        model = session.get("model") if isinstance(session.get("model"), str) else None
        model = model or "unknown"
        billing = session.get("billing_provider")
        ended = epoch(session.get("ended_at")) or epoch(session.get("started_at"))
        try:
            if per_model is None:
                usage = _usage(session, where)
                if usage is not None:
                    usages.append(SessionUsage(model, _provider(model, billing), usage, ended))
            else:
                for row in per_model:
                    if str(row.get("session_id")) != key or not row.get("model"):
                        continue
                    usage = _usage(row, f"session_model_usage[{key}, {row['model']}]")
                    if usage is not None:
                        name = str(row["model"])
                        provider = _provider(name, row.get("billing_provider"))
                        usages.append(SessionUsage(name, provider, usage, ended))
        except ValueError as exc:
            reader.fail(None, str(exc))
        thread = Thread(store, f"hermes {key}", api="chat.completions")
        if isinstance(session.get("system_prompt"), str) and session["system_prompt"]:
            thread.append({"role": "system", "content": session["system_prompt"]})
        first = True
        parent = session.get("parent_session_id")
        for row in grouped.get(key, []):
            if row["role"] == "assistant":
                meta: dict[str, Any] = {"hermes_session": key, "source": session.get("source")}
                if first:
                    for name in ("api_call_count", "actual_cost_usd", "estimated_cost_usd"):
                        if session.get(name) is not None:
                            meta[f"hermes_{name}"] = session[name]
                    if session.get("reasoning_tokens"):
                        meta["hermes_reasoning_tokens"] = session["reasoning_tokens"]
                    own = session.get("actual_cost_usd")
                    own = own if own is not None else session.get("estimated_cost_usd")
                    if isinstance(own, (int, float)) and not isinstance(own, bool):
                        meta["reported_cost_usd"] = float(own)  # the session's, on its first call
                call = thread.call(
                    model=model,
                    provider=_provider(model, billing),
                    ts=epoch(row.get("timestamp")),
                    usage=None,
                    meta=meta,
                )
                call.line = index + 1
                if isinstance(parent, str) and parent:
                    call.parent_hint = f"hermes {parent}"
                calls.append(call)
                first = False
            thread.append(_message(row))
    if not calls:
        msg = "no assistant message in any Hermes session: nothing to rebuild"
        raise TranscriptError(msg, path=path)
    result = reader.session(NAME, calls, store, runs=runs_by_thread(calls))
    result.session_usage = usages
    result.reported_totals = summed(usages)
    return result
