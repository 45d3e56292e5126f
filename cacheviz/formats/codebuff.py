"""Codebuff chats (``~/.config/manicode/projects/<project>/chats/<chat id>/chat-messages.json``).

Codebuff's CLI (``CodebuffAI/codebuff``; read from ``cli/src/types/chat.ts``,
``cli/src/utils/run-state-storage.ts``, ``cli/src/utils/chat-history.ts`` and
``cli/src/hooks/helpers/send-message.ts``) keeps each chat in a folder of its project's
data folder (``~/.config/manicode`` and its ``-dev`` / ``-staging`` channels, or
``$CODEBUFF_DATA_DIR``; ccusage's Codebuff adapter, ``ryoppippi/ccusage``
``rust/crates/ccusage/src/adapter/codebuff/paths.rs``, looks in the same places):
``chat-messages.json`` (read here; one pretty-printed JSON array), ``run-state.json``
(the agent's state after the last run) and ``turn-checkpoint.json``.

Each element is a ``ChatMessage``: ``{id, variant: "user" | "ai" | "agent" | "error",
content, blocks?, timestamp, credits?, metadata?: {runState?}, ...}``. A ``user`` message
is the user's prompt; an ``ai`` (or ``agent``) message is the answer of one **run** of
Codebuff's agent, which makes as many model calls as it needs and may spawn sub-agents;
its ``blocks`` keep the answer's text (``text``), the tools it ran (``tool``:
``toolName``, ``input``, ``output``) and its sub-agents (``agent``: ``agentType``,
``content``, nested ``blocks``); ``error`` messages are the CLI's own notices, and an
``ai`` message whose only block is a ``mode-divider`` marks a change of agent mode (not a
run).

What a run cost, Codebuff logs as its own ``credits`` (Codebuff's billing unit), and the
run state it stores on the message (``metadata.runState.sessionState.mainAgentState``)
keeps the main agent's running totals ``cacheTotalInputTokens`` (the prompt tokens of
every model call so far, cached ones included) and ``cacheInputTokens`` (the cached
ones). No output tokens and no per-call counts are logged. So each run is **one call**
(its request rebuilt from the chat so far; the system prompt and tools are not in this
file) with usage **not reported**; its credits are kept in ``meta["codebuff_credits"]``
and the growth of the two totals over the run in ``meta`` (``codebuff_input_tokens``,
``codebuff_cached_input_tokens``); the last totals are the session's
``reported_totals`` (input and cache reads; output not reported), which give its hit
ratio. Nothing is billed: no output count, and credits are not dollars. The CLI writes a
message's ``timestamp`` as a clock time (``formatTimestamp``: ``"08:30 AM"``, no date):
an ISO time is read as the call's time, a clock time is kept in ``meta["codebuff_time"]``
and the call's time is not reported. ccusage and readers derived from it also take
``metadata.usage`` / ``metadata.codebuff.usage`` and ``providerOptions`` usage in the run
state's history as per-message usage; the CLI source read here writes none of them, so a
copy found there is counted in ``Session.ignored``, not read. A sub-agent's
work (an ``agent`` block) is shown in its parent's answer; its model calls are not
logged apart.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._conversation import Thread
from cacheviz.formats._counts import count
from cacheviz.formats._lines import LineReader, load_json_document
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session, Usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "codebuff"
DESCRIPTION = "Codebuff chats (~/.config/manicode/projects/<project>/chats/<id>/chat-messages.json)"
MESSAGES = "chat-messages.json"
_VARIANTS = frozenset({"user", "ai", "agent", "error"})
_ANSWERS = frozenset({"ai", "agent"})
_MODEL = "unknown"  # Codebuff's chat names no model: its agents pick theirs server-side
_PROVIDER = "codebuff"


def is_message(value: Any) -> bool:
    """Whether ``value`` is one Codebuff ``ChatMessage``."""
    return (
        isinstance(value, dict)
        and value.get("variant") in _VARIANTS
        and isinstance(value.get("id"), str)
        and "content" in value
    )


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens a Codebuff ``chat-messages.json``: an array of chat messages."""
    text = head.decode("utf-8", "replace").lstrip()
    if not text.startswith("["):
        return False
    rest = text[1:].lstrip()
    try:
        first, _ = json.JSONDecoder().raw_decode(rest)
    except (ValueError, RecursionError):
        return False
    return is_message(first)


def _totals(message: dict[str, Any]) -> tuple[int | None, int | None]:
    """The main agent's running prompt and cached-prompt totals in a message's run state."""
    metadata = message.get("metadata")
    state = metadata.get("runState") if isinstance(metadata, dict) else None
    session = state.get("sessionState") if isinstance(state, dict) else None
    main = session.get("mainAgentState") if isinstance(session, dict) else None
    if not isinstance(main, dict):
        return None, None
    total = count(main, "cacheTotalInputTokens", "mainAgentState.cacheTotalInputTokens")
    cached = count(main, "cacheInputTokens", "mainAgentState.cacheInputTokens")
    return total, cached


def _when(value: Any) -> datetime | None:
    """A message's ``timestamp`` as a time, when it is one (the CLI writes a clock time)."""
    try:
        return parse_ts(value, "timestamp")
    except ValueError:
        return None


def _divider(message: dict[str, Any]) -> bool:
    """Whether an ``ai`` message is the CLI's mode divider (its blocks all ``mode-divider``)."""
    blocks = message.get("blocks")
    return (
        isinstance(blocks, list)
        and bool(blocks)
        and all(isinstance(b, dict) and b.get("type") == "mode-divider" for b in blocks)
    )


def _grown(now: int, before: int | None) -> int:
    """How much a running total grew over a run (a total that restarted counts from 0)."""
    return now - before if before is not None and now >= before else now


def _answer(blocks: Any, content: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An answer's blocks as the assistant's content and the tool results that followed."""
    said: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    if not isinstance(blocks, list) or not blocks:
        if isinstance(content, str) and content:
            said.append({"type": "text", "text": content})
        return said, results
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("content"), str):
            if block.get("textType") != "reasoning":
                said.append({"type": "text", "text": block["content"]})
        elif kind == "tool":
            tool_id = str(block.get("toolCallId") or f"tool-{len(said)}")
            tool_input = block.get("input")
            said.append(
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": str(block.get("toolName") or "tool"),
                    "input": tool_input if isinstance(tool_input, dict) else {},
                }
            )
            output = block.get("output")
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            results.append({"type": "tool_result", "tool_use_id": tool_id, "content": text})
        elif kind == "agent" and isinstance(block.get("content"), str) and block["content"]:
            name = block.get("agentName") or block.get("agentType") or "agent"
            said.append({"type": "text", "text": f"[{name}] {block['content']}"})
    return said, results


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Codebuff chat: each run one call, the run state's totals the session's."""
    document = load_json_document(path)
    if not isinstance(document, list):
        msg = f"the file holds {json_type(document)}; expected a Codebuff chat (a list of messages)"
        raise TranscriptError(msg, path=path)
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    thread = Thread(store, "main")
    calls: list[Call] = []
    last_total: int | None = None
    last_cached: int | None = None
    for index, message in enumerate(document):
        if not is_message(message):
            reader.fail(
                None,
                f"messages[{index}] is {json_type(message)} without a chat variant; expected a "
                'Codebuff chat message {"id", "variant", "content", ...}',
            )
            continue
        variant = message["variant"]
        if variant == "error":
            reader.ignore("error notice")
            continue
        if variant == "user":
            content = message.get("content")
            thread.append({"role": "user", "content": content if isinstance(content, str) else ""})
            continue
        if _divider(message):
            reader.ignore("mode divider")
            continue
        try:
            total, cached = _totals(message)
        except ValueError as exc:
            reader.fail(None, f"messages[{index}].metadata.runState: {exc}")
            total = cached = None
        meta: dict[str, Any] = {"message_id": message["id"]}
        spent = message.get("credits")
        if isinstance(spent, (int, float)) and not isinstance(spent, bool) and spent >= 0:
            meta["codebuff_credits"] = spent
        if total is not None:
            meta["codebuff_input_tokens"] = _grown(total, last_total)
            last_total = total
        if cached is not None:
            meta["codebuff_cached_input_tokens"] = _grown(cached, last_cached)
            last_cached = cached
        when = _when(message.get("timestamp"))
        if when is None and isinstance(message.get("timestamp"), str):
            meta["codebuff_time"] = message["timestamp"]  # the CLI's clock time, no date
        metadata = message.get("metadata")
        if isinstance(metadata, dict) and ("usage" in metadata or "codebuff" in metadata):
            reader.ignore("usage copy in metadata (not written by Codebuff's CLI; not read)")
        call = thread.call(model=_MODEL, provider=_PROVIDER, ts=when, usage=None, meta=meta)
        call.line = index + 1
        calls.append(call)
        said, results = _answer(message.get("blocks"), message.get("content"))
        thread.append({"role": "assistant", "content": said})
        if results:
            thread.append({"role": "user", "content": results})
    session = reader.session(NAME, calls, store)
    if last_total is not None:
        session.reported_totals = Usage(
            input_tokens=last_total, cache_read_tokens=last_cached, provenance="reported"
        )
    return session
