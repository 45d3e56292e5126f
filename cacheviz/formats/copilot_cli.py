"""GitHub Copilot CLI sessions (``~/.copilot/session-state/<id>/events.jsonl``).

One typed event per line, ``{type, data, id, timestamp, parentId}``: ``session.start``
(``selectedModel``), ``session.model_change`` (``newModel``), ``user.message``
(``transformedContent`` is what was sent: the prompt with Copilot's datetime and
reminders), ``assistant.turn_start`` ... ``assistant.message`` (``content``,
``toolRequests``, ``outputTokens``) ... ``assistant.turn_end``, ``tool.execution_complete``
(``result.content``), ``session.compaction_complete`` (``summaryContent``,
``compactionTokensUsed``) and ``session.shutdown`` (``modelMetrics``).

Each API call is one ``assistant.message`` (a turn that ended in an error wrote none and
billed nothing); newer files name it (``apiCallId``). The older flat files write one
``assistant.message`` per part of a response (its text, then each tool request, each
followed by that tool's ``tool.execution_start``): consecutive messages are one call
until a tool result comes back (``tool.execution_complete``: the parts of a response are
written before any of its tools answer), a user message or an ``assistant.turn_start``
comes, or the ``apiCallId`` changes (a real older file: 70 messages, 50 calls).

Copilot usually logs **no per-call input or cache usage**: its usage is a session
figure, per model, in each ``session.shutdown``'s ``modelMetrics`` (a resumed session
writes one per run; they are added up; ``requests.count`` equals the calls read, on
real files). It is kept as
``Session.reported_totals`` (``inputTokens`` inclusive of ``cacheReadTokens`` and
``cacheWriteTokens``; ``reasoningTokens``, part of ``outputTokens``, as the reasoning
column) and, per model, as ``Session.session_usage``, which the costs bill
at the session's scope (the compaction calls' usage is taken as part of it, not added
on top); it is never spread over calls. A message's own ``outputTokens`` is in
``meta["output_tokens"]``. Where the log holds per-call ``assistant.usage`` events
(``model``, ``inputTokens``, ``outputTokens``, ``cacheReadTokens``, ``cacheWriteTokens``;
a repeated ``apiCallId`` counted once), each gives its usage to the oldest call still
without one, and the calls, not the session figure, are billed. The summary request of
a compaction is a call of its own (thread ``compaction``) with the usage Copilot logged
for it (``compactionTokensUsed``: ``input``, ``cachedInput``, ``output``; newer files
``inputTokens``, ``cacheReadTokens``, ``cacheWriteTokens``, ``outputTokens``), after
which the conversation restarts from the summary.

A file without ``session.shutdown`` (a session still running, or killed) and the older
flat ``session-state/<id>.jsonl`` files carry no usage at all: their calls are read with
usage null and no bill is invented. Those older files name no model in any event: the
model is Copilot's configured one (``~/.copilot/config.json``'s ``model``, read for that
key only), else ``unknown``; ``meta["model_source"]`` says which.

Requests are rebuilt (system prompt and tool schemas are not logged) as one thread of
user messages, assistant text and tool calls, and tool results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cacheviz.formats._body import provider_for
from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session, SessionUsage, Usage
from cacheviz.reported._usage import (
    MAX_CALL_TOKENS,
    MAX_SESSION_TOKENS,
    check_usage,
    normalize_usage,
)
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "copilot-cli"
DESCRIPTION = "GitHub Copilot CLI events (~/.copilot/session-state/<id>/events.jsonl)"
_DETECT_LINES = 20
_EVENT_PREFIXES = ("session.", "user.", "assistant.", "tool.", "subagent.", "hook.")
_USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
_METRIC_FIELDS = (*_USAGE_FIELDS, "reasoningTokens")


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` holds Copilot CLI events (a ``session.start`` or typed events)."""
    typed = 0
    for line in head.splitlines()[:_DETECT_LINES]:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
            return False
        kind = record.get("type")
        if kind == "session.start" and record["data"].get("producer", "copilot-agent"):
            return "sessionId" in record["data"]
        if isinstance(kind, str) and kind.startswith(_EVENT_PREFIXES) and "timestamp" in record:
            typed += 1
    return typed >= 2


def _text(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        msg = f"field `{field}` is {json_type(value)}; expected text"
        raise ValueError(msg)
    return value


def _count(value: Any, field: str, limit: int = MAX_CALL_TOKENS) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
        msg = (
            f"field `{field}` is {json_type(value)}; expected a whole number of tokens "
            f"from 0 to {limit - 1:,}"
        )
        raise ValueError(msg)
    return value


class _Events:
    """The state of reading one events file."""

    def __init__(self, reader: LineReader, store: BlockStore) -> None:
        self.reader = reader
        self.store = store
        self.thread = Thread(store, "main")
        self.model: str | None = None
        self.results: list[dict[str, Any]] = []  # tool results not yet sent back
        self.last_ts: Any = None
        self.calls: list[Call] = []
        self.metrics: dict[str, int] = {}
        self.per_model: dict[str, dict[str, int]] = {}
        self.shutdowns = 0
        self.shutdown_ts: Any = None
        self.waiting: list[Call] = []  # calls whose assistant.usage has not come yet
        self.usage_events: set[str] = set()
        self.per_call = 0  # calls given usage by an assistant.usage event
        self.event_id: str | None = None  # the `id` of the event being read
        self.fallback = ("unknown", "not logged")  # the model when no event names one
        self.seen: set[tuple[str, str]] = set()  # the events' (id, type) read so far
        self.open: Call | None = None  # the call whose response is still being written
        self.open_api_id: str | None = None
        self.answered = False  # a tool result came back since the open response's last part

    def add(self, lineno: int, record: Any) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}; expected a Copilot CLI event object"
            raise ValueError(msg)
        kind, data = record.get("type"), record.get("data")
        if not isinstance(kind, str):
            msg = f"field `type` is {json_type(kind)}; expected the event type"
            raise ValueError(msg)
        if not isinstance(data, dict):
            msg = f"field `data` is {json_type(data)}; expected an object"
            raise ValueError(msg)
        ts = parse_ts(record.get("timestamp"), "timestamp")
        event_id = record.get("id")
        self.event_id = event_id if isinstance(event_id, str) else None
        if self.event_id is not None:
            key = (self.event_id, kind)
            if key in self.seen:  # the file holds an event twice: it happened once
                self.reader.ignore("event written twice (same id)")
                return
            self.seen.add(key)
        handler = _HANDLERS.get(kind)
        if handler is None:
            self.reader.ignore(f"{kind} event")
        else:
            handler(self, lineno, data, ts)
        self.last_ts = ts or self.last_ts

    def _flush_results(self) -> None:
        if self.results:
            self.thread.append({"role": "user", "content": self.results})
            self.results = []

    def start(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        if isinstance(data.get("selectedModel"), str):
            self.model = data["selectedModel"]
        self.reader.ignore("session start or resume event")

    def model_change(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        if isinstance(data.get("newModel"), str):
            self.model = data["newModel"]
        self.reader.ignore("session.model_change event")

    def _close(self) -> None:
        self.open, self.open_api_id, self.answered = None, None, False

    def turn_start(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        self._close()
        self.reader.ignore("assistant.turn_start event")

    def _continues(self, data: dict[str, Any]) -> bool:
        """Whether this ``assistant.message`` is one more part of the open response."""
        if self.open is None:
            return False
        api_id = data.get("apiCallId")
        if isinstance(api_id, str) and api_id:
            return api_id == self.open_api_id
        if self.open_api_id is not None:
            return False
        # a response's parts are all written before any of its tools answers
        return not self.answered

    def user(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        self._close()
        self._flush_results()
        sent = data.get("transformedContent")
        text = _text(sent if sent is not None else data.get("content"), "data.content")
        self.thread.append({"role": "user", "content": [{"type": "text", "text": text}]})

    def message(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        model = data.get("model") if isinstance(data.get("model"), str) else self.model
        meta: dict[str, Any] = {}
        if not model:
            # older files (the flat session-state/<id>.jsonl) name no model: Copilot's
            # configured one, else not known (the call is kept, its usage is null anyway)
            model, meta["model_source"] = self.fallback
        output = _count(data.get("outputTokens"), "data.outputTokens")
        if self._continues(data) and self.open is not None:
            # one more part of the same response (older files): no new call
            self.thread.messages[-1]["content"].extend(self._parts(data))
            self.thread.touch(len(self.thread.messages) - 1)
            if output is not None:
                self.open.meta["output_tokens"] = self.open.meta.get("output_tokens", 0) + output
            self.reader.ignore("assistant.message part of a response already read")
            self.answered = False
            return
        self._flush_results()
        if isinstance(data.get("messageId"), str):
            meta["message_id"] = data["messageId"]
        if output is not None:
            meta["output_tokens"] = output
        call = self.thread.call(
            model=model, provider=_provider(model), ts=self.last_ts or ts, usage=None, meta=meta
        )
        call.line = lineno
        self.calls.append(call)
        self.waiting.append(call)
        api_id = data.get("apiCallId")
        self.open, self.answered = call, False
        self.open_api_id = api_id if isinstance(api_id, str) and api_id else None
        self.thread.append({"role": "assistant", "content": self._parts(data)})

    def _parts(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The message's text and tool requests as content blocks."""
        content: list[dict[str, Any]] = []
        text = _text(data.get("content"), "data.content")
        if text:
            content.append({"type": "text", "text": text})
        requests = data.get("toolRequests") or []
        if not isinstance(requests, list):
            msg = f"field `data.toolRequests` is {json_type(requests)}; expected a list"
            raise ValueError(msg)
        for i, request in enumerate(requests):
            if not isinstance(request, dict):
                msg = f"field `data.toolRequests[{i}]` is {json_type(request)}; expected an object"
                raise ValueError(msg)
            content.append(
                {
                    "type": "tool_use",
                    "id": str(request.get("toolCallId")),
                    "name": str(request.get("name")),
                    "input": request.get("arguments") or {},
                }
            )
        return content

    def tool_done(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        self.answered = True
        result = data.get("result")
        output = result.get("content") if isinstance(result, dict) else result
        self.results.append(
            {
                "type": "tool_result",
                "tool_use_id": str(data.get("toolCallId")),
                "content": output if isinstance(output, str) else json.dumps(output),
            }
        )

    def usage(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        """``assistant.usage``: one API call's usage, after its ``assistant.message``."""
        event = data.get("apiCallId") or self.event_id
        key = event if isinstance(event, str) and event else None
        if key is not None and key in self.usage_events:
            self.reader.ignore("assistant.usage event repeated")
            return
        usage = _usage_of(data, "data")
        if usage is None:
            self.reader.ignore("assistant.usage event without token counts")
            return
        if not self.waiting:
            self.reader.ignore("assistant.usage event without its assistant.message")
            return
        if key is not None:
            self.usage_events.add(key)
        call = self.waiting.pop(0)
        call.usage = usage
        self.per_call += 1

    def compaction(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        self._close()
        used = data.get("compactionTokensUsed")
        if isinstance(used, dict) and self.model:
            usage = _usage_of(used, "data.compactionTokensUsed")
            self._flush_results()
            side = Thread(self.store, "compaction")
            side.messages = list(self.thread.messages)
            meta = (
                {"request_id": data["requestId"]} if isinstance(data.get("requestId"), str) else {}
            )
            call = side.call(
                model=self.model,
                provider=_provider(self.model),
                ts=self.last_ts or ts,
                usage=usage,
                meta=meta,
            )
            call.line = lineno
            call.parent_hint = "main"
            self.calls.append(call)
        summary = _text(data.get("summaryContent"), "data.summaryContent")
        if summary:
            self.results = []
            self.thread.replace([{"role": "user", "content": [{"type": "text", "text": summary}]}])
        self.reader.ignore("session.compaction_complete event")

    def shutdown(self, lineno: int, data: dict[str, Any], ts: Any) -> None:
        metrics = data.get("modelMetrics")
        if not isinstance(metrics, dict):
            msg = f"field `data.modelMetrics` is {json_type(metrics)}; expected an object"
            raise ValueError(msg)
        for model, entry in metrics.items():
            usage = entry.get("usage") if isinstance(entry, dict) else None
            if not isinstance(usage, dict):
                continue
            mine = self.per_model.setdefault(str(model), {})
            for key in _METRIC_FIELDS:
                value = _count(
                    usage.get(key), f"data.modelMetrics.{model}.usage.{key}", MAX_SESSION_TOKENS
                )
                if value is not None:
                    self.metrics[key] = self.metrics.get(key, 0) + value
                    mine[key] = mine.get(key, 0) + value
            where = f"data.modelMetrics.{model}.usage"
            check_usage(_metric_usage(mine), _names(where), limit=MAX_SESSION_TOKENS, prefix="")
        self.shutdowns += 1
        self.shutdown_ts = ts or self.last_ts
        self.reader.ignore("session.shutdown event")

    def totals(self) -> Usage | None:
        if not self.metrics or self.per_call:
            return None  # with per-call usage the calls are billed, not the session
        return _metric_usage(self.metrics)

    def session_usage(self) -> list[SessionUsage]:
        """The session's usage per model, billed at its scope (no call reports its own)."""
        if self.per_call:
            return []
        return [
            SessionUsage(model, _provider(model), _metric_usage(counts), self.shutdown_ts)
            for model, counts in self.per_model.items()
            if counts
        ]


def _names(where: str) -> dict[str, str]:
    """Each checked ``Usage`` field's name in an events file under ``where``."""
    return {
        "input_tokens": f"{where}.inputTokens",
        "cache_read_tokens": f"{where}.cacheReadTokens",
        "cache_write_tokens": f"{where}.cacheWriteTokens",
        "output_tokens": f"{where}.outputTokens",
    }


def _metric_usage(counts: dict[str, int]) -> Usage:
    """A ``modelMetrics`` usage: ``inputTokens`` includes the cache reads and writes."""
    return Usage(
        input_tokens=counts.get("inputTokens"),
        cache_read_tokens=counts.get("cacheReadTokens"),
        cache_write_tokens=counts.get("cacheWriteTokens"),
        output_tokens=counts.get("outputTokens"),
        reasoning_tokens=counts.get("reasoningTokens"),
    )


def _usage_of(used: dict[str, Any], where: str) -> Usage | None:
    """One call's usage, under either set of names.

    ``assistant.usage`` and newer compactions: ``inputTokens`` (inclusive),
    ``cacheReadTokens``, ``cacheWriteTokens``, ``outputTokens``; older compactions:
    ``input``, ``cachedInput``, ``output``.
    """
    if any(key in used for key in _USAGE_FIELDS):
        counts = {key: _count(used.get(key), f"{where}.{key}") for key in _USAGE_FIELDS}
        if counts["inputTokens"] is None and counts["outputTokens"] is None:
            return None
        return check_usage(
            Usage(
                input_tokens=counts["inputTokens"],
                cache_read_tokens=counts["cacheReadTokens"],
                cache_write_tokens=counts["cacheWriteTokens"],
                output_tokens=counts["outputTokens"],
            ),
            _names(where),
            prefix="",
        )
    return normalize_usage(
        {
            k: v
            for k, v in {
                "prompt_tokens": used.get("input"),
                "completion_tokens": used.get("output"),
                "prompt_tokens_details": {"cached_tokens": used.get("cachedInput")},
            }.items()
            if v is not None
        }
    )


_HANDLERS = {
    "session.start": _Events.start,
    "session.resume": _Events.start,
    "session.model_change": _Events.model_change,
    "user.message": _Events.user,
    "assistant.turn_start": _Events.turn_start,
    "assistant.message": _Events.message,
    "tool.execution_complete": _Events.tool_done,
    "assistant.usage": _Events.usage,
    "session.compaction_complete": _Events.compaction,
    "session.shutdown": _Events.shutdown,
}


def _provider(model: str) -> str:
    """The vendor whose cache rules apply (:func:`provider_for`), else ``github-copilot``."""
    guessed = provider_for(model)
    return "github-copilot" if guessed == "unknown" else guessed


def configured_model(path: Path) -> tuple[str, str]:
    """The model Copilot CLI is configured with, for files whose events name none.

    ``~/.copilot/config.json``'s ``model`` (read for that key only), found beside the
    ``session-state`` folder holding ``path`` (``session-state/<id>.jsonl`` or
    ``session-state/<id>/events.jsonl``); else ``("unknown", "not logged")``.
    """
    for folder in path.resolve().parents[:3]:
        if folder.name != "session-state":
            continue
        config = folder.parent / "config.json"
        try:
            text = config.read_text(encoding="utf-8")
            # newer Copilot writes `//` comment lines above the JSON
            lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
            data = json.loads("\n".join(lines))
        except (OSError, ValueError, RecursionError):
            break
        model = data.get("model") if isinstance(data, dict) else None
        if isinstance(model, str) and model:
            return model, f"assumed: not logged; {config}'s model"
        break
    return "unknown", "not logged: no event names the model"


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Copilot CLI events file: one call per assistant message."""
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    state = _Events(reader, store)
    state.fallback = configured_model(path)
    reader.each_record(state.add, "expected one Copilot CLI event per line")
    session = reader.session(NAME, state.calls, store)
    session.reported_totals = state.totals()
    session.session_usage = state.session_usage()
    return session
