"""What a session was about, in one short line: the scan's ``title`` column.

The log's own title when it has one (Claude Code: the one the user gave, else its AI
title or summary record: :attr:`cacheviz.model.Session.title`), else the first thing the
user asked in the main conversation. Wrappers an agent adds around a prompt
(``<system-reminder>…</system-reminder>``, a ``Caveat:`` line) are left out; a prompt
that is only a slash command is that command (``/init``). The line is redacted, then cut
to :data:`TITLE_CHARS` characters.
"""

from __future__ import annotations

import re
from typing import Any

from cacheviz.model import Call, Session
from cacheviz.redact import redact_cut

TITLE_CHARS = 80
"""Longest title kept (cut with ``…``)."""
_TAGGED = re.compile(r"<([A-Za-z][\w-]*)[^>]*>.*?</\1>", re.DOTALL)
_TAG = re.compile(r"</?[A-Za-z][\w-]*[^>]*>")
_COMMAND = re.compile(r"<command-name>\s*/?([^<]*?)\s*</command-name>")
_ARGS = re.compile(r"<command-args>([^<]*)</command-args>")
_BUDGET = 4_000  # characters of a message read for its prompt


def _strings(value: Any, out: list[str]) -> None:
    """The texts of a message value, in order (Anthropic blocks, OpenAI, Gemini parts)."""
    if isinstance(value, str):
        out.append(value[:_BUDGET])
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)
    elif isinstance(value, dict) and value.get("type") not in ("tool_result", "image"):
        for key in ("text", "content", "parts"):
            if key in value:
                _strings(value[key], out)


def _prompt(value: Any) -> str | None:
    """A user message's prompt: its first text outside the agent's wrappers."""
    if not isinstance(value, dict) or value.get("role") != "user":
        return None
    texts: list[str] = []
    _strings(value, texts)
    for text in texts:
        bare = " ".join(_TAG.sub(" ", _TAGGED.sub(" ", text)).split())
        if bare and not bare.startswith("Caveat:"):
            return bare
    for text in texts:  # a slash command the agent wrapped: /init, /review 12
        command = _COMMAND.search(text)
        if command and command[1]:
            args = _ARGS.search(text)
            return f"/{command[1]} {args[1].strip() if args else ''}".strip()
    return None


def first_prompt(session: Session, call: Call) -> str | None:
    """The first prompt ``call`` sends (its first user message with text of its own)."""
    for block in call.blocks:
        if block.part != "messages":
            continue
        content = session.contents.get(block.hash)
        found = None if content is None else _prompt(content.value)
        if found:
            return found
    return None


def session_title(session: Session, call: Call) -> str | None:
    """The title of ``session``: its own, else the first prompt of ``call`` (its main one).

    Returns
    -------
    str or None
        Redacted and cut to :data:`TITLE_CHARS`; ``None`` when neither is known.
    """
    text = session.title or first_prompt(session, call)
    if not text or not text.strip():
        return None
    return redact_cut(" ".join(text.split()), TITLE_CHARS)
