"""Aider's LLM history (``.aider.llm.history``, written with ``--llm-history-file``).

Aider appends every exchange with the model as text::

    TO LLM 2025-01-31T11:21:36
    -------
    SYSTEM Act as an expert code analyst.
    SYSTEM Answer questions about the supplied code.
    -------
    USER I am working with you on code in a git repository.
    LLM RESPONSE 2025-01-31T11:21:41
    ASSISTANT Sure, ...

A ``TO LLM`` block is one call and logs its whole prompt, system message included:
``-------`` opens a message and each line of it is prefixed with its role (aider's
``format_messages``). The request is rebuilt as an OpenAI chat body from those messages
(``reconstructed``: a message's trailing newlines, and line breaks other than the
newline, are lost in the log). A line without the role prefix continues the previous line
(a multi-line value of a list content part); a message logged with empty content is a
blank line without a role, taken to alternate with the message before it.
``LLM RESPONSE`` blocks hold the answer, which the next request repeats: they are
counted and skipped. Times are local and naive (taken as UTC). No model name and no
token counts are logged: the model is ``unknown`` and usage is not reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._body import call_from_request
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import ObjectScan

NAME = "aider"
DESCRIPTION = "Aider LLM history (.aider.llm.history, from --llm-history-file)"
UNKNOWN_MODEL = "unknown"
_HEADER = re.compile(r"(TO LLM|LLM RESPONSE) (\S+)")
_DETECT = re.compile(rb"\A\s*(?:TO LLM|LLM RESPONSE) \d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
_SEPARATOR = "-------"
_ROLES = frozenset({"SYSTEM", "DEVELOPER", "USER", "ASSISTANT", "TOOL", "FUNCTION"})
_EXPECTED = "expected `TO LLM <time>`, `LLM RESPONSE <time>`, `-------` or `ROLE text` lines"


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` starts like an Aider LLM history."""
    return _DETECT.match(head) is not None


@dataclass
class _Message:
    role: str | None = None  # upper case, as logged; None for a message logged empty
    lines: list[str] = field(default_factory=list)


@dataclass
class _Block:
    """One ``TO LLM`` block being read."""

    line: int
    ts: datetime | None
    messages: list[_Message] = field(default_factory=list)
    bad: bool = False


def _lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """Yield ``(line number, text)`` for every line; text is ``None`` when not UTF-8."""
    data = path.read_bytes()
    if not data or data.isspace():
        msg = "file is empty; expected an Aider LLM history (`TO LLM <time>` blocks)"
        raise TranscriptError(msg, path=path)
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()  # the file ends with a newline
    for number, raw in enumerate(lines, 1):
        try:
            yield number, raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError:
            yield number, None


def _role_of(line: str) -> tuple[str, str] | None:
    """``(ROLE, text)`` when ``line`` is a role-prefixed message line."""
    role, space, text = line.partition(" ")
    if role in _ROLES and (space or not text):
        return role, text
    return None


class _Parser:
    """Read the history line by line and turn each ``TO LLM`` block into a call."""

    def __init__(self, reader: LineReader) -> None:
        self.reader = reader
        self.store = BlockStore()
        self.refs: list[ObjectScan] = []  # most recent scans first
        self.calls: list[Call] = []
        self.block: _Block | None = None
        self.skipping = False  # inside an LLM RESPONSE block, or after a bad line

    def feed(self, number: int, line: str | None) -> None:
        """Take the next line of the file (``None`` when it is not UTF-8)."""
        if line is None:
            self._bad(number, "not valid UTF-8; re-save the file as UTF-8")
            return
        header = _HEADER.fullmatch(line)
        if header is not None:
            self._header(number, header.group(1), header.group(2))
        elif self.block is not None:
            if not self.block.bad:
                self._prompt_line(self.block, number, line)
        elif not self.skipping and line.strip():
            self._bad(number, f"unexpected text {line[:40]!r} before any header; {_EXPECTED}")
            self.skipping = True

    def finish(self) -> None:
        """Close the last block."""
        self._close()

    def _bad(self, number: int, reason: str) -> None:
        self.reader.fail(number, reason)
        if self.block is not None:
            self.block.bad = True

    def _header(self, number: int, kind: str, stamp: str) -> None:
        self._close()
        self.skipping = True
        try:
            ts = parse_ts(stamp)
        except ValueError:
            self.reader.fail(number, f"time {stamp[:40]!r} is not ISO-8601; {_EXPECTED}")
            return
        if kind == "LLM RESPONSE":
            self.reader.ignore("LLM response")
            return
        self.skipping = False
        self.block = _Block(number, ts)

    def _prompt_line(self, block: _Block, number: int, line: str) -> None:
        if line == _SEPARATOR:
            block.messages.append(_Message())
            return
        if not block.messages:
            self._bad(number, f"expected `-------` to open a message, found {line[:40]!r}")
            return
        message = block.messages[-1]
        prefixed = _role_of(line)
        if message.role is None:
            if prefixed is not None and not message.lines:
                message.role = prefixed[0]
                message.lines.append(prefixed[1])
            elif line or message.lines:
                self._bad(number, f"expected `ROLE text` after `-------`, found {line[:40]!r}")
            else:
                message.lines.append("")  # a message logged with empty content
            return
        if prefixed is not None and prefixed[0] == message.role:
            message.lines.append(prefixed[1])
        elif prefixed is not None:
            reason = f"a {prefixed[0]} line inside a {message.role} message; expected `-------`"
            self._bad(number, f"{reason} between two messages")
        else:  # a raw newline inside a list content part's value
            message.lines[-1] += "\n" + line

    def _close(self) -> None:
        block, self.block = self.block, None
        if block is None or block.bad:
            return
        if not block.messages:
            reason = "the `TO LLM` block has no messages; expected `-------` then `ROLE text`"
            self.reader.fail(block.line, reason)
            return
        messages = _chat_messages(block.messages)
        self.calls.append(self._call(messages, block))

    def _call(self, messages: list[dict[str, Any]], block: _Block) -> Call:
        call = call_from_request(
            {"model": UNKNOWN_MODEL, "messages": messages},
            self.refs,
            self.store,
            model=UNKNOWN_MODEL,
            provider="unknown",
            api="chat.completions",
            ts=block.ts,
            usage=None,
        )
        call.line = block.line
        return call


def _chat_messages(logged: list[_Message]) -> list[dict[str, Any]]:
    """The logged messages as chat messages (a role-less empty one alternates)."""
    messages: list[dict[str, Any]] = []
    for message in logged:
        role = message.role
        if role is None:
            before = messages[-1]["role"] if messages else "assistant"
            role = "assistant" if before == "user" else "user"
        messages.append({"role": role.lower(), "content": "\n".join(message.lines)})
    return messages


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read an Aider LLM history: one call per ``TO LLM`` block.

    Parameters
    ----------
    path
        The ``.aider.llm.history`` file.
    errors
        ``"raise"`` stops at the first malformed line; ``"skip"`` leaves out the
        ``TO LLM`` block holding it (see :func:`cacheviz.formats.load`).

    Returns
    -------
    Session

    Raises
    ------
    TranscriptError
        When the file is empty, or a line is malformed (naming its line number).
    """
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True  # each request is rebuilt from the lines before it
    parser = _Parser(reader)
    for number, line in _lines(path):
        parser.feed(number, line)
    parser.finish()
    if not parser.calls:
        msg = "no `TO LLM <time>` block: nothing was sent to the model"
        if reader.skipped:
            first = reader.skipped[0]
            msg = (
                f"no `TO LLM` block could be read ({len(reader.skipped)} bad line(s) skipped; "
                f"first at line {first.line}: {first.reason})"
            )
        raise TranscriptError(msg, path=path)
    return reader.session(NAME, parser.calls, parser.store)


__all__ = ["DESCRIPTION", "NAME", "detect", "read"]
