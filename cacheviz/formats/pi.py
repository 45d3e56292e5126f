"""pi sessions (``~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl``; ``$PI_AGENT_DIR``).

pi (badlogic/pi-mono, TypeScript; read from ``coding-agent/src/core/session-manager.ts``,
session version 3, and ``ai/src/types.ts``) writes a header line ``{"type": "session",
"version", "id", "timestamp", "cwd"}`` and then one entry per line, each ``{type, id,
parentId, timestamp, ...}``: the entries form a tree (a branch continues from an earlier
entry), and what a request holds is the path from the root to its parent. The types:

* ``message``: ``message`` is ``{role: "user" | "assistant" | "toolResult" |
  "bashExecution" | "custom", ...}``. An assistant message carries ``api``,
  ``provider``, ``model``, ``stopReason`` and ``usage = {input, output, cacheRead,
  cacheWrite, totalTokens, cost: {..., total}}``: **one call per assistant message
  whose usage is not all zero**. ``input`` is the uncached input (pi subtracts the cached
  tokens from OpenAI's ``prompt_tokens``), so the inclusive input is ``input + cacheRead
  + cacheWrite`` (``derived``); pi's own cost is kept in ``meta["reported_cost_usd"]``.
* **Error turns**: when the request fails (the provider answers with an error, the
  connection drops) pi still writes an assistant message, ``stopReason: "error"`` with
  ``errorMessage`` and all-zero usage. No answer came back and nothing was billed: it is
  **not a call** (not a call with usage 0), counted in ``Session.ignored`` as a failed
  request; an aborted turn (``stopReason: "aborted"``, the user pressed Escape) with zero
  usage likewise. pi leaves both out of later requests, and so does the rebuild.
* ``model_change`` (``provider``, ``modelId``), ``compaction`` (``summary``,
  ``firstKeptEntryId``, ``tokensBefore``), ``branch_summary`` (``summary``),
  ``custom_message`` (``content``: sent as a user message), ``custom`` (extension
  state, not sent), ``thinking_level_change``, ``label``, ``session_info``.

Requests are rebuilt as pi builds its context (``buildSessionContext``): the messages on
the path; after a compaction the summary (as pi words it), then the kept messages from
``firstKeptEntryId``, then what followed. They are written in Anthropic's message shape
(``toolCall`` as ``tool_use``, ``toolResult`` as a ``tool_result`` block). The system
prompt and tools are not logged. The compaction's own summary request logs no usage
(not a call). pi has no sub-agents of its own; an extension that spawns one writes a
session of its own (``parentSession`` in its header), read as such.

OpenClaw (:mod:`cacheviz.formats.openclaw`) writes the same entries and is read by the
same rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cacheviz.errors import UsageError
from cacheviz.formats._body import provider_for
from cacheviz.formats._conversation import Thread
from cacheviz.formats._counts import split_usage
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_epoch, parse_ts
from cacheviz.model import Call, Session, SkippedLine
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "pi"
DESCRIPTION = "pi coding agent sessions (~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl)"
_DETECT_LINES = 8
_ENTRY_TYPES = frozenset(
    {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
_COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following "
    "summary:\n\n<summary>\n"
)
_COMPACTION_SUFFIX = "\n</summary>"
_BRANCH_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
_BRANCH_SUFFIX = "</summary>"
_EXPECTED = 'expected a pi session entry {"type", "id", "parentId", "timestamp", ...}'


def records(head: bytes) -> list[Any]:
    """The JSON records of the first lines of ``head`` (up to the first that is not JSON)."""
    out = []
    for line in head.splitlines()[:_DETECT_LINES]:
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except (ValueError, RecursionError):
            break
    return out


def is_header(record: Any) -> bool:
    """Whether ``record`` is a pi session header line."""
    return (
        isinstance(record, dict)
        and record.get("type") == "session"
        and isinstance(record.get("id"), str)
        and isinstance(record.get("timestamp"), str)
        and "message" not in record
        and "data" not in record
    )


def is_entry(record: Any) -> bool:
    """Whether ``record`` is a pi session entry (``{type, id, parentId, timestamp}``)."""
    return (
        isinstance(record, dict)
        and record.get("type") in _ENTRY_TYPES
        and "id" in record
        and "parentId" in record
    )


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens a pi session: its header line, then pi entries."""
    found = records(head)
    if not found or not is_header(found[0]):
        return False
    return all(is_entry(r) for r in found[1:4])


def _text_parts(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, list):
        return [part for part in value if isinstance(part, dict)]
    return []


def _assistant_content(blocks: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "toolCall":
            out.append(
                {
                    "type": "tool_use",
                    "id": str(block.get("id")),
                    "name": str(block.get("name")),
                    "input": block.get("arguments") or {},
                }
            )
        elif kind == "thinking":
            thought: dict[str, Any] = {"type": "thinking", "thinking": block.get("thinking", "")}
            if block.get("thinkingSignature"):
                thought["signature"] = block["thinkingSignature"]
            out.append(thought)
        else:
            out.append(block)
    return out


def _sent(message: dict[str, Any]) -> dict[str, Any] | None:
    """The message as a request carries it (``None``: pi does not send it)."""
    role = message.get("role")
    if role == "user" or role == "custom":
        return {"role": "user", "content": _text_parts(message.get("content"))}
    if role == "assistant":
        if message.get("stopReason") in ("error", "aborted"):
            return None  # pi drops failed and aborted turns from the context
        return {"role": "assistant", "content": _assistant_content(message.get("content"))}
    if role == "toolResult":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": str(message.get("toolCallId")),
            "content": _text_parts(message.get("content")),
        }
        if message.get("isError"):
            result["is_error"] = True
        return {"role": "user", "content": [result]}
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        text = f"Ran `{message.get('command', '')}`\n```\n{message.get('output', '')}\n```"
        return {"role": "user", "content": [{"type": "text", "text": text}]}
    return None


class _Entry:
    """One entry of the tree: its parent and what it adds to a request."""

    __slots__ = ("compaction", "kind", "parent", "sent")

    def __init__(
        self,
        kind: str,
        parent: str | None,
        sent: dict[str, Any] | None,
        compaction: tuple[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.parent = parent
        self.sent = sent  # the message it adds to the context, if any
        self.compaction = compaction  # (summary, firstKeptEntryId) of a compaction


class PiSession:
    """The state of reading one pi (or OpenClaw) session file."""

    def __init__(self, reader: LineReader, store: BlockStore) -> None:
        self.reader = reader
        self.thread = Thread(store, "main")
        self.entries: dict[str, _Entry] = {}
        self.leaf: str | None = None  # the entry the thread's messages end at
        self.model: str | None = None
        self.provider: str | None = None
        self.calls: list[Call] = []
        self.header: dict[str, Any] = {}
        self.failed = 0

    # -- the tree --------------------------------------------------------------------

    def _path(self, last: str | None) -> list[tuple[str, _Entry]]:
        path: list[tuple[str, _Entry]] = []
        seen: set[str] = set()
        while last is not None and last in self.entries and last not in seen:
            seen.add(last)
            entry = self.entries[last]
            path.append((last, entry))
            last = entry.parent
        path.reverse()
        return path

    def _context(self, last: str | None) -> list[dict[str, Any]]:
        """The messages pi sends after entry ``last`` (``buildSessionContext``)."""
        path = self._path(last)
        cut = max((i for i, (_, e) in enumerate(path) if e.compaction), default=None)
        if cut is None:
            return [e.sent for _, e in path if e.sent is not None]
        summary, first_kept = path[cut][1].compaction or ("", "")
        text = _COMPACTION_PREFIX + summary + _COMPACTION_SUFFIX
        out: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": text}]}]
        kept = False
        for key, entry in path[:cut]:
            kept = kept or key == first_kept
            if kept and entry.sent is not None:
                out.append(entry.sent)
        out += [e.sent for _, e in path[cut + 1 :] if e.sent is not None]
        return out

    def _follow(self, parent: str | None) -> None:
        """Make the thread hold the context after ``parent`` (a branch rebuilds it)."""
        if parent != self.leaf:
            self.thread.replace(self._context(parent))

    def _add(self, key: str, entry: _Entry) -> None:
        self.entries[key] = entry
        if entry.compaction is not None:
            self.thread.replace(self._context(key))
        elif entry.sent is not None:
            self.thread.append(entry.sent)
        self.leaf = key

    # -- records ---------------------------------------------------------------------

    def add(self, lineno: int, record: Any) -> None:
        """Read one line's record (the header or an entry)."""
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}"
            raise ValueError(msg)
        kind = record.get("type")
        if kind == "session":
            self.header = record
            self.reader.ignore("session header")
            return
        if not isinstance(kind, str):
            msg = f"field `type` is {json_type(kind)}; expected the entry type"
            raise ValueError(msg)
        key = record.get("id")
        key = key if isinstance(key, str) and key else f"line {lineno}"
        parent = record.get("parentId", self.leaf)  # version 1 files have no tree: a list
        parent = parent if isinstance(parent, str) else None
        if kind == "message":
            self._message(lineno, key, parent, record)
            return
        self._follow(parent)
        if kind == "model_change":
            self.model = _name(record.get("modelId")) or self.model
            self.provider = _name(record.get("provider")) or self.provider
            self._add(key, _Entry(kind, parent, None))
        elif kind == "compaction":
            summary = record.get("summary")
            first = record.get("firstKeptEntryId")
            self._add(
                key,
                _Entry(kind, parent, None, (str(summary or ""), str(first or ""))),
            )
            self.reader.ignore("compaction (its summary request logs no usage)")
        elif kind == "branch_summary" and record.get("summary"):
            text = _BRANCH_PREFIX + str(record["summary"]) + _BRANCH_SUFFIX
            sent = {"role": "user", "content": [{"type": "text", "text": text}]}
            self._add(key, _Entry(kind, parent, sent))
        elif kind == "custom_message":
            sent = {"role": "user", "content": _text_parts(record.get("content"))}
            self._add(key, _Entry(kind, parent, sent))
        else:
            self.custom(record)
            self._add(key, _Entry(kind, parent, None))
            self.reader.ignore(f"{kind} entry")

    def custom(self, record: dict[str, Any]) -> None:
        """An entry other readers of the format look into (OpenClaw's model snapshots)."""

    def _message(self, lineno: int, key: str, parent: str | None, record: dict[str, Any]) -> None:
        message = record.get("message")
        if not isinstance(message, dict):
            msg = f"field `message` is {json_type(message)}; expected an object"
            raise ValueError(msg)
        self._follow(parent)
        if message.get("role") == "assistant":
            self._answer(lineno, record, message)
        sent = _sent(message)
        self._add(key, _Entry("message", parent, sent))

    def _answer(self, lineno: int, record: dict[str, Any], message: dict[str, Any]) -> None:
        raw = message.get("usage")
        if raw is not None and not isinstance(raw, dict):
            msg = f"field `message.usage` is {json_type(raw)}; expected an object"
            raise ValueError(msg)
        info = raw or {}
        try:
            usage = split_usage(
                info, uncached="input", read="cacheRead", write="cacheWrite", output="output"
            )
        except UsageError as exc:
            if self.reader.errors == "raise":
                raise
            self.reader.usage_nulled.append(SkippedLine(lineno, str(exc)))
            usage, corrupt = None, True
        else:
            corrupt = False
        stop = message.get("stopReason")
        if usage is None and not corrupt:
            if stop == "error":
                self.failed += 1
                self.reader.ignore(
                    "failed request (stopReason error, usage 0: no answer, nothing billed)"
                )
            elif stop == "aborted":
                self.reader.ignore("aborted turn (stopReason aborted, usage 0: nothing billed)")
            else:
                self.reader.ignore("assistant message without usage")
            return
        model = _name(message.get("model")) or _name(message.get("modelId")) or self.model
        if model is None:
            msg = "no model: neither `message.model` nor an earlier model_change names one"
            raise ValueError(msg)
        vendor = _name(message.get("provider")) or self.provider
        guessed = provider_for(model)
        meta: dict[str, Any] = {"stop_reason": stop}
        if vendor:
            meta["agent_provider"] = vendor
        if isinstance(message.get("api"), str):
            meta["agent_api"] = message["api"]
        cost = info.get("cost")
        total = cost.get("total") if isinstance(cost, dict) else None
        if isinstance(total, (int, float)) and not isinstance(total, bool):
            meta["reported_cost_usd"] = float(total)
        when = message.get("timestamp")
        ts = parse_epoch(when / 1000) if isinstance(when, (int, float)) else None
        call = self.thread.call(
            model=model,
            provider=guessed if guessed != "unknown" else (vendor or "unknown"),
            ts=ts or parse_ts(record.get("timestamp"), "timestamp"),
            usage=usage,
            meta=meta,
        )
        call.line = lineno
        self.calls.append(call)


def _name(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read_session(path: Path, errors: str, fmt: str, state_type: type[PiSession]) -> Session:
    """Read a session file in pi's format as the format ``fmt``."""
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    state = state_type(reader, store)
    reader.each_record(state.add, _EXPECTED)
    return reader.session(fmt, state.calls, store)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a pi session: one call per assistant message with reported usage."""
    return read_session(path, errors, NAME, PiSession)
