"""Gemini CLI session logs (``~/.gemini/tmp/<project>/chats/session-*.jsonl``).

The first line is the session header (``sessionId``, ``projectHash``, ...). Then one
record per line: messages (``{"id", "timestamp", "type", "content", ...}`` of type
``user``, ``gemini``, ``info``, ``error`` or ``warning``), ``{"$set": {...}}`` metadata
patches and ``{"$rewindTo": id}`` (the message ``id`` and everything after it are
dropped). A message is written again, whole, each time it changes (a ``gemini`` message
once with its usage, once more with its tool calls and their results): the last copy
wins. A ``$set`` of ``messages`` (Gemini CLI syncing its history after compressing or
masking it) replaces the conversation.

Each ``gemini`` message whose first copy names a ``model`` is one API call; ``tokens``
(``input`` includes ``cached``; ``thoughts`` are billed as output) is its usage, null
when never reported. ``info``/``error``/``warning`` messages are not sent to the model.

Requests are rebuilt as the unlogged prefix (system prompt and tool declarations, never
logged) followed by the conversation as Gemini CLI sends it: user turns, model turns
(text and function calls; thoughts are not sent back) and, after a model turn with tool
calls, a user turn with the function responses. Parts are written so they render as
text: ``{"type": "text"}``, ``{"type": "function_call", "name", "arguments"}`` and
``{"type": "function_call_output", "name", "output"}``.

Gemini's implicit caches are per model, and Gemini CLI switches models within a session
(its router picks Flash or Pro per turn), with a system prompt and tool set that can
differ per model: each model is its own thread (named after the model) with its own
unlogged prefix, all sharing one conversation.

Times: a ``gemini`` message is written when its response is complete, so a call's
``ts`` is the end of the message logged before it (its time, or for a model turn the
latest completion time of its tool calls).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session, Usage
from cacheviz.reported._usage import normalize_usage
from cacheviz.request._blocks import BlockStore, compact_json
from cacheviz.request._jsonspan import json_type

NAME = "gemini-cli"
DESCRIPTION = "Gemini CLI session JSONL (~/.gemini/tmp/*/chats/session-*.jsonl)"
_MESSAGE_TYPES = ("user", "gemini", "info", "error", "warning")
_TOKEN_FIELDS = ("input", "output", "cached", "thoughts", "tool", "total")
_MEDIA_KEYS = ("inlineData", "fileData")
_DETECT_LINES = 5
_MAX_TOKENS = 10_000_000  # per call; larger counts are corrupt (no context window is that big)


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` starts with a Gemini CLI session header."""
    for line in head.splitlines()[:_DETECT_LINES]:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return False
        return (
            isinstance(record, dict)
            and isinstance(record.get("sessionId"), str)
            and isinstance(record.get("projectHash"), str)
        )
    return False


def _time(value: Any, field: str) -> datetime | None:
    try:
        return parse_ts(value)
    except ValueError as exc:
        raise ValueError(str(exc).replace("field `ts`", f"field `{field}`", 1)) from None


def _fail(field: str, value: Any, expected: str) -> NoReturn:
    msg = f"field `{field}` is {json_type(value)}; expected {expected}"
    raise ValueError(msg)


def _output(response: Any) -> str:
    """A function response as the model reads it: its text when it is only text, else JSON."""
    if isinstance(response, dict) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return compact_json(response)


def _part(part: Any, field: str) -> dict[str, Any]:
    """One Gemini ``Part`` in a shape :func:`cacheviz.request._blocks.render_text` reads as text."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if not isinstance(part, dict):
        _fail(field, part, "a part object or text")
    if isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    call = part.get("functionCall")
    if isinstance(call, dict):
        return _function_call(call.get("id"), call.get("name"), call.get("args"))
    response = part.get("functionResponse")
    if isinstance(response, dict):
        return {
            "type": "function_call_output",
            "id": response.get("id"),
            "name": response.get("name"),
            "output": _output(response.get("response")),
        }
    if any(key in part for key in _MEDIA_KEYS):
        return {**part, "type": "file"}  # rendered as a placeholder
    return {**part, "type": next(iter(part), "part")}  # executableCode, ...: rendered as JSON


def _function_call(call_id: Any, name: Any, args: Any) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": call_id,
        "name": name,
        "arguments": compact_json(args if args is not None else {}),
    }


def _parts(value: Any, field: str) -> list[dict[str, Any]]:
    """Gemini's ``PartListUnion`` (text, one part or a list of them) as a list of parts."""
    if value is None or value == "":
        return []
    if isinstance(value, (str, dict)):
        value = [value]
    elif not isinstance(value, list):
        _fail(field, value, "text, a part or a list of parts")
    return [
        _part(p, f"{field}[{i}]")
        for i, p in enumerate(value)
        if not (isinstance(p, dict) and p.get("thought") is True)  # thoughts are not sent back
    ]


def _tool_calls(record: dict[str, Any]) -> list[dict[str, Any]]:
    calls = record.get("toolCalls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        _fail("toolCalls", calls, "a list of tool call objects")
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            _fail(f"toolCalls[{i}]", call, "a tool call object")
        if not isinstance(call.get("name"), str):
            _fail(f"toolCalls[{i}].name", call.get("name"), "the tool name")
    return calls


def _turns(
    record: dict[str, Any], *, with_tools: bool = True, where: str = ""
) -> list[dict[str, Any]]:
    """The conversation turns one message record stands for (none for UI messages).

    ``where`` prefixes the field names in error messages (the record's own path).
    """
    kind = record["type"]
    if kind not in ("user", "gemini"):
        return []
    content = _parts(record.get("content"), f"{where}content")
    if kind == "user":
        return [{"role": "user", "content": content}]
    calls = _tool_calls(record) if with_tools else []
    model = {
        "role": "model",
        "content": content + [_function_call(c.get("id"), c["name"], c.get("args")) for c in calls],
    }
    results = [
        part
        for i, c in enumerate(calls)
        for part in _parts(c.get("result"), f"toolCalls[{i}].result")
    ]
    return [model, {"role": "user", "content": results}] if results else [model]


def _end_time(record: dict[str, Any], ts: datetime | None) -> datetime | None:
    """When a message was complete: its time, or the last of its tool calls' times."""
    latest = ts
    for i, call in enumerate(_tool_calls(record) if record["type"] == "gemini" else []):
        done = _time(call.get("timestamp"), f"toolCalls[{i}].timestamp")
        if done is not None and (latest is None or done > latest):
            latest = done
    return latest


def _usage(tokens: Any) -> Usage | None:
    """Check a message's ``tokens`` and map them to Gemini's ``usageMetadata`` names."""
    if tokens is None:
        return None
    if not isinstance(tokens, dict):
        _fail("tokens", tokens, "an object or null")
    for key in _TOKEN_FIELDS:
        value = tokens.get(key)
        if value is None:
            continue
        if isinstance(value, float):
            msg = f"field `tokens.{key}` is {value}; expected a whole number"
            raise ValueError(msg)
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(f"tokens.{key}", value, "a whole number")
        if not 0 <= value <= _MAX_TOKENS:
            msg = (
                f"field `tokens.{key}` is {value}; expected a token count from 0 to {_MAX_TOKENS:,}"
            )
            raise ValueError(msg)
    names = {
        "promptTokenCount": "input",
        "cachedContentTokenCount": "cached",
        "candidatesTokenCount": "output",
        "thoughtsTokenCount": "thoughts",
    }
    return normalize_usage({k: tokens[v] for k, v in names.items() if tokens.get(v) is not None})


def _check_message(record: dict[str, Any], field: str = "") -> dict[str, Any]:
    for key in ("id", "type"):
        if not isinstance(record.get(key), str):
            _fail(f"{field}{key}", record.get(key), "a string")
    return record


class ChatReader:
    """The state of reading one session: the conversation, its spans and the calls.

    Also :mod:`cacheviz.formats.gemini_json`'s, for each chat of an export.

    Parameters
    ----------
    reader
        The file's reader (error policy, counts).
    store
        The blocks read so far.
    """

    def __init__(self, reader: LineReader, store: BlockStore) -> None:
        self.reader = reader
        self.store = store
        self.messages: list[dict[str, Any]] = []  # shared by every model's thread
        self.threads: dict[str, Thread] = {}
        self.spans: dict[str, tuple[int, int]] = {}  # message id -> (start, count) of its turns
        self.calls_by_id: dict[str, Call] = {}
        self.last_end: datetime | None = None  # when the last message was complete
        self.calls: list[Call] = []

    def add(self, lineno: int, record: Any) -> None:
        """Read record ``record`` of line ``lineno`` (a message, a patch or metadata).

        Raises
        ------
        ValueError
            The record is none of these (the reader's error policy handles it).
        """
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}; expected a Gemini CLI record object"
            raise ValueError(msg)
        if "$rewindTo" in record:
            self._rewind(record["$rewindTo"])
        elif "$set" in record:
            self._set(record["$set"])
        elif "id" in record or "type" in record:
            self._message(lineno, _check_message(record))
        elif "sessionId" in record:
            self.reader.ignore("session header")
        elif any(key.startswith("$") for key in record):
            self.reader.ignore("metadata record")
        else:
            msg = "no `id`, `$set` or `$rewindTo`; expected a Gemini CLI message or patch"
            raise ValueError(msg)

    def _thread(self, model: str) -> Thread:
        thread = self.threads.get(model)
        if thread is None:
            thread = self.threads[model] = Thread(self.store, model)
            thread.messages = self.messages  # one conversation, one prefix per model
        return thread

    def _changed(self, index: int) -> None:
        for thread in self.threads.values():
            thread.touch(index)

    def _put(self, record_id: str, turns: list[dict[str, Any]]) -> None:
        """Place a message's turns: at the end, or over its earlier copy."""
        span = self.spans.get(record_id)
        if span is None:
            self.spans[record_id] = (len(self.messages), len(turns))
            self.messages.extend(turns)
            return
        start, count = span
        if self.messages[start : start + count] == turns:
            return
        self.messages[start : start + count] = turns
        self._changed(start)
        self.spans[record_id] = (start, len(turns))
        if len(turns) != count:  # the messages after it move (spans are in log order)
            later = False
            for other, (at, n) in self.spans.items():
                if later:
                    self.spans[other] = (at + len(turns) - count, n)
                later = later or other == record_id

    def _rewind(self, target: Any) -> None:
        if not isinstance(target, str):
            _fail("$rewindTo", target, "a message id")
        start = 0  # an unknown id clears everything, as Gemini CLI does
        kept: dict[str, tuple[int, int]] = {}
        if target in self.spans:
            start = self.spans[target][0]
            for record_id, span in self.spans.items():
                if record_id == target:
                    break
                kept[record_id] = span
        self.spans = kept
        del self.messages[start:]
        self._changed(start)
        self.reader.ignore("rewind record")

    def _set(self, updates: Any) -> None:
        if not isinstance(updates, dict):
            _fail("$set", updates, "an object")
        history = updates.get("messages")
        if history is None:
            self.reader.ignore("metadata update")
            return
        if not isinstance(history, list):
            _fail("$set.messages", history, "a list of message records")
        spans: dict[str, tuple[int, int]] = {}
        turns: list[dict[str, Any]] = []
        for i, record in enumerate(history):
            if not isinstance(record, dict):
                _fail(f"$set.messages[{i}]", record, "a message record object")
            where = f"$set.messages[{i}]."
            _check_message(record, where)
            # a synced message's content is the turn as sent (function parts included)
            new = _turns(record, with_tools=False, where=where)
            spans[record["id"]] = (len(turns), len(new))
            turns += new
        same = 0
        while same < min(len(turns), len(self.messages)) and turns[same] == self.messages[same]:
            same += 1
        self.messages[:] = turns
        self.spans = spans
        self._changed(same)
        self.reader.ignore("history sync")

    def _message(self, lineno: int, record: dict[str, Any]) -> None:
        ts = _time(record.get("timestamp"), "timestamp")
        kind = record["type"]
        if kind not in _MESSAGE_TYPES:
            self.reader.ignore(f"{kind} record")
            return
        turns = _turns(record)
        end = _end_time(record, ts)
        if kind == "gemini":
            self._response(lineno, record, ts)
        elif kind != "user":
            self.reader.ignore(f"{kind} message")
        self._put(record["id"], turns)
        self.last_end = end or self.last_end

    def _response(self, lineno: int, record: dict[str, Any], ts: datetime | None) -> None:
        model = record.get("model")
        if model is not None and not isinstance(model, str):
            _fail("model", model, "the model name")
        usage = _usage(record.get("tokens"))
        record_id = record["id"]
        call = self.calls_by_id.get(record_id)
        if call is not None:  # a later copy of the same response: its usage wins
            call.usage = usage or call.usage
            self.reader.ignore("repeated gemini message")
            return
        if record_id in self.spans:
            self.reader.ignore("repeated gemini message")
            return
        if not model:
            self.reader.ignore("gemini message without a model (not an API call)")
            return
        call = self._thread(model).call(
            model=model, provider="google", ts=self.last_end or ts, usage=usage
        )
        call.line = lineno
        self.calls_by_id[record_id] = call
        self.calls.append(call)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Gemini CLI session: one call per ``gemini`` message."""
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True  # each request is rebuilt from the lines before it
    state = ChatReader(reader, store)
    reader.each_record(state.add, "expected one Gemini CLI record per line")
    return reader.session(NAME, state.calls, store)
