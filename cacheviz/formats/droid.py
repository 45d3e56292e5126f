"""Droid (Factory) sessions (``~/.factory/sessions/<cwd-slug>/<uuid>.jsonl``).

Droid's client is not public; its layout is the one every public reader of it agrees on
(ccusage's Droid adapter and several session viewers), and its usage figure the one
ccusage bills:

* ``<uuid>.jsonl``: a first line ``{"type": "session_start", "id", "title", "owner",
  "version", "cwd"}``, then ``{"type": "message", "id", "timestamp", "message": {"role":
  "user" | "assistant", "content": [Anthropic content blocks]}}`` (a ``visibility:
  "llm_only"`` message is context Droid injects: sent to the model, not shown). Each
  assistant message is one API call; **no message carries usage**.
* ``<uuid>.settings.json`` beside it: ``model``, ``providerLock``,
  ``providerLockTimestamp`` and ``tokenUsage = {inputTokens, outputTokens,
  cacheCreationTokens, cacheReadTokens, thinkingTokens}``, the session's totals.
  ``inputTokens`` is the uncached input (a real session shows 73,400 input beside 3.5 M
  cache reads), so the inclusive input is the sum of the three (``derived``). It is
  billed at the **session's scope** (``Session.session_usage``), never spread over the
  calls; ``thinkingTokens`` is kept in ``meta`` (whether ``outputTokens`` already counts
  them is not documented; ccusage adds them on top).

Requests are rebuilt from the messages (the system prompt and tools are not logged). A
sub-agent (Droid's Task tool) runs as a session file of its own (its title starts
``# Task Tool Invocation``), read as such.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from cacheviz.errors import CacheVizWarning, TranscriptError, UsageError
from cacheviz.formats._body import provider_for
from cacheviz.formats._conversation import Thread
from cacheviz.formats._counts import split_usage
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session, SessionUsage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "droid"
DESCRIPTION = "Droid (Factory) sessions (~/.factory/sessions/<cwd>/<uuid>.jsonl + .settings.json)"
SETTINGS = ".settings.json"
_EXPECTED = 'expected a Droid record {"type": "session_start" | "message", ...}'


def settings_of(session: Path) -> Path:
    """The ``<uuid>.settings.json`` of a session file."""
    return session.with_name(session.name.removesuffix(".jsonl") + SETTINGS)


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens a Droid session: ``session_start``, then messages."""
    lines = [line for line in head.splitlines()[:4] if line.strip()]
    try:
        records = [json.loads(line) for line in lines]
    except (ValueError, RecursionError):
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except (ValueError, RecursionError):
                break
    if not records or not isinstance(records[0], dict):
        return False
    first = records[0]
    if first.get("type") != "session_start" or not isinstance(first.get("id"), str):
        return False
    if "cwd" not in first:
        return False
    rest = records[1:]
    return all(
        isinstance(r, dict) and r.get("type") == "message" and isinstance(r.get("message"), dict)
        for r in rest
    ) and (bool(rest) or settings_of(path).is_file())


def _model(raw: Any) -> str | None:
    if not isinstance(raw, str) or not raw.strip():
        return None
    return raw.strip().removeprefix("custom:")


def _settings(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(settings_of(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


class _Droid:
    def __init__(self, reader: LineReader, store: BlockStore, model: str, vendor: str) -> None:
        self.reader = reader
        self.thread = Thread(store, "main")
        self.model = model
        self.vendor = vendor
        self.calls: list[Call] = []

    def add(self, lineno: int, record: Any) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}"
            raise ValueError(msg)
        kind = record.get("type")
        if kind != "message":
            self.reader.ignore(f"{kind} record")
            return
        message = record.get("message")
        if not isinstance(message, dict):
            msg = f"field `message` is {json_type(message)}; expected an object"
            raise ValueError(msg)
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if role == "assistant":
            meta: dict[str, Any] = {"message_id": record.get("id")}
            call = self.thread.call(
                model=self.model,
                provider=self.vendor,
                ts=parse_ts(record.get("timestamp"), "timestamp"),
                usage=None,
                meta=meta,
            )
            call.line = lineno
            self.calls.append(call)
        self.thread.append({"role": role, "content": content})


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Droid session; its ``.settings.json`` totals are billed at its scope."""
    settings = _settings(path)
    model = _model(settings.get("model")) or "unknown"
    lock = settings.get("providerLock")
    guessed = provider_for(model)
    vendor = guessed if guessed != "unknown" else (lock if isinstance(lock, str) else "factory")
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    state = _Droid(reader, store, model, vendor)
    reader.each_record(state.add, _EXPECTED)
    session = reader.session(NAME, state.calls, store)
    raw = settings.get("tokenUsage")
    if isinstance(raw, dict):
        try:
            usage = split_usage(
                raw,
                uncached="inputTokens",
                read="cacheReadTokens",
                write="cacheCreationTokens",
                output="outputTokens",
                prefix="tokenUsage.",
            )
        except UsageError as exc:
            if errors == "raise":
                msg = f"{settings_of(path).name}: {exc} (or pass --errors skip / errors='skip')"
                raise TranscriptError(msg, path=path) from None
            warnings.warn(
                f"{path}: the session's usage is not read ({settings_of(path).name}: {exc})",
                CacheVizWarning,
                stacklevel=2,
            )
            usage = None
        if usage is not None:
            when = parse_ts(settings.get("providerLockTimestamp"), "providerLockTimestamp")
            last = session.calls[-1].ts if session.calls else None
            session.session_usage = [SessionUsage(model, vendor, usage, when or last)]
            session.reported_totals = usage
            thinking = raw.get("thinkingTokens")
            if isinstance(thinking, int) and thinking and session.calls:
                session.calls[0].meta["droid_thinking_tokens"] = thinking
    return session
