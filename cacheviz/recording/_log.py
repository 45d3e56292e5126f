"""The recording core shared by :func:`cacheviz.record`, the proxy and the LiteLLM callback.

An :class:`Exchange` follows one HTTP call: the request body as sent, the response status,
the response bytes as they stream past (only the usage is kept, never the stream), and
writes one cacheviz request log line (docs/format.md) when the response ends. A
:class:`LogWriter` is the one writer of a log: whole lines under a lock, flushed after
each line, fsync on close; a failing disk warns once and never breaks the caller.

Nothing here imports an HTTP library: the hooks feed bytes in.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
import warnings
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cacheviz._limits import Inflater, LimitError
from cacheviz.errors import CacheVizWarning, RecordingPathError
from cacheviz.formats._body import OPENAI_COMPATIBLE
from cacheviz.redact import redact, redact_all

# path suffix -> (provider when the path says it, api)
_ROUTES = (
    ("/messages", "anthropic", "messages"),
    ("/chat/completions", None, "chat.completions"),
    ("/responses", None, "responses"),
)
_HOST_PROVIDERS = (
    ("anthropic", "anthropic"),
    ("openai", "openai"),
    ("deepseek", "deepseek"),
    ("googleapis", "google"),
)
_MAX_ERROR_BYTES = 64 * 1024
_MAX_EVENT = 16 << 20  # an SSE event longer than this (characters) is content, not usage
# the last event of a stream: a client may close the response right after it
_TERMINAL_EVENTS = (
    "data: [DONE]",
    '"message_stop"',
    '"response.completed"',
    '"response.incomplete"',
    '"response.failed"',
)
Redactor = Callable[[str], str]


def check_log_path(path: str | Path, *, create: bool = False, folder: bool = True) -> Path:
    """``path`` if a request log can be appended there: a regular file, or a new one.

    With ``create=True`` the file is opened for appending once (and made if new), so an
    unwritable place fails now, not after the first call. ``folder=False`` lets a
    missing folder pass (writing then warns, as a full disk does).

    Raises
    ------
    RecordingPathError
        For a folder, a device or FIFO (``/dev/full``, ``/dev/zero``), a missing
        folder, or no permission; the message says which.
    """
    import stat

    target = Path(path)
    try:
        info = target.stat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        msg = f"{target}: can't use it as the request log ({exc.strerror or exc})"
        raise RecordingPathError(msg) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        example = target / "calls.jsonl"
        msg = f"{target}: is a folder; give a file for the request log, e.g. {example}"
        raise RecordingPathError(msg)
    if info is not None and not stat.S_ISREG(info.st_mode):
        msg = f"{target}: not a regular file (a device or a pipe); give a file for the log"
        raise RecordingPathError(msg)
    if info is None and folder and not target.parent.is_dir():
        msg = f"{target}: the folder {target.parent} does not exist; create it or pick another"
        raise RecordingPathError(msg)
    if create:
        try:
            with target.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            reason = exc.strerror or exc
            msg = f"{target}: can't write the request log ({reason}); pick another path"
            raise RecordingPathError(msg) from None
    return target


def route(method: str, path: str, host: str = "") -> tuple[str | None, str] | None:
    """``(provider, api)`` of a provider call, or ``None`` for anything else.

    Examples
    --------
    >>> route("POST", "/v1/messages")
    ('anthropic', 'messages')
    >>> route("POST", "/v1/chat/completions", "api.openai.com")
    ('openai', 'chat.completions')
    >>> route("POST", "/v1/messages/count_tokens") is None
    True
    """
    if method.upper() != "POST":
        return None
    path = path.split("?", 1)[0].rstrip("/")
    for suffix, provider, api in _ROUTES:
        if path.endswith(suffix):
            if provider is None:
                lowered = host.lower()
                provider = next((p for needle, p in _HOST_PROVIDERS if needle in lowered), None)
            return provider, api
    return None


def now_iso() -> str:
    """The current UTC time as ISO-8601 with milliseconds and a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def redact_body(text: str, redactor: Redactor | None = redact) -> str:
    """The request body text with secrets redacted, its other bytes kept as sent.

    Secrets are looked for in every string value of the JSON, as the report does
    (:func:`cacheviz.redact.redact_all`); each distinct string is checked once (a request
    repeats the strings of the one before), so the cost follows the new text. With no
    secret the text is returned as is. With one, the redactor runs over the JSON text,
    so the bytes it does not touch are kept; when that would not give the same JSON as
    redacting value by value (a match cutting an escape sequence), the redacted body
    is re-serialized compactly instead.

    Examples
    --------
    >>> redact_body('{"system": "key sk-ant-api03-AbCdEfGhIjKlMnOp",  "x": 1}')
    '{"system": "key [REDACTED]",  "x": 1}'
    >>> redact_body('{"a":  "nothing secret"}')
    '{"a":  "nothing secret"}'
    """
    if redactor is None:
        return text
    parsed = json.loads(text)
    found = [False]
    expected = _redact_value(parsed, _cached(redactor), found)
    if not found[0]:
        return text
    redacted = redactor(text)
    try:
        if json.loads(redacted) == expected:
            return redacted
    except ValueError:
        pass
    return json.dumps(expected, ensure_ascii=False, separators=(",", ":"))


_CACHE_CHARS = 32 << 20  # forget the checked strings past this many characters
_caches: dict[Redactor, tuple[dict[str, str], list[int]]] = {}


def _cached(redactor: Redactor) -> Callable[[str], str]:
    """``redactor`` with a memory of the strings it has seen."""
    if redactor not in _caches and len(_caches) >= 8:  # many custom redactors: start over
        _caches.clear()
    cache, size = _caches.setdefault(redactor, ({}, [0]))

    def check(value: str) -> str:
        done = cache.get(value)
        if done is None:
            done = redactor(value)
            if size[0] > _CACHE_CHARS:
                cache.clear()
                size[0] = 0
            cache[value] = done
            size[0] += len(value)
        return done

    return check


def _redact_value(value: Any, check: Callable[[str], str], found: list[bool]) -> Any:
    if isinstance(value, str):
        done = check(value)
        if done != value:
            found[0] = True
        return done
    if isinstance(value, list):
        return [_redact_value(v, check, found) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v, check, found) for k, v in value.items()}
    return value


def one_line(text: str) -> str:
    """JSON text on one line: newlines outside strings (the only ones JSON allows) → spaces."""
    if "\n" in text or "\r" in text:
        return text.replace("\r", " ").replace("\n", " ")
    return text


_KEEP_BYTES = 64 << 20  # lines kept while the log can't be written (then the oldest go)


class LogWriter:
    """The one writer of a cacheviz request log (a file, or memory when ``path`` is None).

    Each line is one ``write`` of whole bytes, under a lock (appends from threads never
    interleave); :meth:`close` fsyncs. Every line starts on a fresh line: a file whose
    last line was left incomplete (a crash) gets a newline first, so a new line is never
    glued onto it.

    A write that fails (a full disk, a quota, a file-size limit, a missing folder) is
    cut back to the last whole line (nothing half written stays), warned once in one
    line (the path, why, what to do) and **kept**: the kept lines are written first on
    the next call, so nothing is lost once space is back (up to ``keep`` bytes of them:
    past that the oldest are dropped, and counted). :meth:`close` says how many calls
    were never written. The calls being recorded are never disturbed. Lines are also
    offered to the ``listeners`` (the live inspector).
    """

    def __init__(self, path: str | Path | None = None, *, keep: int = _KEEP_BYTES) -> None:
        self.path = None if path is None else Path(path)
        self.lines: list[str] = []  # memory mode only
        self.listeners: list[Callable[[str], None]] = []
        self.written = 0  # lines given to write (on disk, or kept to retry)
        self.lost = 0  # lines dropped: more than ``keep`` bytes waited
        self.keep = keep
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._failing = False  # the last write failed (warned once until one succeeds)
        self.error: str | None = None  # the first write error, as warned
        self._fresh = False  # whether the file is known to end with a newline
        self._waiting: deque[bytes] = deque()  # lines not on disk yet, oldest first
        self._waiting_bytes = 0
        self._reason = "it could not be written"

    @property
    def unwritten(self) -> int:
        """Lines not (yet) in the file: kept to retry, plus those dropped."""
        return len(self._waiting) + self.lost

    def open(self) -> None:
        """Open the file for appending (a failure warns once)."""
        with self._lock:
            if self.path is not None and self._fd is None:
                try:
                    self._open()
                except OSError as exc:
                    self._fail(exc)

    def _open(self) -> None:
        assert self.path is not None
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(self.path, flags, 0o666)
        self._fresh = not _ends_open(self.path)

    def write(self, line: str) -> None:
        """Append one line (no newline in ``line``), on a line of its own."""
        with self._lock:
            self.written += 1
            if self.path is None:
                self.lines.append(line)
            else:
                self._keep((line + "\n").encode("utf-8"))
                closed = self._fd is None  # a call that ended after its recorder closed
                self._drain()
                if closed and self._fd is not None:
                    with contextlib.suppress(OSError):
                        self._close_file()
            listeners = list(self.listeners)
        for listener in listeners:
            try:
                listener(line)
            except Exception as exc:
                _warn_once(self, f"a recording listener failed: {exc!r}")

    def _keep(self, data: bytes) -> None:
        self._waiting.append(data)
        self._waiting_bytes += len(data)
        while self._waiting_bytes > self.keep and len(self._waiting) > 1:
            self._waiting_bytes -= len(self._waiting.popleft())
            self.lost += 1

    def _drain(self) -> None:
        """Write the waiting lines, oldest first; stop at the first that fails."""
        try:
            if self._fd is None:
                self._open()
            assert self._fd is not None
            while self._waiting:
                data = self._waiting[0]
                self._append(self._fd, data if self._fresh else b"\n" + data)
                self._fresh = True
                self._waiting.popleft()
                self._waiting_bytes -= len(data)
        except OSError as exc:
            self._fail(exc)
            return
        if self._failing:
            self._failing = False
            warnings.warn(
                f"{self.path}: the request log can be written again; the calls kept "
                "meanwhile are in it",
                CacheVizWarning,
                stacklevel=4,
            )

    def _append(self, fd: int, data: bytes) -> None:
        """``data`` at the file's end whole, or (on an error) not at all."""
        start = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            try:
                if os.fstat(fd).st_size > start:
                    os.ftruncate(fd, start)  # back to the last whole line
            except OSError:
                self._fresh = False  # a part may be left: the next line starts anew
            raise

    def close(self) -> None:
        """Write what waits (when it can be), fsync and close the file.

        Warns (one line) when calls could not be written at all.
        """
        with self._lock:
            if self._waiting and self.path is not None:
                self._drain()
            try:
                self._close_file()
            except OSError as exc:
                self._fail(exc)
            if self.unwritten:
                warnings.warn(
                    f"{self.path}: {self.unwritten} recorded call(s) were never written to "
                    f"the request log ({self._reason}); "
                    "they are lost",
                    CacheVizWarning,
                    stacklevel=3,
                )
                self._waiting.clear()
                self._waiting_bytes = 0
                self.lost = 0

    def _close_file(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _fail(self, exc: OSError) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._failing:
            return
        self._failing = True
        reason = _WRITE_REASONS.get(exc.errno or 0) or exc.strerror or str(exc)
        self._reason = reason
        message = (
            f"{self.path}: can't write the request log ({reason}); recording is off while "
            "this lasts: your calls go on, and their lines are kept and written when the "
            "log can be written again; free space or pick another path"
        )
        if self.error is None:
            self.error = message
        warnings.warn(message, CacheVizWarning, stacklevel=4)


_WRITE_REASONS = {
    errno.ENOSPC: "No space left on device",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "the file-size limit is reached",
}


def _ends_open(path: Path) -> bool:
    """Whether ``path`` is a non-empty file whose last byte is not a newline."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:
        return False


_warned: set[tuple[int, str]] = set()


def _warn_once(owner: object, message: str) -> None:
    key = (id(owner), message)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, CacheVizWarning, stacklevel=3)


class _UsageParser:
    """Pick ``usage`` (and errors) out of a response body as it streams past.

    SSE streams are split into events and only events that mention ``usage`` or
    ``error`` are parsed; a JSON body is kept (it is small) and parsed at the end.
    Content-Encoding gzip and deflate are decoded; others leave usage unknown.
    """

    def __init__(self, content_type: str, encoding: str) -> None:
        self.sse = "event-stream" in content_type.lower()
        encoding = encoding.lower().strip()
        self.usage: dict[str, Any] | None = None
        self.error: Any = None
        self.ok = encoding in ("", "identity", "gzip", "deflate", "x-gzip")
        self.complete = False  # an SSE stream's last event was seen
        self._inflate = (
            Inflater(47, where="the response")
            if encoding in ("gzip", "x-gzip", "deflate")
            else None
        )
        self._deflate = encoding == "deflate"
        self._tail: list[str] = []  # the event being received, in pieces (never re-joined)
        self._tail_size = 0
        self._skipping = False  # the event being received is too long to be read
        self._after_cr = False  # the last chunk ended with CR (its LF may come next)
        self._chunks: list[bytes] = []
        self._size = 0
        self._decoder = _utf8_decoder()

    def feed(self, chunk: bytes) -> None:
        if not self.ok:
            return
        try:
            data = self._decode(chunk)
            if self.sse:
                self._feed_sse(self._decoder.decode(data))
            else:
                self._chunks.append(data)
                self._size += len(data)
        except (zlib.error, UnicodeDecodeError, ValueError, LimitError):
            self.ok = False  # the bytes still pass to the caller; the usage is unknown

    def _decode(self, chunk: bytes) -> bytes:
        if self._inflate is None:
            return chunk
        try:
            return self._inflate.feed(chunk)
        except zlib.error:
            if not self._deflate:
                raise
            self._inflate = Inflater(-15, where="the response")  # raw deflate, as sent by some
            self._deflate = False
            return self._inflate.feed(chunk)

    def _feed_sse(self, text: str) -> None:
        if self._after_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF cut between two chunks
        self._after_cr = text.endswith("\r")
        if "\r" in text:  # CRLF, or CR alone (both valid SSE line ends)
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not text:
            return
        ends_line = bool(self._tail) and self._tail[-1].endswith("\n")
        if "\n\n" not in text and not (ends_line and text.startswith("\n")):
            self._hold(text)  # no event ends here: kept in pieces, not joined (linear time)
            return
        *events, rest = ("".join(self._tail) + text).split("\n\n")
        if self._skipping:  # the end of an event too long to read: dropped
            events = events[1:]
            self._skipping = False
        self._tail, self._tail_size = ([rest], len(rest)) if rest else ([], 0)
        for event in events:
            if '"usage"' in event or '"error"' in event:
                self._event(event)
            if any(marker in event for marker in _TERMINAL_EVENTS):
                self.complete = True

    def _hold(self, text: str) -> None:
        """Keep ``text`` of the event being received; drop an event past ``_MAX_EVENT``."""
        if self._skipping:
            self._tail = ["\n"] if text.endswith("\n") else []  # an end may span chunks
            return
        self._tail.append(text)
        self._tail_size += len(text)
        if self._tail_size > _MAX_EVENT:  # usage comes in small events: this is content
            self._skipping = True
            self._tail = ["\n"] if text.endswith("\n") else []
            self._tail_size = 0

    def _event(self, event: str) -> None:
        data = "\n".join(
            line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")
        )
        if not data or data == "[DONE]":
            return
        try:
            obj = json.loads(data)
        except ValueError:
            return
        if isinstance(obj, dict):
            self._take(obj)

    def _take(self, obj: dict[str, Any]) -> None:
        for holder in (obj, obj.get("message"), obj.get("response")):
            if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
                merged = dict(self.usage or {})
                merged.update({k: v for k, v in holder["usage"].items() if v is not None})
                self.usage = merged
                break
        if obj.get("type") == "error" or (
            "error" in obj and obj["error"] is not None and "choices" not in obj
        ):
            self.error = redact_all(obj.get("error", obj))

    def finish(self, status: int | None) -> None:
        if not self.ok or self.sse:
            tail = "".join(self._tail)
            if self.sse and tail.strip() and not self._skipping:
                self._event(tail)
            return
        body = b"".join(self._chunks)
        if self._inflate is not None:
            try:
                body += self._inflate.flush()
            except (zlib.error, LimitError):
                return
        try:
            obj = json.loads(body) if body else None
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            if status is not None and status >= 400:
                self.error = redact_all(obj.get("error", obj))
            else:
                self._take(obj)
        elif status is not None and status >= 400 and body:
            self.error = redact(body[:_MAX_ERROR_BYTES].decode("utf-8", "replace"))


def _utf8_decoder() -> Any:
    import codecs

    return codecs.getincrementaldecoder("utf-8")()


class Exchange:
    """One provider call being recorded; :meth:`finish` writes its line once.

    Build it with :meth:`begin`, which returns ``None`` for anything that is not a
    provider call with a JSON body (those pass through unrecorded).
    """

    def __init__(
        self,
        writers: Iterable[LogWriter],
        provider: str | None,
        api: str,
        model: str,
        request_text: str,
        meta: dict[str, Any] | None,
    ) -> None:
        self.writers = list(writers)
        self.provider = provider
        self.api = api
        self.model = model
        self.request_text = request_text
        self.meta = meta
        self.ts = now_iso()
        self.status: int | None = None
        self._t0 = time.perf_counter()
        self._parser: _UsageParser | None = None
        self._done = False
        self._lock = threading.Lock()
        self._pending: tuple[bytes, Redactor | None] | None = None

    @classmethod
    def begin(
        cls,
        writers: Iterable[LogWriter],
        *,
        method: str,
        path: str,
        host: str,
        body: bytes,
        redactor: Redactor | None = redact,
        meta: dict[str, Any] | None = None,
        defer: bool = False,
    ) -> Exchange | None:
        """Start recording a call, or ``None`` when it is not a provider call.

        ``defer=True`` keeps the body's bytes and reads them (parse, redact) in
        :meth:`finish` instead, off the request's way: a body that is not a JSON object
        then gives no line. Never raises: a body that can't be read is not recorded.
        """
        found = route(method, path, host)
        if found is None or not body:
            return None
        exchange = cls(writers, found[0], found[1], "", "", meta)
        exchange._pending = (body, redactor)
        if not defer and not exchange._read_body():
            return None
        return exchange

    def _read_body(self) -> bool:
        """Parse and redact the kept body; ``False`` when it is not a JSON object."""
        if self._pending is None:
            return True
        body, redactor = self._pending
        self._pending = None
        try:
            text = body.decode("utf-8")
            parsed = json.loads(text)
        except (UnicodeDecodeError, ValueError):
            return False
        except RecursionError:
            for writer in self.writers:
                _warn_once(
                    writer,
                    "a request body was nested too deeply to parse; the call went through "
                    "but is not recorded",
                )
            return False
        if not isinstance(parsed, dict):
            return False
        model = parsed.get("model")
        try:
            redacted = redact_body(text, redactor)
        except Exception as exc:
            if redactor is None or redactor is redact:
                raise
            name = getattr(redactor, "__qualname__", repr(redactor))
            for writer in self.writers:
                _warn_once(
                    writer,
                    f"redact={name} raised {type(exc).__name__}: {exc}; the call's body is "
                    "recorded with cacheviz's built-in redaction instead",
                )
            redacted = redact_body(text, redact)
        self.request_text = one_line(redacted)
        self.model = model if isinstance(model, str) else ""
        return True

    def respond(self, status: int, content_type: str, content_encoding: str) -> None:
        """The response headers arrived."""
        self.status = status
        self._parser = _UsageParser(content_type, content_encoding)

    def feed(self, chunk: bytes) -> None:
        """Bytes of the response body, as they pass (never raises)."""
        if self._parser is not None and chunk:
            try:
                self._parser.feed(chunk)
            except Exception:
                self._parser.ok = False

    def closed_early(self) -> None:
        """The caller closed the response: an error unless the stream's last event passed."""
        parser = self._parser
        if parser is not None and parser.sse and parser.complete:
            self.finish()
        else:
            self.finish(error="the caller closed the response before its end")

    def finish(self, *, error: str | None = None, status: int | None = None) -> None:
        """Write the call's line (once; later calls do nothing)."""
        with self._lock:
            if self._done:
                return
            self._done = True
        try:
            if not self._read_body():
                return
            if status is not None:
                self.status = status
            usage, body_error = None, None
            if self._parser is not None:
                self._parser.finish(self.status)
                usage, body_error = self._parser.usage, self._parser.error
            response: dict[str, Any] = {"status": self.status, "usage": usage}
            response["duration_ms"] = round((time.perf_counter() - self._t0) * 1000, 1)
            if error is not None or body_error is not None:
                response["error"] = error if error is not None else body_error
            line = self.line(response)
        except Exception as exc:
            for writer in self.writers:
                _warn_once(writer, f"cacheviz could not record a call: {exc!r}")
            return
        for writer in self.writers:
            writer.write(line)

    def line(self, response: dict[str, Any]) -> str:
        """The log line: keys in the order of docs/format.md, the request body spliced in."""

        def dump(value: Any) -> str:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

        head = {"ts": self.ts, "provider": self.provider, "api": self.api, "model": self.model}
        parts = [dump(head)[:-1], ',"request":', self.request_text, ',"response":', dump(response)]
        if self.meta:
            parts += [',"meta":', dump(self.meta)]
        parts.append("}")
        return "".join(parts)


__all__ = [
    "OPENAI_COMPATIBLE",
    "Exchange",
    "LogWriter",
    "RecordingPathError",
    "check_log_path",
    "now_iso",
    "one_line",
    "redact_body",
    "route",
]
