"""Kimi CLI sessions: ``~/.kimi/sessions/<work-dir-hash>/<session>/wire.jsonl``.

Kimi CLI (MoonshotAI/kimi-cli, Python; read from its source, wire protocols 1.1 to
1.10) writes every event of a session to ``wire.jsonl``: a first line
``{"type": "metadata", "protocol_version": "1.3"}`` (absent in files older than 1.1),
then one record per line, ``{"timestamp": <Unix seconds>, "message": {"type": T,
"payload": {...}}}``. The types read:

* ``TurnBegin`` (``user_input``: text or content parts) and ``SteerInput`` (1.5): what
  the user sent;
* ``StepBegin`` (``n``): a request starts; ``ContentPart`` (``text`` or ``think``),
  ``ToolCall`` (``id``, ``function: {name, arguments}``) and ``ToolCallPart``
  (argument pieces): the answer; ``ToolResult`` (``tool_call_id``,
  ``return_value.output``): what goes back with the next request;
* ``StatusUpdate``: after the answer, ``token_usage = {input_other, output,
  input_cache_read, input_cache_creation}`` and ``message_id`` (the provider's response
  id). **One call per ``StatusUpdate`` whose ``token_usage`` is not all zero**; the
  inclusive input is ``input_other + input_cache_read + input_cache_creation``
  (``derived``), output is ``output`` (thinking included). A ``message_id`` seen before
  is one response reported twice: counted in ``Session.ignored``, not a second call.
  Other status updates (context size, plan mode, MCP status) are not calls;
* ``StepInterrupted`` and ``StepRetry`` (1.10): the step got no answer (its partial
  output is dropped, as Kimi CLI drops it from its context);
* ``SubagentEvent`` (``task_tool_call_id`` before 1.6, then ``parent_tool_call_id``,
  ``agent_id``, ``subagent_type``; ``event`` a nested ``{type, payload}``): a
  sub-agent's events, read the same way into a thread of its own (``agent_id``, else
  the tool call), whose parent is the main thread. The sub-agent's own files
  (``context_sub_N.jsonl`` before 1.6, ``subagents/<agent_id>/wire.jsonl`` after) hold the
  same events and are not read again.

The conversation is rebuilt from these events (the system prompt and tool schemas are
not in the wire log; ``context.jsonl`` beside it holds the conversation Kimi CLI
restores, not read here). A compaction (``CompactionBegin`` / ``CompactionEnd``)
replaces the context by a summary that the wire log does not hold: later requests are
rebuilt from the messages after it alone, and the compaction's own LLM call reports no
usage in the wire log (not a call here).

The model is not in the wire log. It is read from Kimi CLI's configuration beside the
sessions folder (``<share dir>/config.toml``, or ``config.json``): ``default_model``,
resolved through ``models.<name>.model``. Without one the model is ``kimi-for-coding``
(Kimi CLI's default) and ``Call.meta["model_source"]`` says it was assumed. The
configuration is read for these two keys only (it holds API keys).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_epoch
from cacheviz.model import AGENT_KEY, Call, Session, SkippedLine, Usage
from cacheviz.reported._usage import MAX_CALL_TOKENS, normalize_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "kimi-cli"
DESCRIPTION = "Kimi CLI sessions (~/.kimi/sessions/<work-dir-hash>/<session>/wire.jsonl)"
DEFAULT_MODEL = "kimi-for-coding"
PROVIDER = "moonshot"
_API = "chat.completions"  # Kimi CLI speaks OpenAI-style chat completions to Moonshot
_DETECT_LINES = 10
_USAGE_KEYS = ("input_other", "output", "input_cache_read", "input_cache_creation")
_MAX_COUNT = MAX_CALL_TOKENS - 1
_EXPECTED = 'expected a Kimi CLI wire record {"timestamp": ..., "message": {"type", "payload"}}'


def _envelope(record: Any) -> bool:
    if not isinstance(record, dict) or set(record) - {"timestamp", "message"}:
        return False
    message = record.get("message")
    return (
        isinstance(message, dict)
        and isinstance(message.get("type"), str)
        and isinstance(message.get("payload"), dict)
        and isinstance(record.get("timestamp"), (int, float))
    )


def _metadata(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and record.get("type") == "metadata"
        and isinstance(record.get("protocol_version"), str)
        and "message" not in record
    )


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens a Kimi CLI wire log (its metadata line, then wire records)."""
    records = []
    for line in head.splitlines()[:_DETECT_LINES]:
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError):
            break
    if not records:
        return False
    first, rest = records[0], records[1:]
    if _metadata(first):
        return all(_envelope(r) for r in rest[:3]) and (bool(rest) or path.name == "wire.jsonl")
    return _envelope(first)  # a log written before protocol 1.1 has no metadata line


# -- the model, from Kimi CLI's configuration ---------------------------------------


def config_model(wire: Path) -> tuple[str, str]:
    """The model of a session's calls and where it was found: ``(model, source)``.

    ``wire`` is ``<share dir>/sessions/<hash>/<session>/wire.jsonl``; the configuration is
    ``<share dir>/config.toml`` (or ``config.json``).
    """
    parents = wire.resolve().parents
    root = parents[3] if len(parents) > 3 and parents[2].name == "sessions" else None
    for name in ("config.toml", "config.json"):
        config = root / name if root is not None else None
        if config is None or not config.is_file():
            continue
        try:
            text = config.read_text(encoding="utf-8")
            data = tomllib.loads(text) if name.endswith(".toml") else json.loads(text)
        except (OSError, ValueError, RecursionError):
            continue
        model = _configured(data)
        if model is not None:
            return model, str(config)
    return DEFAULT_MODEL, "assumed: no Kimi CLI config.toml beside the sessions folder"


def _configured(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    name = data.get("default_model") or data.get("model")
    if not isinstance(name, str) or not name:
        return None
    models = data.get("models")
    entry = models.get(name) if isinstance(models, dict) else None
    model = entry.get("model") if isinstance(entry, dict) else None
    return model if isinstance(model, str) and model else name


# -- reading ---------------------------------------------------------------------------


class _CountError(ValueError):
    """A ``token_usage`` count that is not a sane token count."""


def _usage(raw: Any, where: str) -> Usage | None:
    """Kimi's ``token_usage``; ``None`` when absent or all zero (no call was answered)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        msg = f"field `{where}` is {json_type(raw)}; expected an object"
        raise ValueError(msg)
    counts: dict[str, int | None] = {}
    for key in _USAGE_KEYS:
        value = raw.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT
        ):
            msg = (
                f"field `{where}.{key}` is {json_type(value)}; expected a whole number of "
                f"tokens from 0 to {_MAX_COUNT:,}"
            )
            raise _CountError(msg)
        counts[key] = value
    if not any(counts.values()):
        return None
    shaped = {
        "input_tokens": counts["input_other"],
        "cache_read_input_tokens": counts["input_cache_read"],
        "cache_creation_input_tokens": counts["input_cache_creation"],
        "output_tokens": counts["output"],
    }
    return normalize_usage({k: v for k, v in shaped.items() if v is not None})


def _user_content(value: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if not isinstance(value, list):
        msg = f"field `{where}` is {json_type(value)}; expected text or content parts"
        raise ValueError(msg)
    return [part for part in value if isinstance(part, dict)]


@dataclass
class _Agent:
    """One agent's conversation (the main agent, or one sub-agent) as its events arrive."""

    thread: Thread
    parent: str | None = None
    answer: list[dict[str, Any]] = field(default_factory=list)  # this step's answer so far
    calls: list[dict[str, Any]] = field(default_factory=list)  # this step's tool calls
    results: list[dict[str, Any]] = field(default_factory=list)  # tool results to send back
    step_ts: datetime | None = None
    in_step: bool = False

    def send_back(self) -> None:
        """The answer so far and then the tool results join the conversation."""
        self.keep_answer()
        for result in self.results:
            self.thread.append(result)
        self.results = []

    def keep_answer(self) -> None:
        if self.answer or self.calls:
            message: dict[str, Any] = {"role": "assistant", "content": self.answer}
            if self.calls:
                message["tool_calls"] = self.calls
            self.thread.append(message)
        self.answer, self.calls = [], []

    def drop_answer(self) -> None:
        self.answer, self.calls, self.in_step = [], [], False


class _Wire:
    """The state of reading one wire log."""

    def __init__(self, reader: LineReader, store: BlockStore, model: str, source: str) -> None:
        self.reader = reader
        self.store = store
        self.model = model
        self.source = source
        self.agents: dict[str, _Agent] = {"main": _Agent(Thread(store, "main", api=_API))}
        self.calls: list[Call] = []
        self.seen: set[str] = set()
        self.version: str | None = None

    def add(self, lineno: int, record: Any) -> None:
        if _metadata(record):
            self.version = record["protocol_version"]
            self.reader.ignore("metadata line")
            return
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}"
            raise ValueError(msg)
        message = record.get("message")
        if not isinstance(message, dict):
            msg = f"field `message` is {json_type(message)}"
            raise ValueError(msg)
        self.event(lineno, "main", message, parse_epoch(record.get("timestamp")), "message")

    def agent(self, key: str) -> _Agent:
        found = self.agents.get(key)
        if found is None:
            found = self.agents[key] = _Agent(Thread(self.store, key, api=_API), "main")
        return found

    def event(self, lineno: int, key: str, message: dict[str, Any], ts: Any, where: str) -> None:
        kind, payload = message.get("type"), message.get("payload")
        if not isinstance(kind, str):
            msg = f"field `{where}.type` is {json_type(kind)}; expected the event type"
            raise ValueError(msg)
        if not isinstance(payload, dict):
            msg = f"field `{where}.payload` is {json_type(payload)}; expected an object"
            raise ValueError(msg)
        agent = self.agent(key)
        where = f"{where}.payload"
        if kind in ("TurnBegin", "SteerInput"):
            agent.send_back()
            content = _user_content(payload.get("user_input"), f"{where}.user_input")
            agent.thread.append({"role": "user", "content": content})
        elif kind == "StepBegin":
            agent.send_back()
            agent.step_ts, agent.in_step = ts, True
        elif kind == "ContentPart":
            self._part(agent, payload)
        elif kind == "ToolCall":
            function = payload.get("function")
            body = function if isinstance(function, dict) else {}
            agent.calls.append(
                {
                    "id": str(payload.get("id")),
                    "type": "function",
                    "function": {
                        "name": str(body.get("name")),
                        "arguments": str(body.get("arguments") or ""),
                    },
                }
            )
        elif kind == "ToolCallPart":
            piece = payload.get("arguments_part")
            if agent.calls and isinstance(piece, str):
                agent.calls[-1]["function"]["arguments"] += piece
        elif kind == "ToolResult":
            agent.results.append(_tool_result(payload))
        elif kind == "StatusUpdate":
            self._status(lineno, key, agent, payload, ts, where)
        elif kind in ("StepInterrupted", "StepRetry"):
            if agent.in_step:
                self.reader.ignore(f"{kind} (the step got no answer; not a call)")
            agent.drop_answer()
        elif kind == "CompactionEnd":
            agent.send_back()
            agent.thread.replace([])  # the summary that replaced the context is not logged
            self.reader.ignore("compaction (its summary and usage are not in the wire log)")
        elif kind == "SubagentEvent":
            inner = payload.get("event")
            if not isinstance(inner, dict):
                msg = f"field `{where}.event` is {json_type(inner)}; expected a wire message"
                raise ValueError(msg)
            sub = (
                payload.get("agent_id")
                or payload.get("parent_tool_call_id")
                or payload.get("task_tool_call_id")
            )
            sub_key = f"{AGENT_KEY}{sub}" if isinstance(sub, str) and sub else AGENT_KEY
            self.event(lineno, sub_key, inner, ts, f"{where}.event")
        else:
            self.reader.ignore(f"{kind} event")

    def _part(self, agent: _Agent, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if kind == "text" and isinstance(payload.get("text"), str):
            if agent.answer and agent.answer[-1].get("type") == "text":
                agent.answer[-1]["text"] += payload["text"]  # streamed pieces of one part
            else:
                agent.answer.append({"type": "text", "text": payload["text"]})
        elif kind == "think" and isinstance(payload.get("think"), str):
            if agent.answer and agent.answer[-1].get("type") == "think":
                agent.answer[-1]["think"] += payload["think"]
            else:
                agent.answer.append({"type": "think", "think": payload["think"]})
        elif isinstance(kind, str):
            agent.answer.append(dict(payload))

    def _status(
        self, lineno: int, key: str, agent: _Agent, payload: dict[str, Any], ts: Any, where: str
    ) -> None:
        try:
            usage = _usage(payload.get("token_usage"), f"{where}.token_usage")
        except _CountError as exc:
            if self.reader.errors != "skip":
                raise
            # the call keeps its place, its usage null (as for every reader: docs/formats.md)
            self.reader.usage_nulled.append(SkippedLine(lineno, str(exc)))
            usage = None
        else:
            if usage is None:
                self.reader.ignore("status update without token usage")
                return
        message_id = payload.get("message_id")
        if isinstance(message_id, str) and message_id:
            if message_id in self.seen:
                self.reader.ignore("repeated usage report (same message_id)")
                return
            self.seen.add(message_id)
        meta: dict[str, Any] = {"model_source": self.source}
        if isinstance(message_id, str):
            meta["message_id"] = message_id
        if self.version is not None:
            meta["wire_protocol"] = self.version
        call = agent.thread.call(
            model=self.model,
            provider=PROVIDER,
            ts=agent.step_ts or ts,
            usage=usage,
            meta=meta,
        )
        call.line = lineno
        call.parent_hint = agent.parent
        if agent.step_ts is not None and ts is not None and ts >= agent.step_ts:
            # written when the step ends: sub-agents' steps overlap, so a call that began
            # earlier can be written later (in flight meanwhile, not a clock out of step)
            self.reader.in_flight[id(call)] = (ts - agent.step_ts).total_seconds()
        self.calls.append(call)
        agent.keep_answer()
        agent.in_step = False
        agent.step_ts = None


def _tool_result(payload: dict[str, Any]) -> dict[str, Any]:
    returned = payload.get("return_value")
    output = returned.get("output") if isinstance(returned, dict) else returned
    return {
        "role": "tool",
        "tool_call_id": str(payload.get("tool_call_id")),
        "content": output if isinstance(output, (str, list)) else json.dumps(output),
    }


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Kimi CLI ``wire.jsonl``: one call per step with reported token usage."""
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    model, source = config_model(path)
    state = _Wire(reader, store, model, source)
    reader.each_record(state.add, _EXPECTED)
    return reader.session(NAME, state.calls, store)
