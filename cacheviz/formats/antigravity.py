"""Antigravity conversations (``~/.gemini/antigravity/conversations/<id>.pb``): encrypted.

Google's Antigravity keeps each conversation as a protocol-buffer file that it encrypts
before writing: no byte of it is a readable message, token count or model name. Such a
file has no signature to detect by content, so it is recognised by where Antigravity
keeps it (a ``.pb`` file in ``antigravity/conversations/``), and reading it fails with
one line saying what it is, instead of "not valid UTF-8". Nothing in it can be billed.
"""

from __future__ import annotations

from pathlib import Path

from cacheviz.errors import TranscriptError
from cacheviz.model import Session

NAME = "antigravity"
DESCRIPTION = "Antigravity conversations (~/.gemini/antigravity/conversations/*.pb): encrypted"


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is an Antigravity conversation file (by its place: it is encrypted)."""
    return (
        path.suffix == ".pb"
        and path.parent.name == "conversations"
        and path.parent.parent.name == "antigravity"
    )


def read(path: Path, *, errors: str = "raise") -> Session:
    """Refuse, in one line: Antigravity encrypts its conversations.

    Raises
    ------
    TranscriptError
        Always: the file holds no readable message or usage.
    """
    msg = (
        "an Antigravity conversation: Antigravity encrypts these files, so no message, "
        "model or token count can be read from it (nothing to bill)"
    )
    raise TranscriptError(msg, path=path)
