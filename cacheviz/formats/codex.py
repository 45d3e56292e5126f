"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

One record per line: ``{"timestamp", "type", "payload"}`` with type ``session_meta``,
``response_item`` (the conversation, in the Responses API's item shape), ``event_msg``
(UI events), ``turn_context`` (the model and settings of a turn) or ``compacted``.

Each API call is reported by an ``event_msg`` of type ``token_count`` whose
``info.last_token_usage`` is that call's usage (``input_tokens`` includes
``cached_input_tokens``; ``reasoning_output_tokens`` are part of ``output_tokens``).
Codex emits each report twice (the copy repeats ``info`` exactly: it is skipped);
reports with ``info: null`` carry rate limits only and are skipped too.

Requests are rebuilt as the unlogged prefix (tool schemas, never logged) followed by
every item Codex sends again: all response items except ``ghost_snapshot`` and
``system`` messages. The response of a call is the run of model items (reasoning,
assistant messages, tool calls) logged before its ``token_count``; its request is
everything logged before the first of them. A response cut off by the user (no
``token_count`` before the next user message) is counted, not made a call. The base
instructions (``session_meta.payload.base_instructions.text``, newer Codex) are logged:
they are the first item of every request. Older Codex logs only the user instructions
(``session_meta.payload.instructions``, the AGENTS.md text), which it also sends as the
first user message: they are added only when no logged message already holds them.
A ``compacted`` record replaces the history with its ``replacement_history`` (or, when
only the summary ``message`` is logged, with that summary as one user message: an
approximation).

Times: a call's ``ts`` is the time of the last record logged before its response began,
not counting ``event_msg`` records (those are written when something comes back: rate
limits from the response headers, usage, reasoning summaries). In Codex 0.77 that is the
``turn_context`` written just before each request. The model is the latest
``turn_context`` one (``unknown`` when none was logged).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session, Usage
from cacheviz.reported._usage import normalize_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "codex"
DESCRIPTION = "Codex CLI rollout JSONL (~/.codex/sessions/**/rollout-*.jsonl)"
_RECORD_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_DETECT_LINES = 20
_OUTPUT_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "image_generation_call",
        "tool_search_call",
    }
)
_TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_UNSENT_ITEMS = frozenset({"ghost_snapshot", "other"})
_TURN_EVENTS = frozenset({"user_message", "turn_aborted"})
_USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
_MAX_TOKENS = 10_000_000  # per call; larger counts are corrupt (no context window is that big)
_UNKNOWN_MODEL = "unknown"


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` looks like a Codex CLI rollout."""
    for line in head.splitlines()[:_DETECT_LINES]:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict) and isinstance(record.get("payload"), dict):
            return record.get("type") in _RECORD_TYPES and "timestamp" in record
    return False


def _time(value: Any) -> datetime | None:
    try:
        return parse_ts(value)
    except ValueError as exc:
        raise ValueError(str(exc).replace("field `ts`", "field `timestamp`", 1)) from None


def _string(payload: dict[str, Any], key: str, where: str) -> str | None:
    value = payload.get(key)
    if value is not None and not isinstance(value, str):
        msg = f"field `{where}.{key}` is {json_type(value)}; expected a string"
        raise ValueError(msg)
    return value


def _text_of(item: dict[str, Any]) -> str:
    """The text parts of a logged message item, joined."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _usage(info: Any) -> Usage | None:
    """Check a ``token_count`` event's ``info`` and return its per-call usage."""
    if not isinstance(info, dict):
        msg = f"field `payload.info` is {json_type(info)}; expected an object or null"
        raise ValueError(msg)
    last = info.get("last_token_usage")
    if not isinstance(last, dict):
        msg = (
            f"field `payload.info.last_token_usage` is {json_type(last)}; "
            "expected the call's usage object"
        )
        raise ValueError(msg)
    for key in _USAGE_FIELDS:
        value = last.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            shown = value if isinstance(value, float) else json_type(value)
            msg = f"field `payload.info.last_token_usage.{key}` is {shown}; expected a whole number"
            raise ValueError(msg)
        if not 0 <= value <= _MAX_TOKENS:
            msg = (
                f"field `payload.info.last_token_usage.{key}` is {value}; "
                f"expected a token count from 0 to {_MAX_TOKENS:,}"
            )
            raise ValueError(msg)
    mapped: dict[str, Any] = {"input_tokens_details": {}}
    if last.get("input_tokens") is not None:
        mapped["input_tokens"] = last["input_tokens"]
    if last.get("cached_input_tokens") is not None:
        mapped["input_tokens_details"]["cached_tokens"] = last["cached_input_tokens"]
    if last.get("output_tokens") is not None:  # reasoning tokens are part of the output
        mapped["output_tokens"] = last["output_tokens"]
    if last.get("reasoning_output_tokens") is not None:  # shown apart, billed as output
        mapped["output_tokens_details"] = {"reasoning_tokens": last["reasoning_output_tokens"]}
    return normalize_usage(mapped)


def _is_output(item: dict[str, Any]) -> bool:
    kind = item["type"]
    return kind in _OUTPUT_ITEMS or (kind == "message" and item.get("role") == "assistant")


def _check_types(value: Any, where: str) -> None:
    """Every ``type`` inside an item (content parts, summaries, ...) must be a string."""
    if isinstance(value, list):
        for i, element in enumerate(value):
            _check_types(element, f"{where}[{i}]")
    elif isinstance(value, dict):
        if "type" in value and not isinstance(value["type"], str):
            msg = f"field `{where}.type` is {json_type(value['type'])}; expected a string"
            raise ValueError(msg)
        for key, element in value.items():
            if isinstance(element, (list, dict)):
                _check_types(element, f"{where}.{key}")


def _check_item(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        msg = f"field `{where}` is {json_type(item)}; expected a response item object"
        raise ValueError(msg)
    kind = item.get("type")
    if not isinstance(kind, str):
        msg = f"field `{where}.type` is {json_type(kind)}; expected the item type (message, ...)"
        raise ValueError(msg)
    if kind == "message" and not isinstance(item.get("role"), str):
        msg = f"field `{where}.role` is {json_type(item.get('role'))}; expected a string"
        raise ValueError(msg)
    calls = item.get("tool_calls")
    if calls is not None and not isinstance(calls, list):  # rendered as chat tool calls
        msg = f"field `{where}.tool_calls` is {json_type(calls)}; expected a list or null"
        raise ValueError(msg)
    _check_types(item, where)
    return item


def _is_sent(item: dict[str, Any]) -> bool:
    return item["type"] not in _UNSENT_ITEMS and not (
        item["type"] == "message" and item["role"] == "system"
    )


class _Rollout:
    """The state of reading one rollout: the conversation and the calls made so far."""

    def __init__(self, reader: LineReader, store: BlockStore) -> None:
        self.reader = reader
        self.thread = Thread(store, "main", api="responses")
        self.model: str | None = None
        self.meta_seen = False
        self.user_instructions: str | None = None  # placed at the first call if not logged
        self.instructions_at = 0  # where they go (after the base instructions)
        self.request_ts: datetime | None = None  # the last non-event record's time
        self.pending: Call | None = None  # the response being logged, usage not yet reported
        self.turn_ended = False  # a user message or abort came after the pending response
        self.last_info: Any = None
        self.calls: list[Call] = []

    def add(self, lineno: int, record: Any) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}; expected a Codex rollout record object"
            raise ValueError(msg)
        kind = record.get("type")
        if not isinstance(kind, str):
            msg = f"field `type` is {json_type(kind)}; expected one of {', '.join(_RECORD_TYPES)}"
            raise ValueError(msg)
        if kind not in _RECORD_TYPES:
            self.reader.ignore(f"{kind} record")
            return
        payload = record.get("payload")
        if not isinstance(payload, dict):
            msg = f"field `payload` is {json_type(payload)}; expected an object"
            raise ValueError(msg)
        ts = _time(record.get("timestamp"))
        if kind == "event_msg":
            self._event(lineno, payload, ts)
            return
        getattr(self, f"_{kind}")(payload, ts)
        self.request_ts = ts or self.request_ts

    def _session_meta(self, payload: dict[str, Any], ts: datetime | None) -> None:
        base = payload.get("base_instructions")
        if base is not None and not isinstance(base, dict):
            msg = f"field `payload.base_instructions` is {json_type(base)}; expected an object"
            raise ValueError(msg)
        text = _string(base, "text", "payload.base_instructions") if base else None
        instructions = _string(payload, "instructions", "payload")
        model = _string(payload, "model", "payload")
        if self.meta_seen or self.thread.messages:
            self.reader.ignore("repeated session_meta record")
            return
        self.meta_seen = True
        self.model = self.model or model
        if text:
            self.thread.append({"type": "instructions", "role": "system", "content": text})
            self.instructions_at = 1
        self.user_instructions = instructions or None

    def _turn_context(self, payload: dict[str, Any], ts: datetime | None) -> None:
        self.model = _string(payload, "model", "payload") or self.model

    def _compacted(self, payload: dict[str, Any], ts: datetime | None) -> None:
        history = payload.get("replacement_history")
        message = _string(payload, "message", "payload")
        if history is not None and not isinstance(history, list):
            msg = (
                f"field `payload.replacement_history` is {json_type(history)}; "
                "expected a list of response items"
            )
            raise ValueError(msg)
        if history is not None:
            items = [
                _check_item(v, f"payload.replacement_history[{i}]") for i, v in enumerate(history)
            ]
            kept = [item for item in items if _is_sent(item)]
        else:
            text = [{"type": "input_text", "text": message or ""}]
            kept = [{"type": "message", "role": "user", "content": text}]
        head = self.thread.messages[: self.instructions_at]
        self.thread.replace(head + kept)
        self.turn_ended = True

    def _response_item(self, payload: dict[str, Any], ts: datetime | None) -> None:
        item = _check_item(payload, "payload")
        if not _is_sent(item):
            self.reader.ignore(f"{item['type']} item (not sent to the model)")
            return
        if _is_output(item):
            if self.pending is not None and self.turn_ended:
                self.reader.ignore("response without token_count (interrupted)")
                self.pending = None
            if self.pending is None:
                self.pending = self._new_call()
                self.turn_ended = False
        elif item["type"] not in _TOOL_OUTPUTS and self.pending is not None:
            self.turn_ended = True  # tool outputs may be logged while a response streams
        self.thread.append(item)

    def _event(self, lineno: int, payload: dict[str, Any], ts: datetime | None) -> None:
        kind = payload.get("type")
        if not isinstance(kind, str):
            self.reader.ignore("untyped event")
            return
        if kind != "token_count":
            if kind in _TURN_EVENTS and self.pending is not None:
                self.turn_ended = True
            self.reader.ignore(f"{kind} event")
            return
        info = payload.get("info")
        if info is None:
            self.reader.ignore("token_count event without usage (info: null)")
            return
        usage = _usage(info)
        if info == self.last_info:
            self.reader.ignore("repeated token_count event")
            return
        self.last_info = info
        call = self.pending if self.pending is not None else self._new_call()
        call.usage = usage
        call.line = lineno
        self.calls.append(call)
        self.pending = None
        self.turn_ended = False

    def _new_call(self) -> Call:
        self._place_user_instructions()
        model = self.model or _UNKNOWN_MODEL
        return self.thread.call(model=model, provider="openai", ts=self.request_ts, usage=None)

    def _place_user_instructions(self) -> None:
        text, self.user_instructions = self.user_instructions, None
        if not text or any(text in _text_of(m) for m in self.thread.messages):
            return
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        self.thread.messages.insert(self.instructions_at, item)
        self.thread.touch(self.instructions_at)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Codex CLI rollout: one call per reported ``token_count``."""
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True  # each request is rebuilt from the lines before it
    state = _Rollout(reader, store)
    reader.each_record(state.add, "expected one Codex rollout record per line")
    return reader.session(NAME, state.calls, store)
