"""Amp threads (``~/.local/share/amp/threads/T-<uuid>.json``; ``$AMP_DATA_DIR``).

One pretty-printed JSON document per thread (not JSON lines): ``{v, id: "T-…", created,
title, messages[], usageLedger: {events[]}, "~debug": {…}, env, …}``. Amp's client is not
public; the structure is the one ccusage's Amp adapter reads (``adapter/amp/parser.rs``
and the schema of its older ``apps/amp``), checked against the issue's notes on real
threads:

* ``messages[]``: ``{role, messageId, content[]}``. An assistant message that was
  answered carries ``usage = {model, inputTokens, cacheCreationInputTokens,
  cacheReadInputTokens, outputTokens, totalInputTokens, credits, timestamp}``:
  **one call per assistant message whose usage is not all zero**. ``inputTokens`` is the
  uncached input (``totalInputTokens`` = it + the cache reads and writes), so the
  inclusive input is the sum of the three (``derived``). An assistant message without
  usage (cancelled, or an error) got no answer billed: counted in ``Session.ignored``,
  not a call.
* ``usageLedger.events[]``: ``{id, timestamp, model, credits, tokens: {input, output},
  operationType, fromMessageId, toMessageId}``, Amp's credit ledger. An event whose
  ``toMessageId`` is an assistant message with usage is that message's call (its
  ``credits`` go in ``Call.meta``; not a second call). An event that names no such
  message is a call the messages do not hold (title generation, ...): a call of its
  own, in thread ``ledger <operationType>`` under the main one, with the ledger's
  ``input`` (no cache split is logged: cache fields not reported) and ``output``; an
  event with only ``tokens.total`` keeps it in ``Call.meta["total_tokens"]``, its
  usage not reported. Its request is not in the thread (the unlogged prefix alone).
* ``"~debug"``: Amp keeps the body of the last request here. It is not a call of its
  own (the last message's call is that request) and is not read (counted in
  ``Session.ignored``).

Requests are rebuilt (Anthropic ``messages`` shape) from the messages before each
answered one; Amp's ``tool_result`` blocks (``toolUseID``, ``run.result``) become
``tool_result`` blocks. Amp's sub-agents (its Task tool) are not in the thread's
messages: only what the ledger bills for them is read, as above. Errors name the
message or event (``messages[3].usage``); ``Call.line`` is the index + 1.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError, UsageError
from cacheviz.formats._body import provider_for
from cacheviz.formats._conversation import Thread
from cacheviz.formats._counts import count, split_usage
from cacheviz.formats._lines import LineReader, load_json_document
from cacheviz.formats._time import parse_epoch, parse_ts
from cacheviz.model import Call, Session, SkippedLine, Usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "amp"
DESCRIPTION = "Amp threads (~/.local/share/amp/threads/T-<uuid>.json)"
_THREAD_ID = re.compile(rb'"id"\s*:\s*"T-[0-9A-Za-z-]{8,}"')
_FILE_NAME = re.compile(r"^T-[0-9A-Za-z-]{8,}\.json$")
_MEMBERS = re.compile(rb'"(messages|usageLedger)"\s*:')


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens an Amp thread: one JSON object with a ``T-…`` id and messages."""
    start = head.lstrip()
    if not start.startswith(b"{"):
        return False
    if start.count(b"\n", 0, 4096) < 2 and not _FILE_NAME.match(path.name):
        return False  # one-line JSON: a JSONL record, not a pretty-printed thread
    return bool(_THREAD_ID.search(start[:65536])) and bool(_MEMBERS.search(start))


def _content(blocks: Any, where: str) -> list[Any]:
    """A message's content in Anthropic's shape (Amp's tool results renamed)."""
    if isinstance(blocks, str):
        return [{"type": "text", "text": blocks}]
    if not isinstance(blocks, list):
        msg = f"field `{where}` is {json_type(blocks)}; expected a list of content blocks"
        raise ValueError(msg)
    out: list[Any] = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            run = block.get("run")
            result = run.get("result") if isinstance(run, dict) else block.get("content")
            out.append(
                {
                    "type": "tool_result",
                    "tool_use_id": str(block.get("toolUseID") or block.get("tool_use_id")),
                    "content": result if isinstance(result, str) else json.dumps(result),
                }
            )
        else:
            out.append(block)
    return out


def _message_usage(raw: Any, where: str) -> Usage | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        msg = f"field `{where}` is {json_type(raw)}; expected an object"
        raise ValueError(msg)
    return split_usage(
        raw,
        uncached="inputTokens",
        read="cacheReadInputTokens",
        write="cacheCreationInputTokens",
        output="outputTokens",
    )


def _time(value: Any, where: str) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_epoch(value / 1000)  # Amp's epoch times are milliseconds
    return parse_ts(value, where)


class _Thread:
    """The state of reading one thread document."""

    def __init__(self, reader: LineReader, store: BlockStore) -> None:
        self.reader = reader
        self.store = store
        self.thread = Thread(store, "main")
        self.calls: list[Call] = []  # the messages' calls, in the order written
        self.ledger: list[Call] = []  # the ledger's own calls, in the order written
        self.by_message: dict[int, Call] = {}

    def message(self, index: int, message: Any) -> None:
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            msg = f"`{where}` is {json_type(message)}; expected a message object"
            raise ValueError(msg)
        role = message.get("role")
        if role not in ("user", "assistant"):
            self.reader.ignore(f"{role} message")
            return
        content = _content(message.get("content", []), f"{where}.content")
        if role == "user":
            self.thread.append({"role": "user", "content": content})
            return
        raw = message.get("usage")
        try:
            usage = _message_usage(raw, f"{where}.usage")
        except UsageError as exc:
            if self.reader.errors == "raise":
                msg = f"{where}: {exc}"
                raise ValueError(msg) from None
            self.reader.usage_nulled.append(SkippedLine(None, f"{where}: {exc}"))
            usage = None
        else:
            if usage is None:
                state = message.get("state")
                kind = state.get("type") if isinstance(state, dict) else None
                self.reader.ignore(
                    f"assistant message without usage ({kind or 'no state'}: no answer billed)"
                )
                self.thread.append({"role": "assistant", "content": content})
                return
        info = raw if isinstance(raw, dict) else {}
        model = info.get("model") or message.get("model")
        if not isinstance(model, str) or not model:
            msg = f"field `{where}.usage.model` is {json_type(model)}; expected the model name"
            raise ValueError(msg)
        meta: dict[str, Any] = {"message_id": message.get("messageId")}
        if isinstance(info.get("credits"), (int, float)):
            meta["credits"] = info["credits"]
        reported_total = info.get("totalInputTokens")
        if isinstance(reported_total, int):
            meta["total_input_tokens"] = reported_total
        call = self.thread.call(
            model=model,
            provider=provider_for(model),
            ts=_time(info.get("timestamp"), f"{where}.usage.timestamp"),
            usage=usage,
            meta=meta,
        )
        call.line = index + 1
        self.calls.append(call)
        if isinstance(message.get("messageId"), int):
            self.by_message[message["messageId"]] = call
        self.thread.append({"role": "assistant", "content": content})

    def event(self, index: int, event: Any) -> None:
        where = f"usageLedger.events[{index}]"
        if not isinstance(event, dict):
            msg = f"`{where}` is {json_type(event)}; expected a ledger event object"
            raise ValueError(msg)
        target = event.get("toMessageId")
        call = self.by_message.get(target) if isinstance(target, int) else None
        if call is not None:
            if isinstance(event.get("credits"), (int, float)):
                call.meta["credits"] = event["credits"]
            call.meta["ledger_event"] = event.get("id")
            self.reader.ignore("ledger event of an assistant message (its call)")
            return
        tokens = event.get("tokens")
        if not isinstance(tokens, dict):
            msg = f"field `{where}.tokens` is {json_type(tokens)}; expected an object"
            raise ValueError(msg)
        model = event.get("model")
        if not isinstance(model, str) or not model:
            msg = f"field `{where}.model` is {json_type(model)}; expected the model name"
            raise ValueError(msg)
        prefix = f"{where}.tokens."
        try:
            inp = count(tokens, "input", f"{prefix}input")
            out = count(tokens, "output", f"{prefix}output")
            total = count(tokens, "total", f"{prefix}total")
        except UsageError as exc:
            if self.reader.errors == "raise":
                raise ValueError(str(exc)) from None
            self.reader.usage_nulled.append(SkippedLine(None, f"{where}: {exc}"))
            inp = out = total = None
        if not (inp or out or total):
            self.reader.ignore("ledger event without tokens")
            return
        usage = (
            Usage(input_tokens=inp, output_tokens=out)
            if inp is not None or out is not None
            else None
        )
        operation = event.get("operationType")
        kind = operation if isinstance(operation, str) and operation else "other"
        meta: dict[str, Any] = {"ledger_event": event.get("id"), "operation": kind}
        if isinstance(event.get("credits"), (int, float)):
            meta["credits"] = event["credits"]
        if usage is None:
            meta["total_tokens"] = total
        side = Thread(self.store, f"ledger {kind}")
        made = side.call(
            model=model,
            provider=provider_for(model),
            ts=_time(event.get("timestamp"), f"{where}.timestamp"),
            usage=usage,
            meta=meta,
        )
        made.line = index + 1
        made.parent_hint = "main"
        self.ledger.append(made)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read an Amp thread: one call per answered assistant message, plus ledger-only calls."""
    document = load_json_document(path)
    if not isinstance(document, dict):
        msg = f"the file holds {json_type(document)}; expected one Amp thread object"
        raise TranscriptError(msg, path=path)
    messages = document.get("messages", [])
    if not isinstance(messages, list):
        msg = f"field `messages` is {json_type(messages)}; expected a list"
        raise TranscriptError(msg, path=path)
    ledger = document.get("usageLedger")
    events = ledger.get("events", []) if isinstance(ledger, dict) else []
    if not isinstance(events, list):
        msg = f"field `usageLedger.events` is {json_type(events)}; expected a list"
        raise TranscriptError(msg, path=path)
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    state = _Thread(reader, store)
    for index, message in enumerate(messages):
        try:
            state.message(index, message)
        except ValueError as exc:
            reader.fail(None, f"{exc}; expected an Amp thread message")
    for index, event in enumerate(events):
        try:
            state.event(index, event)
        except ValueError as exc:
            reader.fail(None, f"{exc}; expected an Amp usage ledger event")
    if "~debug" in document:
        reader.ignore("~debug block (the last request's body; its call is the last message's)")
    # two lists written apart: merged by request time, each kept in its own order
    runs = [run for run in (state.calls, state.ledger) if run]
    return reader.session(NAME, [*state.calls, *state.ledger], store, runs=runs)
