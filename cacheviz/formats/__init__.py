"""Transcript readers: one module per format, each with ``detect`` and ``read``.

:func:`load` picks the reader by content (:func:`detect`) unless ``format`` names one;
:data:`READERS` (``_registry``) lists every reader by its name, in detection order. A
reader module is a :class:`~cacheviz.formats._reader.Reader`; a new one is registered in
``_registry._MODULES`` and in ``_registered.py`` (where mypy checks it against the protocol).
"""

from __future__ import annotations

import os
import select
import stat
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from cacheviz._limits import STREAM
from cacheviz.errors import CacheVizWarning, TranscriptError, UnknownFormatError
from cacheviz.formats._folders import session_file
from cacheviz.formats._lines import describe_lines
from cacheviz.formats._registry import READERS, detect, supported_formats
from cacheviz.model import Session, SkippedLine, paused_gc
from cacheviz.reported._usage import UsageError, lenient_usage

FIFO_TIMEOUT = 30.0  # seconds to wait for a writer on a named pipe with none yet
STDIN = "-"


def _spool(source: str | Path) -> tuple[Path, tempfile.TemporaryDirectory[str]]:
    """Copy standard input or a pipe into a temporary file, read once, in full.

    Detection and reading both need the start of the input, which a pipe can give only
    once. A named pipe with no writer fails after :data:`FIFO_TIMEOUT` seconds.
    """
    folder = tempfile.TemporaryDirectory(prefix="cacheviz-")
    name = "stdin.jsonl" if str(source) == STDIN else Path(source).name
    target = Path(folder.name) / name
    try:
        with target.open("wb") as out:
            if str(source) != STDIN:
                _copy_fifo(Path(source), out)
            elif sys.stdin is None or sys.stdin.isatty():
                msg = "standard input is a terminal; pipe a transcript in, e.g. `cat s.jsonl |`"
                raise TranscriptError(msg, path="<stdin>")
            else:
                _copy_limited(sys.stdin.buffer.read, out, "<stdin>")
    except BaseException:
        folder.cleanup()
        raise
    return target, folder


def _copy_fifo(path: Path, out: Any) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready, _, _ = select.select([fd], [], [], FIFO_TIMEOUT)
        if not ready:
            msg = (
                f"no data arrived on the named pipe within {FIFO_TIMEOUT:.0f} s; "
                "start the writer first, or save the transcript to a file"
            )
            raise TranscriptError(msg, path=path)
        os.set_blocking(fd, True)
        _copy_limited(lambda n: os.read(fd, n), out, path)
    finally:
        os.close(fd)


def _copy_limited(read: Any, out: Any, shown: str | Path) -> None:
    """Copy a stream to ``out`` up to the stream-size limit (``/dev/zero`` never ends).

    Raises
    ------
    TranscriptError
        Past :data:`cacheviz._limits.STREAM`: one line, the temporary copy removed.
    """
    limit = int(STREAM.value())
    copied = 0
    while chunk := read(min(1 << 20, limit + 1 - copied)):
        copied += len(chunk)
        if copied > limit:
            msg = (
                f"more than {limit / (1 << 20):g} MiB arrived, the {STREAM.shown()}; "
                "save the transcript to a file and read that"
            )
            raise TranscriptError(msg, path=shown)
        out.write(chunk)


def _is_stream(path: Path) -> bool:
    """Whether ``path`` is a pipe or a character device (read once, not seekable)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def load(path: str | Path, format: str | None = None, *, errors: str = "raise") -> Session:  # noqa: A002
    """Read a transcript into a :class:`~cacheviz.model.Session`.

    Parameters
    ----------
    path
        The transcript file, or a folder: a Claude Code session or project folder (its
        session, the newest), a Cline task folder, or a format stored as a folder (the
        CLI accepts the same); ``"-"`` reads standard input. Pipes are read once, in
        full, before detection.
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
    if str(path) == STDIN or _is_stream(Path(path)):
        shown = "<stdin>" if str(path) == STDIN else str(path)
        spooled, folder = _spool(path)
        with folder:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", CacheVizWarning)
                    session = load(spooled, format, errors=errors)
            except TranscriptError as exc:
                raise type(exc)(exc.reason, path=shown, line=exc.line, column=exc.column) from None
        for warning in caught:
            text = str(warning.message).replace(str(spooled), shown)
            warnings.warn(text, warning.category, stacklevel=2)
        session.path = Path(shown)
        return session
    path = Path(path)
    if not path.exists():
        if path.is_symlink():
            msg = "a symbolic link that loops or points nowhere; check where it leads"
        else:
            msg = "no such file; check the path"
        raise TranscriptError(msg, path=path)
    if path.is_dir() and format is None:
        path, note, chosen = session_file(path)
        if chosen:
            warnings.warn(f"cacheviz: {note}", CacheVizWarning, stacklevel=2)
    if format is None:
        format = detect(path)  # noqa: A001
    elif format not in READERS:
        msg = f"unknown format {format!r}. Supported: {supported_formats()}"
        raise UnknownFormatError(msg, path=path)
    if errors != "skip":
        try:
            with paused_gc():
                return READERS[format].read(path, errors=errors)
        except UsageError as exc:  # a reader that could not name the line still names the file
            msg = f"{exc} (or pass --errors skip / errors='skip')"
            raise TranscriptError(msg, path=path) from None
    with lenient_usage() as problems, paused_gc():  # whole documents: no line to name
        session = READERS[format].read(path, errors=errors)
    if problems:
        warnings.warn(
            f"{path}: usage set to null for {len(problems)} call(s) with corrupt counts: "
            f"{describe_lines([SkippedLine(None, p) for p in problems])}",
            CacheVizWarning,
            stacklevel=2,
        )
    return session


__all__ = ["FIFO_TIMEOUT", "READERS", "STDIN", "detect", "load", "supported_formats"]
