"""Older Gemini CLI chat files (``~/.gemini/tmp/<hash>/chats/session-*.json``).

One JSON object: ``{sessionId, projectHash, startTime, lastUpdated, messages[], kind,
summary}``. The messages are the records the newer JSONL files write one per line
(:mod:`cacheviz.formats.gemini_cli`, whose rules apply): ``user``/``gemini``/``info``
messages, usage in ``messages[].tokens`` (``input`` includes ``cached``; ``thoughts``
are output), one call per ``gemini`` message that names a ``model``.

A session's sub-agents are chats of their own (``kind: "subagent"``) in
``chats/<sessionId>/<agent>.json``: read with the session, each a thread
(``subagent:<agent>:<model>``) with its own unlogged prefix. Messages are numbered in
errors by their index (``messages[3].tokens``), and ``Call.line`` is that index + 1.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats.gemini_cli import ChatReader
from cacheviz.model import AGENT_KEY, Call, Session
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "gemini-cli-json"
DESCRIPTION = "Gemini CLI chat JSON, older (~/.gemini/tmp/*/chats/session-*.json)"
_KEY = rb'"%s"\s*:'
_WINDOW = 8192  # the header keys come first


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` opens one JSON object with a Gemini CLI header and ``messages``.

    A JSONL session's header line parses on its own and has no ``messages`` (its later
    ``$set`` lines may): that is the ``gemini-cli`` reader's.
    """
    start = head.lstrip()
    if not start.startswith(b"{"):
        return False
    first = start.split(b"\n", 1)[0]
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):
        record = None  # a pretty-printed object: its first line is "{"
    if isinstance(record, dict):
        return (
            isinstance(record.get("sessionId"), str)
            and "projectHash" in record
            and isinstance(record.get("messages"), list)
        )
    window = start[:_WINDOW]
    return all(re.search(_KEY % key, window) for key in (b"sessionId", b"projectHash")) and bool(
        re.search(rb'"messages"\s*:\s*\[', start)
    )


def _document(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_bytes())
    except OSError as exc:
        msg = f"can't be read ({exc.strerror})"
        raise TranscriptError(msg, path=path) from None
    except (ValueError, RecursionError) as exc:
        msg = f"not valid JSON ({exc}); expected one Gemini CLI chat object"
        raise TranscriptError(msg, path=path) from None
    if not isinstance(value, dict):
        msg = f"the file holds {json_type(value)}; expected a Gemini CLI chat object"
        raise TranscriptError(msg, path=path)
    if not isinstance(value.get("messages"), list):
        msg = f"field `messages` is {json_type(value.get('messages'))}; expected a list"
        raise TranscriptError(msg, path=path)
    return value


def subagent_chats(session: Path) -> list[Path]:
    """The sub-agent chats of a session file: ``chats/<sessionId>/*.json`` beside it."""
    short = session.stem.rsplit("-", 1)[-1]
    if not session.name.startswith("session-") or not short:
        return []
    folders = [p for p in session.parent.glob(f"{short}*") if p.is_dir()]
    return sorted(f for folder in folders for f in folder.glob("*.json") if f.is_file())


def session_of_subagent(chat: Path) -> Path | None:
    """The session file a sub-agent chat belongs to (``None``: not one, or not there)."""
    if chat.parent.parent.name != "chats" or chat.suffix != ".json":
        return None
    short = chat.parent.name[:8]
    owners = sorted(chat.parent.parent.glob(f"session-*-{short}.json"))
    return owners[0] if owners else None


class _ChatOf(ChatReader):
    """A Gemini CLI chat whose threads carry a prefix (a sub-agent's own threads)."""

    def __init__(self, reader: LineReader, store: BlockStore, prefix: str) -> None:
        super().__init__(reader, store)
        self.prefix = prefix

    def _thread(self, model: str) -> Thread:
        thread = self.threads.get(model)
        if thread is None:
            thread = self.threads[model] = Thread(self.store, f"{self.prefix}{model}")
            thread.messages = self.messages  # one conversation, one prefix per model
        return thread


class _ChatReader(LineReader):
    """A chat's reader, with the calls it read."""

    calls: list[Call]


def _read_chat(path: Path, store: BlockStore, prefix: str, errors: str) -> _ChatReader:
    document = _document(path)
    reader = _ChatReader(path, errors=errors)
    reader.rebuilds = True
    state = _ChatOf(reader, store, prefix)
    with reader.usage_policy() as done:
        for index, record in enumerate(document["messages"]):
            try:
                state.add(index + 1, record)
            except ValueError as exc:
                reader.fail(None, f"messages[{index}]: {exc}")
            done(None)
    reader.calls = state.calls
    return reader


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Gemini CLI chat JSON and its sub-agent chats: one call per ``gemini`` message."""
    store = BlockStore()
    main = _read_chat(path, store, "", errors)
    calls: list[Call] = list(main.calls)
    runs: list[list[Call]] = [list(main.calls)]  # each chat's calls, in the order written
    for chat in subagent_chats(path):
        try:
            sub = _read_chat(chat, store, f"{AGENT_KEY}{chat.stem}:", errors)
        except TranscriptError as exc:
            if errors == "raise":
                raise
            main.fail(None, f"sub-agent chat {exc}")
            continue
        for call in sub.calls:
            call.parent_hint = next((c.thread_hint for c in calls), None)
        calls += sub.calls
        runs.append(list(sub.calls))
        main.skipped += [type(s)(s.line, f"{chat.name}: {s.reason}") for s in sub.skipped]
        for kind, count in sub.ignored.items():
            main.ignored[kind] = main.ignored.get(kind, 0) + count
    return main.session(NAME, calls, store, runs=runs)
