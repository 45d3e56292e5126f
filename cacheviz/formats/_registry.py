"""The reader registry: every format by its NAME, in detection order, and ``detect``.

The registry imports the readers (each when first asked for); a reader never imports the
registry. The one reader that must know the others, Claude Code (it refuses a line of
another format), asks through :data:`cacheviz.formats._lines.claiming_reader`, which this
module sets when it loads - before any reader runs, since a reader is a submodule of
:mod:`cacheviz.formats`, whose ``__init__`` imports this module.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import cast

from cacheviz.errors import TranscriptError, UnknownFormatError
from cacheviz.formats import _lines, _sqlite
from cacheviz.formats._reader import Reader

# Every reader by its NAME, in detection order (the first to claim a file reads it).
_MODULES = {
    "openai-log": "openai_log",
    "cacheviz": "native",
    "claude-trace": "claude_trace",
    "claude-tap": "claude_tap",
    "cc-viewer": "cc_viewer",
    "mitmproxy": "mitm",
    "qwen-code": "qwen_code",  # before claude_code: its records share Claude Code's keys
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini-cli-json": "gemini_json",  # before gemini_cli: a one-line chat JSON opens like a header
    "gemini-cli": "gemini_cli",
    "inspect": "inspect_log",
    "codebuff": "codebuff",  # before cline: a JSON array of messages too
    "cline": "cline",
    "openhands": "openhands",
    "zcode": "zcode",  # before opencode: its store has a `session` and a `message` table too
    "opencode": "opencode",
    "copilot-cli": "copilot_cli",
    "kimi-cli": "kimi_cli",
    "amp": "amp",
    "openclaw": "openclaw",  # before pi: the same entries, told apart by OpenClaw's own
    "pi": "pi",
    "hermes": "hermes",
    "goose": "goose",
    "droid": "droid",
    "grok": "grok",
    "crush": "crush",
    "antigravity": "antigravity",  # encrypted: named, then refused in one line
    "swe-agent": "swe_agent",
    "aider": "aider",
    "whale-usage": "whale_usage",  # usage-only readers (USAGE_ONLY = True)
    "cline-ui": "cline_ui",
    "continue": "continue_dev",
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


def _claiming_reader(lineno: int, line: bytes, reader: str) -> str | None:
    """The first reader but ``reader`` whose detector claims one line, else None."""
    for name, module in READERS.items():
        if name == reader:
            continue
        try:
            claimed = module.detect(Path(f"line{lineno}.jsonl"), line)
        except Exception:
            claimed = False
        if claimed:
            return name
    return None


_lines.claiming_reader = _claiming_reader
