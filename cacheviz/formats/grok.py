"""Grok Build CLI sessions (``~/.grok/sessions/<url-encoded cwd>/<session id>/updates.jsonl``).

xAI's Grok Build CLI (``grok``; read from its source as published in the
``SurmountSystems/grok-oss`` mirror: ``crates/codegen/xai-grok-shell/src/extensions/
notification.rs``, ``PromptUsage`` / ``PromptUsageModel`` / ``SessionUpdate``, and
``xai-grok-pager-pty-harness/src/leader.rs`` for the file's envelope; and from ccusage's
Grok adapter, ``ccusage/ccusage`` ``rust/crates/ccusage/src/adapter/grok/``) keeps a
folder per session holding ``updates.jsonl`` (read here), ``summary.json`` (``info.cwd``,
``current_model_id``), ``chat_history.jsonl``, ``events.jsonl``, ``signals.json`` and,
in later versions, ``usage.jsonl`` (read: one row per model call, below).

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

``updates.jsonl`` never says what one model call used, only what a turn's ``modelCalls``
calls used together. Grok Build does know each call's usage, and since August 2026
(grok-oss ``5712733e``, 2026-08-18; not in ``b189869b``/``b53f141a``/``c368b4d7``, July)
writes it to a second file, ``usage.jsonl`` beside ``updates.jsonl``
(``crates/codegen/xai-grok-shell/src/session/usage_log.rs``, ``UsageRecord`` schema 1,
appended by ``record_response_token_usage`` in ``session/acp_session_impl/sampler_turn.rs``
after each model response): per call ``prompt_id`` (the turn's), ``model_id``,
``input_tokens`` (the *full* prompt, cache reads and writes inside), ``cached_tokens``
(cache reads), ``output_tokens`` (``reasoning_tokens`` a part of it), ``total_tokens``,
``cost_usd_ticks`` (absent when unreported; ``cost_missing``), ``incomplete`` (the
provider sent no usage: counts absent), ``api_duration_ms``, an RFC 3339 ``timestamp``
(when the answer ended), ``turn_type`` / ``agent_kind`` (``main``, or a sub-agent's in
the sub-agent's own folder). Cache writes are not in it. The same call's usage goes into
the turn's ledger (``xai-chat-state/src/usage.rs``, ``UsageTotals::from_call``: same
``TokenUsage``), so a turn's rows add up to its ``turn_completed`` usage unless the turn
also holds sub-agents' calls (folded in by ``record_subagent``, not in the parent's rows).
The ``response_completed`` update (``notification.rs``, ``ResponseUsage``: uncached
``input_tokens``, ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
``output_tokens``, ``reasoning_tokens``) carries one call's usage too, but is sent through
``send_buffered_xai_update`` to the live client only (``emit_buffered`` forwards xAI
updates to the gateway and never to ``updates.jsonl``: ``session/acp_session_impl/
updates.rs``, ``5712733e`` through the ``um-3`` branch's ``07fcb36a``); and the
``_meta.totalTokens`` of the ACP updates is the context's size (the last call's
``total_tokens`` plus an estimate of what was added since), not usage: neither is read.

So, when ``usage.jsonl`` is there and **every** turn's rows add up to its usage (per
model: ``inputTokens``, ``cachedReadTokens``, ``outputTokens``, ``reasoningTokens``) and
match its answers one to one (an answer: the assistant's text and tool calls between two
user or tool-result messages), each answer is **one call** with its row's usage
(``provenance="reported"``: the inclusive input is the agent's; cache writes 0 when the
turn wrote none, else not reported), asked with the conversation before it, at its row's
time, its row's cost as ``meta["reported_cost_usd"]``; nothing is billed at the session's
scope. One turn that does not add up (a sub-agent's calls, a row ``incomplete``, a row
missing) gives one warning naming it, and the session is read as without ``usage.jsonl``
(a session is billed per call or per turn: the session's scope holds all of its bill).
Without ``usage.jsonl`` (Grok Build before August 2026) each turn is **one call** (its
last request, rebuilt from the messages so far; the system prompt and tools are not
logged) with usage **not reported**, and the turn's usage is billed at the **session's
scope** (:class:`~cacheviz.model.SessionUsage`, one per turn and model, at the turn's
time), ``provenance="reported"``: the inclusive input, cache reads and writes, output and
reasoning are the agent's own numbers. The provider is ``xai`` (:mod:`cacheviz.providers.xai`:
automatic caching, no write fee, its rules replay the session); xAI's API being
OpenAI-compatible does not make OpenAI's caching rules apply. The models are billed at
xAI's list prices (genai-prices), Grok Build's ``grok-4.5-build`` / ``grok-4.6-build``
through the price overlay's aliases. The turn's cost (when the agent vouches for it) is
kept as the call's ``meta["reported_cost_usd"]``, and ``modelCalls`` as
``meta["grok_model_calls"]``.

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
import warnings
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.errors import CacheVizWarning
from cacheviz.formats._conversation import Thread
from cacheviz.formats._counts import count
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_epoch, parse_ts
from cacheviz.formats._totals import summed, vendor
from cacheviz.model import Call, Session, SessionUsage, Usage
from cacheviz.reported._usage import check_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "grok"
DESCRIPTION = "Grok Build CLI sessions (~/.grok/sessions/<cwd>/<session id>/updates.jsonl)"
UPDATES = "updates.jsonl"
SUMMARY = "summary.json"
CALLS = "usage.jsonl"  # one row per model call (Grok Build from August 2026)
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


@dataclass
class _Row:
    """One model call's row of ``usage.jsonl``; ``usage`` is ``None`` when it is unusable."""

    line: int
    model: str | None
    usage: Usage | None
    ts: datetime | None
    cost_usd: float | None
    duration_ms: int | None


def _row(line: int, raw: dict[str, Any]) -> _Row:
    """A ``usage.jsonl`` row; a count the row lacks, or a bad one, leaves its usage unusable."""
    model = raw.get("model_id")
    try:
        ts = parse_ts(raw.get("timestamp"), "timestamp")
    except ValueError:
        ts = None
    usage = None
    if not raw.get("incomplete"):
        try:
            found = check_usage(
                Usage(
                    input_tokens=count(raw, "input_tokens", "input_tokens"),
                    cache_read_tokens=count(raw, "cached_tokens", "cached_tokens"),
                    output_tokens=count(raw, "output_tokens", "output_tokens"),
                    provenance="reported",
                    reasoning_tokens=count(raw, "reasoning_tokens", "reasoning_tokens"),
                ),
                prefix=f"{CALLS}:{line}: ",
            )
        except ValueError:
            found = None
        whole = found is not None and None not in (
            found.input_tokens,
            found.cache_read_tokens,
            found.output_tokens,
        )
        usage = found if whole else None
    ticks = raw.get("cost_usd_ticks")
    trusted = not raw.get("cost_missing") and not raw.get("incomplete")
    cost = None
    if isinstance(ticks, int) and not isinstance(ticks, bool) and ticks > 0 and trusted:
        cost = ticks / _TICKS_PER_USD
    millis = raw.get("api_duration_ms")
    duration = millis if isinstance(millis, int) and not isinstance(millis, bool) else None
    name = model if isinstance(model, str) and model else None
    return _Row(line, name, usage, ts, cost, duration)


def _calls_log(path: Path) -> dict[str, list[_Row]]:
    """The model calls of ``usage.jsonl`` next to ``path``, by ``prompt_id`` (in file order).

    A line that is not a JSON object with a ``prompt_id`` is left out: the turn it was
    part of then does not add up, and keeps its own total.
    """
    log = path.parent / CALLS
    if not log.is_file():
        return {}
    try:
        data = log.read_bytes()
    except OSError:
        return {}
    found: dict[str, list[_Row]] = {}
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(raw, dict) and isinstance(raw.get("prompt_id"), str):
            found.setdefault(raw["prompt_id"], []).append(_row(lineno, raw))
    return found


def _sums(usages: list[Usage]) -> tuple[int, int, int, int]:
    return (
        sum(u.input_tokens or 0 for u in usages),
        sum(u.cache_read_tokens or 0 for u in usages),
        sum(u.output_tokens or 0 for u in usages),
        sum(u.reasoning_tokens or 0 for u in usages),
    )


_SUMMED = ("inputTokens", "cachedReadTokens", "outputTokens", "reasoningTokens")


def _mismatch(rows: list[_Row], usage: dict[str, Any], model: str) -> str | None:
    """Why a turn's calls do not add up to its ``usage`` (``None`` when they do)."""
    missing = [r.line for r in rows if r.usage is None]
    if missing:
        return f"usage.jsonl line {missing[0]} has no complete usage"
    per_model = usage.get("modelUsage")
    if not isinstance(per_model, dict) or not per_model:
        per_model = {model: usage}
    by_model: dict[str, list[Usage]] = {}
    for r in rows:
        name = r.model or model
        if name not in per_model:
            return f"usage.jsonl line {r.line}: model {name!r} is not in the turn's modelUsage"
        by_model.setdefault(name, []).append(r.usage)  # type: ignore[arg-type]
    for name, raw in per_model.items():
        if not isinstance(raw, dict):
            return f"modelUsage.{name} is {json_type(raw)}"
        want = tuple(count(raw, key, f"modelUsage.{name}.{key}") or 0 for key in _SUMMED)
        got = _sums(by_model.get(name, []))
        if got != want:
            diff = ", ".join(
                f"{key} {g} vs {w}" for key, g, w in zip(_SUMMED, got, want, strict=True) if g != w
            )
            return f"{name}: calls sum {diff} (turn)"
    return None


class _Grok:
    def __init__(
        self,
        reader: LineReader,
        store: BlockStore,
        model: str | None,
        calls_log: dict[str, list[_Row]],
    ) -> None:
        self.reader = reader
        self.thread = Thread(store, "main")
        self.model = model
        self.calls: list[Call] = []
        self.usages: list[SessionUsage] = []
        self.last_role: str | None = None
        self.answer_from = 0  # the index of the message the turn's last request ends before
        self.tools: dict[str, dict[str, Any]] = {}
        self.calls_log = calls_log  # usage.jsonl's model calls, by prompt
        self.lineno = 0
        # the turn's answers so far: the message each starts at, and its first line
        self.answers: list[tuple[int, int]] = []
        self.unreconciled: list[str] = []  # turns whose logged calls do not add up

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
            self.answers.append((len(messages), self.lineno))
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
        self.lineno = lineno
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
        answers, self.answers = self.answers, []
        logged = self.calls_log.get(str(update.get("prompt_id")))
        if logged and rows and self._per_call(lineno, logged, answers, usage, model, meta):
            self.last_role = None
            return
        messages = self.thread.messages
        cut = self.answer_from if self.last_role == "assistant" else len(messages)
        self._call(cut, lineno, model, ts, None, meta)
        for name, row in rows:
            self.usages.append(SessionUsage(name, vendor(name, None, _API), row, ts))
        self.last_role = None

    def _call(
        self,
        cut: int,
        lineno: int,
        model: str,
        ts: datetime | None,
        usage: Usage | None,
        meta: dict[str, Any],
    ) -> None:
        """One call: the request of the messages before ``cut``."""
        full = self.thread.messages
        self.thread.messages = full[:cut]
        call = self.thread.call(
            model=model, provider=vendor(model, None, _API), ts=ts, usage=usage, meta=meta
        )
        self.thread.messages = full
        call.line = lineno
        self.calls.append(call)

    def _per_call(
        self,
        lineno: int,
        logged: list[_Row],
        answers: list[tuple[int, int]],
        usage: dict[str, Any],
        model: str,
        meta: dict[str, Any],
    ) -> bool:
        """Each of the turn's model calls a call with its usage, when they add up to the turn.

        ``False`` (the reason noted for the warning) when they do not: the turn is then
        one call billed at the session's scope, as when no call is logged.
        """
        where = f"line {lineno} (prompt {meta['prompt_id']})"
        if len(logged) != len(answers):
            self.unreconciled.append(
                f"{where}: {len(logged)} model call(s) in usage.jsonl, "
                f"{len(answers)} answer(s) in the conversation"
            )
            return False
        reason = _mismatch(logged, usage, model)
        if reason is not None:
            self.unreconciled.append(f"{where}: {reason}")
            return False
        # cache writes are not in usage.jsonl; none in the turn means none in any call
        writes = 0 if not count(usage, "cacheCreationTokens", "usage.cacheCreationTokens") else None
        for k, (row, (cut, first)) in enumerate(zip(logged, answers, strict=True)):
            last = k == len(logged) - 1
            call_meta: dict[str, Any] = {"prompt_id": meta["prompt_id"]}
            call_meta["grok_usage_line"] = row.line
            if last:
                call_meta["stop_reason"] = meta.get("stop_reason")
            if row.cost_usd is not None:
                call_meta["reported_cost_usd"] = row.cost_usd
            if row.duration_ms is not None:
                call_meta["grok_api_duration_ms"] = row.duration_ms
            assert row.usage is not None  # _mismatch checked
            found = replace(row.usage, cache_write_tokens=writes)
            self._call(cut, first, row.model or model, row.ts, found, call_meta)
        return True

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


def _read(
    path: Path, errors: str, summary: dict[str, Any], calls_log: dict[str, list[_Row]]
) -> _Grok:
    model = summary.get("current_model_id")
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    store = BlockStore()
    state = _Grok(reader, store, model if isinstance(model, str) and model else None, calls_log)
    reader.each_record(state.add, _EXPECTED)
    return state


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Grok Build ``updates.jsonl``, billed per call from ``usage.jsonl`` or per turn."""
    summary = _summary(path)
    parent = parent_of(path)
    # a sub-agent's calls are in its parent's turns: not billed again, per call either
    calls_log = _calls_log(path) if parent is None else {}
    state = _read(path, errors, summary, calls_log)
    if state.unreconciled:
        # a session is billed per call or per turn, not both (the session's scope holds
        # the whole bill): one turn that does not add up bills every turn as a whole
        warnings.warn(
            f"{path}: {len(state.unreconciled)} turn(s) whose model calls in {CALLS} do not "
            f"add up to the turn's usage ({'; '.join(state.unreconciled[:3])}"
            f"{'; ...' if len(state.unreconciled) > 3 else ''}): the session is billed per "
            "turn, from turn_completed",
            CacheVizWarning,
            stacklevel=2,
        )
        state = _read(path, errors, summary, {})
    reader, store = state.reader, state.thread.store
    session = reader.session(NAME, state.calls, store)
    if parent is not None:
        for call in session.calls:
            call.meta["grok_subagent_of"] = parent
        return session  # its usage is in its parent's turns
    session.session_usage = state.usages
    session.reported_totals = summed(state.usages)
    return session
