"""Transcript readers: one module per format, each with ``detect`` and ``read``.

:func:`load` picks the reader by content (``detect``) unless ``format`` names one.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from cacheviz.errors import TranscriptError, UnknownFormatError
from cacheviz.formats import (
    aider,
    claude_code,
    claude_trace,
    cline,
    codex,
    gemini_cli,
    inspect_log,
    native,
    openai_log,
    openhands,
    otel,
    swe_agent,
)
from cacheviz.model import Session

READERS: dict[str, ModuleType] = {
    m.NAME: m
    for m in (
        openai_log,
        native,
        claude_trace,
        claude_code,
        codex,
        gemini_cli,
        inspect_log,
        cline,
        openhands,
        swe_agent,
        aider,
        otel,
    )
}
_HEAD_BYTES = 1 << 20


def supported_formats() -> str:
    """One line naming every supported format."""
    return ", ".join(READERS)


def detect(path: Path) -> str:
    """Return the name of the format of ``path``.

    Raises
    ------
    UnknownFormatError
        When no reader recognises the file; the message lists the supported formats.
    """
    if path.is_dir():
        head = b""
    else:
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
        if not head.strip():
            msg = "file is empty; expected a transcript"
            raise TranscriptError(msg, path=path)
    for name, module in READERS.items():
        if module.detect(path, head):
            return name
    msg = (
        f"can't tell the transcript format. Supported: {supported_formats()}. "
        "Force one with --format NAME (format='NAME' in Python)"
    )
    raise UnknownFormatError(msg, path=path)


def load(path: str | Path, format: str | None = None, *, errors: str = "raise") -> Session:  # noqa: A002
    """Read a transcript into a :class:`~cacheviz.model.Session`.

    Parameters
    ----------
    path
        The transcript file (or folder, for formats stored as folders).
    format
        A reader name (see :data:`READERS`); auto-detected when ``None``.
    errors
        ``"raise"`` (default) stops at the first bad line; ``"skip"`` loads the rest,
        warns with the count and keeps the skipped lines in ``Session.skipped``.

    Returns
    -------
    Session

    Raises
    ------
    TranscriptError
        When the file is missing, empty, unreadable or of an unknown format.

    Examples
    --------
    >>> session = load("sample_sessions/append_only.jsonl")  # doctest: +SKIP
    >>> session.analyze().drifts.height  # doctest: +SKIP
    0
    """
    path = Path(path)
    if not path.exists():
        msg = "no such file; check the path"
        raise TranscriptError(msg, path=path)
    if format is None:
        format = detect(path)  # noqa: A001
    elif format not in READERS:
        msg = f"unknown format {format!r}. Supported: {supported_formats()}"
        raise UnknownFormatError(msg, path=path)
    return READERS[format].read(path, errors=errors)
