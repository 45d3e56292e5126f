"""Transcript readers: one module per format, each with ``detect`` and ``read``.

:func:`load` picks the reader by content (``detect``) unless ``format`` names one. A
reader module is a :class:`~cacheviz.formats._reader.Reader`; a new one is registered in
``_MODULES`` below and in ``_registered.py`` (where mypy checks it against the protocol).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import select
import shutil
import stat
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from cacheviz.errors import CacheVizWarning, TranscriptError, UnknownFormatError
from cacheviz.formats import _sqlite
from cacheviz.formats._folders import session_file
from cacheviz.formats._lines import describe_lines
from cacheviz.formats._reader import Reader
from cacheviz.model import Session, SkippedLine, paused_gc
from cacheviz.usage import UsageError, lenient_usage

# Every reader by its NAME, in detection order (the first to claim a file reads it).
_MODULES = {
    "openai-log": "openai_log",
    "cacheviz": "native",
    "claude-trace": "claude_trace",
    "claude-tap": "claude_tap",
    "cc-viewer": "cc_viewer",
    "mitmproxy": "mitm",
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini-cli-json": "gemini_json",  # before gemini_cli: a one-line chat JSON opens like a header
    "gemini-cli": "gemini_cli",
    "inspect": "inspect_log",
    "cline": "cline",
    "openhands": "openhands",
    "opencode": "opencode",
    "copilot-cli": "copilot_cli",
    "kimi-cli": "kimi_cli",
    "swe-agent": "swe_agent",
    "aider": "aider",
    "whale-usage": "whale_usage",  # usage-only readers (USAGE_ONLY = True)
    "cline-ui": "cline_ui",
    "otel": "otel",
}


class _Readers(Mapping[str, Reader]):
    """The reader modules by name, in detection order, each imported when first asked for.

    Detection imports the readers it tries (up to the one that claims the file), not all
    twenty: a short command does not pay for the readers it does not use.
    """

    def __getitem__(self, name: str) -> Reader:
        module = importlib.import_module(f"cacheviz.formats.{_MODULES[name]}")
        return cast(Reader, module)  # each registered module is checked as one: _registered.py

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)

    def __contains__(self, name: object) -> bool:
        return name in _MODULES


READERS: Mapping[str, Reader] = _Readers()
_HEAD_BYTES = 1 << 20  # detection reads this much, and more until the first line ends
_LONG_RUN = re.compile(rb"[^\"\\\n]{4096,}")  # a long run inside a string (base64, ...)
_MAX_DIGITS = 4300  # Python's int-from-text limit (sys.int_info.default_max_str_digits)
FIFO_TIMEOUT = 30.0  # seconds to wait for a writer on a named pipe with none yet
STDIN = "-"


def supported_formats() -> str:
    """One line naming every supported format."""
    return ", ".join(READERS)


def _head(path: Path) -> bytes:
    """The file's first bytes for detection: at least 1 MiB and the whole first line.

    A first line longer than the window (a base64 screenshot, a 200 MB message) is read
    to its end and long string runs are shortened, so detectors see its structure.
    """
    with path.open("rb") as handle:
        head = handle.read(_HEAD_BYTES)
        content = len(head) - len(head.lstrip())
        if len(head) == _HEAD_BYTES and b"\n" not in head[content:]:
            parts = [head]
            while chunk := handle.read(_HEAD_BYTES * 8):
                parts.append(chunk)
                if b"\n" in chunk:
                    break
            head = b"".join(parts)
    if len(head) > _HEAD_BYTES:
        head = _LONG_RUN.sub(b"...", head)
    return head


def _claims(module: Reader, path: Path, head: bytes) -> bool:
    """A detector's verdict; any failure inside one (deep nesting, odd bytes) is a no."""
    try:
        return bool(module.detect(path, head))
    except (RecursionError, MemoryError, Exception):  # every detector is total
        return False


def detect(path: Path) -> str:
    """Return the name of the format of ``path``.

    Raises
    ------
    UnknownFormatError
        When no reader recognises the file; the message says what is wrong with the
        first line (file:line:column) or lists the supported formats.
    """
    if path.is_dir():
        head = b""
    else:
        head = _head(path)
        if not head.strip():
            msg = "file is empty; expected a transcript"
            raise TranscriptError(msg, path=path)
    for name in READERS:
        if _claims(READERS[name], path, head):
            return name
    from cacheviz.formats import claude_code

    if claude_code.agent_metadata(path, head):
        agent = path.name.removesuffix(".meta.json")
        msg = (
            "a Claude Code sub-agent's metadata (agentType, description), not a transcript; "
            f"load {agent}.jsonl beside it, or the session it belongs to"
        )
        raise UnknownFormatError(msg, path=path)
    hint = (
        f"Supported: {supported_formats()}. Force one with --format NAME (format='NAME' in Python)"
    )
    if _sqlite.is_sqlite(head):
        names = _sqlite.tables(path)
        shown = "unreadable" if names is None else ", ".join(names[:12]) or "none"
        more = f" and {len(names) - 12} more" if names is not None and len(names) > 12 else ""
        msg = (
            "can't tell the transcript format: an SQLite database of a kind cacheviz does "
            f"not read (tables: {shown}{more}). {hint}"
        )
        raise UnknownFormatError(msg, path=path)
    line, column, problem = _first_line_problem(path) if head else (None, None, None)
    if problem is not None:
        msg = f"can't tell the transcript format: {problem}. {hint}"
        raise UnknownFormatError(msg, path=path, line=line, column=column)
    msg = f"can't tell the transcript format. {hint}"
    raise UnknownFormatError(msg, path=path)


def _first_line_problem(path: Path) -> tuple[int | None, int | None, str | None]:
    """What is wrong with the first non-blank line: ``(line, column, reason)``."""
    with path.open("rb") as handle:
        lineno = 0
        for raw in handle:
            lineno += 1
            if raw.strip():
                break
        else:
            return None, None, None
    if raw.startswith(b"\xef\xbb\xbf"):
        return lineno, 1, "the file starts with a UTF-8 byte-order mark; re-save it without one"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return lineno, exc.start + 1, "not valid UTF-8; re-save the file as UTF-8"
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return None, None, None  # not JSON lines: a format the detectors did not claim
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            reason = "text after the first JSON value (two objects on one line, or trailing data)"
        elif exc.msg.startswith("Unterminated") or exc.pos >= len(text.rstrip()):
            reason = f"the JSON ends early ({exc.msg}); the line may be truncated"
        else:
            reason = f"not valid JSON ({exc.msg})"
        return lineno, exc.colno, reason
    except RecursionError:
        return lineno, None, "JSON nested too deeply to read"
    except ValueError as exc:
        if "digits" in str(exc):
            return lineno, None, f"a number longer than {_MAX_DIGITS:,} digits"
        return lineno, None, f"not valid JSON ({exc})"
    if isinstance(value, dict) and "resourceSpans" in value:
        return (
            lineno,
            None,
            (
                "an OTLP trace export, but no span has GenAI attributes (gen_ai.*, llm.*, "
                "openinference.span.kind) in its first megabyte: no LLM call cacheviz "
                "reads; export the spans of your LLM instrumentation"
            ),
        )
    if isinstance(value, dict):
        keys = ", ".join(sorted(map(str, value))[:8]) or "none"
        return lineno, None, f"the first record's keys ({keys}) match no known format"
    return None, None, None


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
                shutil.copyfileobj(sys.stdin.buffer, out)
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
        while chunk := os.read(fd, 1 << 20):
            out.write(chunk)
    finally:
        os.close(fd)


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
