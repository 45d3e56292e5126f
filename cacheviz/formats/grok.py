"""Grok Build CLI sessions (``~/.grok/sessions/<url-encoded cwd>/<session id>/updates.jsonl``).

xAI's Grok Build CLI (``grok``; read from its source as published in the
``SurmountSystems/grok-oss`` mirror: ``crates/codegen/xai-grok-shell/src/extensions/
notification.rs``, ``PromptUsage`` / ``PromptUsageModel`` / ``SessionUpdate``, and
``xai-grok-pager-pty-harness/src/leader.rs`` for the file's envelope; and from ccusage's
Grok adapter, ``ccusage/ccusage`` ``rust/crates/ccusage/src/adapter/grok/``) keeps a
folder per session holding ``updates.jsonl`` (read here), ``summary.json`` (``info.cwd``,
``current_model_id``), ``chat_history.jsonl``, ``events.jsonl``, ``signals.json`` and,
in later versions, ``usage.json`` (not read: ``updates.jsonl`` carries the same turns).

Every line of ``updates.jsonl`` is an ACP notification as the agent sent it:
``{"timestamp": <Unix seconds>, "method": "session/update" | "_x.ai/session/update",
"params": {"sessionId", "update": {"sessionUpdate": <kind>, ...}, "_meta": {"eventId",
...}}}``. The kinds read:

* ``user_message_chunk`` / ``agent_message_chunk`` (``content: {type: "text", text}``):
  the user's prompt and the agent's answer, streamed in chunks (joined here);
* ``tool_call`` (``toolCallId``, ``title``, ``rawInput``) and ``tool_call_update``
  (``status``, ``rawOutput`` / ``content``): the tools the agent ran and their results;
* ``turn_completed`` (``prompt_id``, ``stop_reason``, ``usage``): the end of one prompt's
  turn, with the **turn's** usage: ``inputTokens`` (the *full* prompt of every model call
  of the turn, cache reads and cache writes included - the source's "ACP identity"),
  ``cachedReadTokens``, ``cacheCreationTokens`` (both parts of ``inputTokens``),
  ``outputTokens`` (``reasoningTokens`` a part of it), ``totalTokens`` (input + output),
  ``modelCalls``, ``costUsdTicks`` (1e10 ticks = $1, dropped by the agent when
  ``costIsPartial`` or ``usageIsIncomplete``), ``numTurns``, and ``modelUsage`` (the same
  per model, keyed by the name xAI bills: ``grok-4.5-build``, ``grok-4.6-build``). The
  turn's usage counts its sub-agents' calls too (the agent marks it ``usageIsIncomplete``
  when a sub-agent was still open). A turn the user interrupted (Esc) ends with
  ``stop_reason: "cancelled"`` and no usage: its calls were made, their usage is not
  reported (a call with usage null, no bill).

The log never says what one model call used, only what a turn's ``modelCalls`` calls
used together. So each turn is **one call** (its last request, rebuilt from the messages
so far; the system prompt and tools are not logged) with usage **not reported**, and the
turn's usage is billed at the **session's scope** (:class:`~cacheviz.model.SessionUsage`,
one per turn and model, at the turn's time), ``provenance="reported"``: the inclusive
input, cache reads and writes, output and reasoning are the agent's own numbers. The
provider is ``xai`` (:mod:`cacheviz.providers.xai`: automatic caching, no write fee, its
rules replay the session); xAI's API being OpenAI-compatible does not make OpenAI's
caching rules apply. The models are billed at xAI's list prices (genai-prices), Grok
Build's ``grok-4.5-build`` / ``grok-4.6-build`` through the price overlay's aliases. The
turn's cost (when the agent vouches for it) is kept as the call's
``meta["reported_cost_usd"]``, and ``modelCalls`` as ``meta["grok_model_calls"]``.

A sub-agent's own session folder, when one is written, is read as a session of its own;
its parent's turns already hold its usage, so a session that a parent lists under
``subagents/<id>/`` is read without billing its turns (``meta["grok_subagent_of"]``).
A line's time is its ``_meta.agentTimestampMs`` (milliseconds), else the envelope's
``timestamp`` (seconds; milliseconds past 1e12). Thinking chunks
(``agent_thought_chunk``) are not sent back and are not rebuilt; the other kinds (plans,
permission prompts, summaries, recaps, ``response_completed``) are counted as ignored.
"""

from __future__ import annotations

import glob
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.formats._conversation import Thread
from cacheviz.formats._counts import count
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_epoch, parse_ts
from cacheviz.formats._totals import summed, vendor
from cacheviz.model import Call, Session, SessionUsage, Usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "grok"
DESCRIPTION = "Grok Build CLI sessions (~/.grok/sessions/<cwd>/<session id>/updates.jsonl)"
UPDATES = "updates.jsonl"
SUMMARY = "summary.json"
_METHODS = frozenset(
    {"session/update", "_x.ai/session/update", "x.ai/session/update", "_x.ai/session_notification"}
)
_DETECT_LINES = 4
_TICKS_PER_USD = 1e10
# the calls go to xAI's API (OpenAI-compatible, but xAI's caching rules and prices)
_API = "xai"
_EXPECTED = (
    'expected a Grok Build update {"timestamp", "method", "params": {"sessionId", '
    '"update": {"sessionUpdate", ...}}}'
)


def is_update(record: Any) -> bool:
    """Whether ``record`` is one line of a Grok Build ``updates.jsonl``."""
    if not isinstance(record, dict) or record.get("method") not in _METHODS:
        return False
    params = record.get("params")
    if not isinstance(params, dict):
        return False
    update = params.get("update")
    return isinstance(update, dict) and isinstance(update.get("sessionUpdate"), str)


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens a Grok Build session log: ACP session updates, line by line."""
    found = []
    for line in head.splitlines()[:_DETECT_LINES]:
        if not line.strip():
            continue
        try:
            found.append(json.loads(line))
        except (ValueError, RecursionError):
            break
    # as Grok Build stores them: with its own ``timestamp``, not as JSON-RPC messages on
    # the wire (``jsonrpc``), which other ACP agents' captures would be; its own
    # notifications (``_x.ai/...``) may sit between the session updates
    return any(is_update(r) for r in found) and all(_stored(r) for r in found)


def _stored(record: Any) -> bool:
    """Whether ``record`` is a notification as Grok Build stores it (its time, its method)."""
    if not isinstance(record, dict) or "timestamp" not in record or "jsonrpc" in record:
        return False
    method = record.get("method")
    return (
        isinstance(method, str)
        and method.startswith(("session/", "_x.ai/", "x.ai/"))
        and isinstance(record.get("params"), dict)
    )


def _summary(path: Path) -> dict[str, Any]:
    summary = path.parent / SUMMARY
    if not summary.is_file():  # absent, or not a regular file (a pipe would never end)
        return {}
    try:
        value = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def parent_of(path: Path) -> str | None:
    """The session that lists this one as its sub-agent (``<parent>/subagents/<id>/``)."""
    session = path.parent.name
    project = path.parent.parent
    try:
        for meta in sorted(project.glob(f"*/subagents/{glob.escape(session)}")):
            if meta.is_dir() and meta.parent.parent != path.parent:
                return meta.parent.parent.name
    except OSError:
        return None
    return None


def _when(record: dict[str, Any]) -> datetime | None:
    """A line's time: the agent's ``_meta.agentTimestampMs``, else the envelope's seconds."""
    meta = record["params"].get("_meta")
    millis = meta.get("agentTimestampMs") if isinstance(meta, dict) else None
    if isinstance(millis, (int, float)) and not isinstance(millis, bool) and millis > 0:
        found = parse_epoch(millis / 1000)
        if found is not None:
            return found
    value = record.get("timestamp")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e12:
        value = value / 1000  # milliseconds (some versions write them)
    return parse_epoch(value) or parse_ts(value, "timestamp")


def _text(update: dict[str, Any]) -> str:
    content = update.get("content")
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    if isinstance(content, str):
        return content
    return ""


def _usage(raw: dict[str, Any], where: str) -> Usage | None:
    """One ``PromptUsageModel`` as a :class:`Usage` (``None`` when it counts no token)."""
    counts = {
        key: count(raw, key, f"{where}{key}")
        for key in (
            "inputTokens",
            "cachedReadTokens",
            "cacheCreationTokens",
            "outputTokens",
            "reasoningTokens",
        )
    }
    if not any(counts.values()):
        return None
    return Usage(
        input_tokens=counts["inputTokens"],
        cache_read_tokens=counts["cachedReadTokens"],
        cache_write_tokens=counts["cacheCreationTokens"],
        output_tokens=counts["outputTokens"],
        provenance="reported",
        reasoning_tokens=counts["reasoningTokens"],
    )


class _Grok:
    def __init__(self, reader: LineReader, store: BlockStore, model: str | None) -> None:
        self.reader = reader
        self.thread = Thread(store, "main")
        self.model = model
        self.calls: list[Call] = []
        self.usages: list[SessionUsage] = []
        self.last_role: str | None = None
        self.answer_from = 0  # the index of the message the turn's last request ends before
        self.tools: dict[str, dict[str, Any]] = {}

    def _say(self, role: str, block: dict[str, Any]) -> None:
        """Add a content block, to the last message when it is the same role's."""
        messages = self.thread.messages
        if self.last_role == role and messages:
            content = messages[-1]["content"]
            if block.get("type") == "text" and content and content[-1].get("type") == "text":
                content[-1] = {"type": "text", "text": content[-1]["text"] + block["text"]}
            else:
                content.append(block)
            self.thread.touch(len(messages) - 1)
            return
        if role == "assistant":
            self.answer_from = len(messages)
        self.thread.append({"role": role, "content": [block]})
        self.last_role = role

    def add(self, lineno: int, record: Any) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}"
            raise ValueError(msg)
        if not is_update(record):
            method = record.get("method")
            if isinstance(method, str) and method and method not in _METHODS:
                self.reader.ignore(f"{method} notification")  # not a session update
                return
            msg = "not an ACP session update (no `params.update.sessionUpdate`)"
            raise ValueError(msg)
        update = record["params"]["update"]
        kind = update["sessionUpdate"]
        if kind == "user_message_chunk":
            self._say("user", {"type": "text", "text": _text(update)})
        elif kind == "agent_message_chunk":
            self._say("assistant", {"type": "text", "text": _text(update)})
        elif kind == "tool_call":
            tool_id = str(update.get("toolCallId") or f"call-{lineno}")
            raw_input = update.get("rawInput")
            block = {
                "type": "tool_use",
                "id": tool_id,
                "name": str(update.get("title") or "tool"),
                "input": raw_input if isinstance(raw_input, dict) else {},
            }
            self.tools[tool_id] = block
            self._say("assistant", block)
        elif kind == "tool_call_update":
            self._tool_result(update)
        elif kind == "turn_completed":
            self._turn(lineno, record, update)
        else:
            self.reader.ignore(f"{kind} update")

    def _tool_result(self, update: dict[str, Any]) -> None:
        status = update.get("status")
        tool_id = str(update.get("toolCallId") or "")
        if status not in ("completed", "failed") or tool_id not in self.tools:
            self.reader.ignore("tool_call_update (in progress)")
            return
        del self.tools[tool_id]
        output = update.get("rawOutput")
        if output is None:
            output = update.get("content")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": text}
        if status == "failed":
            block["is_error"] = True
        self._say("user", block)

    def _turn(self, lineno: int, record: dict[str, Any], update: dict[str, Any]) -> None:
        ts = _when(record)
        usage = update.get("usage")
        if usage is not None and not isinstance(usage, dict):
            msg = f"field `params.update.usage` is {json_type(usage)}; expected an object"
            raise ValueError(msg)
        usage = usage or {}
        rows = self._rows(usage)
        model = rows[0][0] if len(rows) == 1 else self.model or "unknown"
        meta: dict[str, Any] = {"prompt_id": update.get("prompt_id")}
        meta["stop_reason"] = update.get("stop_reason")
        calls = count(usage, "modelCalls", "usage.modelCalls")
        if calls is not None:
            meta["grok_model_calls"] = calls
        ticks = usage.get("costUsdTicks")
        trusted = not usage.get("costIsPartial") and not usage.get("usageIsIncomplete")
        if isinstance(ticks, int) and not isinstance(ticks, bool) and ticks >= 0 and trusted:
            meta["reported_cost_usd"] = ticks / _TICKS_PER_USD
        if usage.get("usageIsIncomplete"):
            meta["grok_usage_incomplete"] = True
        messages = self.thread.messages
        cut = self.answer_from if self.last_role == "assistant" else len(messages)
        full = list(messages)
        self.thread.messages = full[:cut]
        call = self.thread.call(
            model=model, provider=vendor(model, None, _API), ts=ts, usage=None, meta=meta
        )
        self.thread.messages = full
        call.line = lineno
        self.calls.append(call)
        for name, row in rows:
            self.usages.append(SessionUsage(name, vendor(name, None, _API), row, ts))
        self.last_role = None

    def _rows(self, usage: dict[str, Any]) -> list[tuple[str, Usage]]:
        """The turn's usage per model (``modelUsage``), else its totals as the session's model."""
        per_model = usage.get("modelUsage")
        rows: list[tuple[str, Usage]] = []
        if isinstance(per_model, dict) and per_model:
            for name, raw in per_model.items():
                if not isinstance(raw, dict):
                    msg = f"usage.modelUsage.{name} is {json_type(raw)}; expected an object"
                    raise ValueError(msg)
                found = _usage(raw, f"modelUsage.{name}.")
                if found is not None:
                    rows.append((str(name), found))
            return rows
        found = _usage(usage, "")
        return [(self.model or "unknown", found)] if found is not None else []


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Grok Build ``updates.jsonl``; each turn's usage is billed at the session's scope."""
    summary = _summary(path)
    model = summary.get("current_model_id")
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    state = _Grok(reader, store, model if isinstance(model, str) and model else None)
    reader.each_record(state.add, _EXPECTED)
    session = reader.session(NAME, state.calls, store)
    parent = parent_of(path)
    if parent is not None:
        for call in session.calls:
            call.meta["grok_subagent_of"] = parent
        return session  # its usage is in its parent's turns
    session.session_usage = state.usages
    session.reported_totals = summed(state.usages)
    return session
