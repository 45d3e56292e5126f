"""Shared plumbing for line-oriented readers: decoding, error policy, ordering."""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from io import BufferedIOBase
from pathlib import Path
from typing import Any, Protocol

from cacheviz._limits import LINE
from cacheviz._util import fastjson
from cacheviz.errors import CacheVizWarning, EmptyTranscriptError, TranscriptError
from cacheviz.model import Call, Session, SkippedLine, name_agent_threads
from cacheviz.reported._usage import UsageError, lenient_usage
from cacheviz.request._blocks import BlockStore

ERROR_MODES = ("raise", "skip")
# Set by callers that show progress (the CLI): called as progress(bytes done, bytes in all).
PROGRESS: ContextVar[Callable[[int, int], None] | None] = ContextVar("progress", default=None)
_PROGRESS_STEP = 8 << 20  # report every 8 MB


class Hasher(Protocol):
    """A hashlib object: what :class:`ReadTap` feeds."""

    def update(self, data: bytes | memoryview, /) -> None:
        """Add bytes."""

    def hexdigest(self) -> str:
        """The digest of the bytes added, hex."""


class ReadTap:
    """The bytes of one file fed to ``hasher`` as its reader reads them (one read, not two).

    ``cacheviz scan`` keeps each session's content hash; set in :data:`READ_TAP`, the
    first full read of ``path`` by :meth:`LineReader.lines` feeds the hash instead of a
    read of its own. :meth:`complete` says whether the whole file went through it (else
    the caller hashes the file itself).
    """

    def __init__(self, path: Path, hasher: Hasher) -> None:
        self.path = path
        self.hasher = hasher
        self.size: int | None = None  # the file's size when its reader opened it
        self.fed = 0

    def claim(self, path: Path, size: int) -> bool:
        """Whether this read of ``path`` (``size`` bytes) feeds the hash: its first one."""
        if self.size is not None or path != self.path:
            return False
        self.size = size
        return True

    def complete(self) -> bool:
        """Whether every byte of the file, as opened, was fed to the hash, once."""
        return self.size is not None and self.fed == self.size


READ_TAP: ContextVar[ReadTap | None] = ContextVar("read_tap", default=None)
_NAMED = 20  # lines a warning names before it only counts
# LineReader.lines reads WINDOW bytes at a time into one reused buffer: the process holds
# about a window of the file, never the file. (Not a memory map: a file truncated by
# another process while mapped kills the process with SIGBUS, a notebook kernel too.)
WINDOW = 4 << 20
# glibc's malloc serves a request above its mmap threshold (128 KB at start) with a fresh
# mapping, and raises the threshold to the size of such a block when it is freed. Each line
# of a growing agent log is a little longer than the one before, so every decoded line got
# a fresh mapping and was paged in again (0.4 s of system time for a 961 MB log). Freeing
# one block of this size first raises the threshold above any line (mallopt(3), "dynamic
# mmap threshold"; at most 32 MB): lines then reuse freed memory. Once per process.
_ALLOCATOR_BLOCK = 16 << 20
_allocator_raised = False
# The longest line read, in bytes (None: no limit): set by ``summary --follow``
# (:data:`cacheviz._limits.LINE`); a longer line is skipped unread, memory bounded.
MAX_LINE: ContextVar[int | None] = ContextVar("max_line", default=None)
_BLANK = b" \t\r"  # a line starting with one of these and all whitespace is blank
_SPACE = b" \t\r\x0b\x0c"  # bytes.isspace() without the newline


def _no_claim(lineno: int, line: bytes, reader: str) -> str | None:
    return None


# Which other reader claims one line of a file ``reader`` reads: ``(lineno, line, reader)
# -> name or None``. The registry (``formats._registry``) puts its own here when it loads,
# before any reader runs; a reader asks through this and never imports the registry.
claiming_reader: Callable[[int, bytes, str], str | None] = _no_claim


class LineReader:
    """Yield a file's non-blank lines as text and apply the ``errors`` policy."""

    def __init__(self, path: Path, *, errors: str = "raise") -> None:
        if errors not in ERROR_MODES:
            msg = f"errors={errors!r}; expected one of {ERROR_MODES}"
            raise ValueError(msg)
        self.path = path
        self.errors = errors
        self.skipped: list[SkippedLine] = []
        self.ignored: dict[str, int] = {}
        self.usage_nulled: list[SkippedLine] = []  # calls kept with usage set to null
        # Set by readers that rebuild each request from the lines before it: a skipped
        # line changes the later calls, and the warning names them.
        self.rebuilds = False
        self.torn: SkippedLine | None = None  # an incomplete last line, skipped
        # Per call (by id), how long its request was in flight, when its record says (a
        # request log written when the answer ended): it may start before calls written
        # above it by that much (docs/formats.md, "Call order and clocks").
        self.in_flight: dict[int, float] = {}
        self._open_line: int | None = None  # the last line, when no newline ends it
        self._open_text = ""

    @contextmanager
    def usage_policy(self) -> Iterator[Callable[[int | None], None]]:
        """Apply the error policy to corrupt usage counts read inside the block.

        ``errors="raise"``: a corrupt count raises :class:`~cacheviz.reported._usage.UsageError`
        (a ``ValueError``: the line's error names the field). ``errors="skip"``: the
        call keeps its place with its usage null; call the yielded ``done(line)`` after
        each line so the warning names it.
        """
        if self.errors == "raise":
            yield lambda _line: None
            return
        with lenient_usage() as problems:

            def done(line: int | None) -> None:
                if problems:
                    self.usage_nulled += [SkippedLine(line, p) for p in problems]
                    problems.clear()

            yield done

    def lines(self) -> Iterator[tuple[int, str]]:
        """Yield ``(line number, text)`` for every non-blank line.

        Lines are decoded straight from one reused buffer of :data:`WINDOW` bytes that
        the file is read into (a line longer than the window is joined from its pieces).
        The process holds about a window of the file, the line being read and whatever
        the caller keeps, never the whole file nor a copy of it.
        """
        regular(self.path)
        with self.path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                msg = "file is empty; expected one JSON object per line"
                raise TranscriptError(msg, path=self.path)
            if size > WINDOW:
                _raise_mmap_threshold()
            progress = PROGRESS.get()
            tap = READ_TAP.get()
            if tap is not None and not tap.claim(self.path, size):
                tap = None

            def numbered() -> Iterator[tuple[int, memoryview | bytes]]:
                reported = 0
                lines = _file_lines(handle, size, WINDOW, tap)
                for lineno, (offset, raw, ended) in enumerate(lines, 1):
                    if progress is not None and offset - reported >= _PROGRESS_STEP:
                        progress(offset, size)
                        reported = offset
                    if isinstance(raw, Overlong):
                        mib = raw.length / (1 << 20)
                        self.fail(lineno, f"the line is {mib:,.1f} MiB, past the {LINE.shown()}")
                        continue
                    if not ended:
                        self._open_line = lineno
                    yield lineno, raw

            kept = LineFilter(self)
            for lineno, text in kept.texts(numbered()):
                if lineno == self._open_line:
                    self._open_text = text
                yield lineno, text
            if not kept.content:
                msg = "file is empty; expected one JSON object per line"
                raise TranscriptError(msg, path=self.path)
        if progress is not None:
            progress(size, size)

    def fail(self, lineno: int | None, reason: str) -> None:
        """Raise for a bad line, or record it when skipping.

        The last line, when no newline ends it and it does not parse, is a line being
        written (or cut by a full disk): it is skipped with a note under either policy.
        """
        if lineno is not None and lineno == self._open_line and _cut_short(self._open_text):
            self.torn = SkippedLine(lineno, f"incomplete last line, not counted ({reason})")
            return
        if self.errors == "raise":
            msg = f"{reason} (or pass --errors skip / errors='skip')"
            raise TranscriptError(msg, path=self.path, line=lineno)
        self.skipped.append(SkippedLine(lineno, reason))

    def each_record(self, add: Callable[[int, Any], None], expected: str) -> None:
        """Parse every line as JSON and hand it to ``add(line, record)``.

        A line that is not JSON, or that ``add`` rejects with a ``ValueError``, goes
        through the error policy with ``expected`` appended to its reason.
        """
        with self.usage_policy() as done:
            for lineno, text in self.lines():
                try:
                    add(lineno, fastjson.loads(text))
                except UsageError as exc:
                    self.fail(lineno, str(exc))
                except ValueError as exc:
                    self.fail(lineno, f"{exc}; {expected}")
                except RecursionError:
                    self.fail(lineno, f"JSON nested too deeply; {expected}")
                done(lineno)

    def ignore(self, kind: str) -> None:
        """Count a well-formed record that is not an API call (a summary, a ping, ...)."""
        self.ignored[kind] = self.ignored.get(kind, 0) + 1

    def _affected(self, calls: list[Call]) -> str:
        """For rebuilt conversations: which calls' requests lack a skipped line's content."""
        lines = [s.line for s in self.skipped if s.line is not None]
        if not self.rebuilds or not lines:
            return ""
        first = min(lines)
        hit = [c.index for c in calls if c.line is not None and c.line > first]
        if not hit:
            return ""
        shown = ", ".join(map(str, hit[:_NAMED])) + (
            f" and {len(hit) - _NAMED} more" if len(hit) > _NAMED else ""
        )
        return (
            f". The requests of {len(hit)} later call(s) (#{shown}) are rebuilt without "
            "the skipped content, so their token counts may be low"
        )

    def session(
        self,
        fmt: str,
        calls: list[Call],
        store: BlockStore,
        *,
        runs: list[list[Call]] | None = None,
        by_time: bool = False,
    ) -> Session:
        """Put the calls in call order (:func:`call_order`), number them, build the session.

        ``runs``: the calls of each file, when ``calls`` joins several (a session and its
        sub-agents); ``by_time``: the records' order says nothing (an OTel export), so the
        calls are ordered by request time alone.
        """
        if self.torn is not None:
            warnings.warn(
                f"{self.path}: line {self.torn.line} is incomplete (no newline ends it: the "
                "file is being written, or was cut); skipped, the complete lines are counted",
                CacheVizWarning,
                stacklevel=3,
            )
        if not calls:
            detail = f" ({len(self.skipped)} bad lines skipped)" if self.skipped else ""
            msg = f"no API call could be read{detail}{_held_instead(self.ignored)}"
            if self.skipped:
                raise TranscriptError(msg, path=self.path)
            raise EmptyTranscriptError(msg, path=self.path)
        skews: list[tuple[Call, float]] = []
        if by_time:
            ordered = order_by_time(calls)
        else:
            ordered, skews = call_order(runs if runs is not None else [calls], self.in_flight)
        name_agent_threads(ordered)
        for index, call in enumerate(ordered):
            call.index = index
        if skews:
            warnings.warn(
                f"{self.path}: {describe_skews(skews)}",
                CacheVizWarning,
                stacklevel=3,
            )
        if self.skipped:
            warnings.warn(
                f"{self.path}: skipped {len(self.skipped)} bad line(s): "
                f"{describe_lines(self.skipped)}{self._affected(ordered)}",
                CacheVizWarning,
                stacklevel=3,
            )
        if self.usage_nulled:
            warnings.warn(
                f"{self.path}: usage set to null for {len(self.usage_nulled)} call(s) "
                f"with corrupt counts: {describe_lines(self.usage_nulled)}",
                CacheVizWarning,
                stacklevel=3,
            )
        skipped = [*self.skipped, *([self.torn] if self.torn is not None else [])]
        return Session(self.path, fmt, ordered, store.contents, store.blocks, skipped, self.ignored)


class LineFilter:
    """Which lines of a log are read, as text (:meth:`LineReader.lines`).

    A blank line is left out. A line of whitespace only that does not start like a blank
    one (a form feed, say) is held until a line with other text shows up: a file of
    whitespace only is empty. A line that is not UTF-8 goes through the reader's error
    policy. :class:`cacheviz.live._incremental.LiveLog` keeps one across the appends to a log.

    Parameters
    ----------
    reader
        The log's reader.
    """

    def __init__(self, reader: LineReader) -> None:
        self.reader = reader
        self.content = False
        """Whether a line with text other than whitespace was read."""
        self.held: list[tuple[int, str]] = []
        """The whitespace-only lines read before it (``(line number, text)``)."""

    def texts(self, lines: Iterable[tuple[int, memoryview | bytes]]) -> Iterator[tuple[int, str]]:
        """``(line number, text)`` of each line of ``lines`` that is read, in order.

        ``lines`` are ``(line number, bytes)``, the newline left out.
        """
        held = self.held
        for lineno, raw in lines:
            if not raw:
                continue
            spaces = raw[0] in _SPACE and bytes(raw).isspace()
            if spaces and raw[0] in _BLANK:
                continue  # a blank line
            if not self.content:
                if spaces:  # e.g. a form feed: read it unless the file is all spaces
                    held.append((lineno, str(raw, "ascii")))
                    continue
                self.content = True
                yield from held
                held.clear()
            try:
                text = str(raw, "utf-8")
            except UnicodeDecodeError as exc:
                reason = f"not valid UTF-8 at byte {exc.start + 1}; re-save the file as UTF-8"
                self.reader.fail(lineno, reason)
                continue
            yield lineno, text


_Lines = Iterator[tuple[int, memoryview | bytes, bool]]


def _raise_mmap_threshold() -> None:
    """Free one :data:`_ALLOCATOR_BLOCK` block, so big lines reuse freed heap memory.

    ``bytes(n)`` is allocated zeroed by ``calloc``: a fresh mapping whose pages are never
    touched, so this costs two system calls. Elsewhere than glibc it does nothing useful
    and no harm.
    """
    global _allocator_raised  # once per process
    if not _allocator_raised:
        _allocator_raised = True
        del_me = bytes(_ALLOCATOR_BLOCK)
        del del_me


class _ReadInto(Protocol):
    def readinto(self, buffer: bytearray, /) -> int: ...


def _file_lines(
    handle: BufferedIOBase, size: int, window: int, tap: ReadTap | None = None
) -> _Lines:
    """Yield ``(offset, bytes, ended)`` for each line of ``handle``, newline left out.

    ``offset`` is where the line starts in the file; ``ended`` whether a newline ends it
    (only the last line may lack one). The bytes are a view, valid until the next line
    is asked for. The file is read up to the ``size`` it had when opened, through a
    buffer no bigger than that (a small session does not zero a 4 MB window). ``tap``:
    every byte read is fed to its hash too.
    """
    return _streamed_lines(_Bounded(handle, size, tap), max(1, min(window, size)))


class _Bounded:
    """A binary file read no further than ``size`` bytes (what it held when opened)."""

    def __init__(self, handle: BufferedIOBase, size: int, tap: ReadTap | None = None) -> None:
        self._handle = handle
        self._left = size
        self._tap = tap

    def readinto(self, buffer: bytearray) -> int:
        if self._left <= 0:
            return 0
        view = memoryview(buffer)[: min(len(buffer), self._left)]
        try:
            filled = self._handle.readinto(view)
            if filled and self._tap is not None:
                self._tap.hasher.update(view[:filled])
                self._tap.fed += filled
        finally:
            view.release()
        self._left -= filled or 0
        return filled or 0


def _streamed_lines(handle: _ReadInto, window: int) -> _Lines:
    """The lines of a file read ``window`` bytes at a time into one reused buffer.

    A line that runs past the window is copied out piece by piece and joined.
    """
    buffer = bytearray(window)
    view = memoryview(buffer)
    pieces: list[bytes] = []  # the start of a line that runs past the window
    start_of_line = 0  # file offset of the line being assembled
    position = 0  # file offset of buffer[0]
    cap = MAX_LINE.get()
    held = 0  # bytes of the line being assembled
    try:
        while True:
            filled = handle.readinto(buffer)
            if not filled:
                break
            start = 0
            while True:
                end = buffer.find(b"\n", start, filled)
                if end < 0:
                    break
                if pieces or held:
                    held += end - start
                    if cap is not None and held > cap:
                        yield start_of_line, Overlong(held), True
                    else:
                        pieces.append(view[start:end].tobytes())
                        yield start_of_line, b"".join(pieces), True
                    pieces.clear()
                    held = 0
                elif cap is not None and end - start > cap:
                    yield position + start, Overlong(end - start), True
                else:
                    yield position + start, view[start:end], True
                start = end + 1
            if start < filled:
                if not pieces and not held:
                    start_of_line = position + start
                held += filled - start
                if cap is None or held <= cap:
                    pieces.append(view[start:filled].tobytes())
                else:
                    pieces.clear()  # too long to read: only its length is kept
            position += filled
        if pieces or held:
            last = Overlong(held) if cap is not None and held > cap else b"".join(pieces)
            yield start_of_line, last, False
    finally:
        view.release()


class Overlong(bytes):
    """A line longer than :data:`MAX_LINE` allows, left unread: only its length is kept."""

    length: int

    def __new__(cls, length: int) -> Overlong:
        line = super().__new__(cls, b"")
        line.length = length
        return line


def _cut_short(text: str) -> bool:
    """Whether ``text`` is JSON that ends early (a line still being written, or cut)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.msg.startswith("Unterminated") or exc.pos >= len(text.rstrip())
    except (ValueError, RecursionError):
        return False
    return False


def short_name(path: Path, keep: int = 44) -> str:
    """``path``'s file name, its middle elided past ``keep`` characters (for one-line warnings).

    >>> short_name(Path("/a/b/7ef4b236-d946-48a6-a856-e45b02af7be7.jsonl"), keep=20)
    '7ef4b236-…7be7.jsonl'
    """
    name = path.name
    if len(name) <= keep:
        return name
    tail = (keep - 1) // 2 + 1
    return f"{name[: keep - 1 - tail]}…{name[-tail:]}"


def describe_lines(lines: list[SkippedLine]) -> str:
    """Name every line (the first 20, then a count): ``line 3 (reason); line 9 (...)``."""
    named = [s.reason if s.line is None else f"line {s.line} ({s.reason})" for s in lines[:_NAMED]]
    more = f"; and {len(lines) - _NAMED} more" if len(lines) > _NAMED else ""
    return "; ".join(named) + more


# A record's clock may step back this much behind the one written before it (clocks of
# two processes, rounding) before it is named as skewed.
SKEW_TOLERANCE = 1.0  # seconds


def _held_instead(ignored: dict[str, int], most: int = 4) -> str:
    """What a file without a call holds instead (its records set aside), for the error.

    A session opened and left, or holding only failed or aborted requests, says so
    rather than looking empty.
    """
    if not ignored:
        return ""
    kinds = sorted(ignored.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{n} {kind}" for kind, n in kinds[:most])
    more = f", and {len(kinds) - most} more kind(s)" if len(kinds) > most else ""
    return f"; the file holds: {shown}{more}"


def call_order(
    runs: Iterable[Iterable[Call]], in_flight: dict[int, float] | None = None
) -> tuple[list[Call], list[tuple[Call, float]]]:
    """The calls in the order they were made, and the records whose clock stepped back.

    Each run is one file's calls in the order they were written. Within a run the order
    written is the call order: a record whose time is earlier than a record written
    above it stays where it was written, and is returned as skewed with how many seconds
    behind it is, unless it was still in flight then (its request started before, and
    ``in_flight[id(call)]`` says how long it ran: a request log written when each answer
    ends), or the step is within :data:`SKEW_TOLERANCE`: those are ordered by request
    time. Runs (a session and its sub-agents) are merged by request time; a call without
    a time keeps its place after the call before it.

    A record whose time is later than the records written on both sides of it (its clock
    ahead) is named instead of the records after it, and keeps its place too.

    Returns
    -------
    tuple
        The calls in call order; ``(call, seconds behind)`` for each skewed record
        (negative: ahead).
    """
    flights = in_flight or {}
    keyed: list[tuple[Call, datetime | None]] = []
    skews: list[tuple[Call, float]] = []
    for written in runs:
        run = list(written)  # looked ahead into
        following = _next_times(run)
        latest: datetime | None = None  # the latest time written so far
        setter: int | None = None  # which record set it (an index into keyed)
        before: datetime | None = None  # the latest time before that record
        for j, call in enumerate(run):
            ts = call.ts
            if ts is None:
                keyed.append((call, None))  # after the call before it (filled below)
                continue
            if latest is not None and ts < latest:
                behind = (latest - ts).total_seconds()
                if behind <= _flight(call, flights) + SKEW_TOLERANCE:
                    keyed.append((call, ts))  # in flight when the record above was written
                    continue
                after = following[j]
                fits = before is None or ts >= before
                if setter is not None and fits and (after is None or after < latest):
                    # it and the next follow the records before the one that set ``latest``:
                    # that one's clock was ahead, and it keeps its place
                    ahead = keyed[setter][0]
                    keyed[setter] = (ahead, ts if before is None else before)
                    skews.append((ahead, -behind))
                    latest = before
                else:
                    skews.append((call, behind))  # a clock behind: it keeps its place
                    keyed.append((call, latest))
                    continue
            setter, before = len(keyed), latest
            latest = ts if latest is None or ts > latest else latest
            keyed.append((call, ts))
        carried: datetime | None = None
        for i in range(len(keyed) - len(run), len(keyed)):
            if keyed[i][1] is None:
                keyed[i] = (keyed[i][0], carried)
            carried = keyed[i][1]
    known = [key for _, key in keyed if key is not None]
    if not known:
        return [call for call, _ in keyed], skews
    floor = min(known)
    order = sorted(range(len(keyed)), key=lambda i: keyed[i][1] or floor)
    return [keyed[i][0] for i in order], skews


def _flight(call: Call, in_flight: dict[int, float]) -> float:
    """Seconds ``call`` was in flight, when known (its reader's note, or ``duration_ms``)."""
    known = in_flight.get(id(call))
    if known is not None:
        return known
    took = call.meta.get("duration_ms")
    if isinstance(took, (int, float)) and not isinstance(took, bool) and 0 <= took < 86_400_000:
        return took / 1000
    return 0.0


def _next_times(run: list[Call]) -> list[datetime | None]:
    """Per call, the time of the next call of ``run`` that has one."""
    out: list[datetime | None] = [None] * len(run)
    upcoming: datetime | None = None
    for j in range(len(run) - 1, -1, -1):
        out[j] = upcoming
        if run[j].ts is not None:
            upcoming = run[j].ts
    return out


def describe_skews(skews: list[tuple[Call, float]]) -> str:
    """One line naming the records whose clock stepped back (the first 20, then a count)."""
    named = [
        f"line {call.line} is {_seconds(abs(off))} {'behind' if off > 0 else 'ahead'}"
        for call, off in skews[:_NAMED]
    ]
    more = f"; and {len(skews) - _NAMED} more" if len(skews) > _NAMED else ""
    return (
        f"{len(skews)} record(s) with a clock out of step with the records written around "
        f"them ({'; '.join(named)}{more}); kept in the order written, not sorted by that "
        "time: check the clock of what wrote the log"
    )


def _seconds(value: float) -> str:
    if value < 120:
        return f"{value:.3g} s"
    if value < 7200:
        return f"{value / 60:.3g} min"
    if value < 172800:
        return f"{value / 3600:.3g} h"
    return f"{value / 86400:,.0f} days"


def order_by_time(calls: list[Call]) -> list[Call]:
    """Sort calls by request time, stably; a call without a time keeps its place."""
    keys: list[datetime | None] = []
    last: datetime | None = None
    for call in calls:
        last = call.ts if call.ts is not None else last
        keys.append(last)
    if all(k is None for k in keys):
        return list(calls)
    floor = min(k for k in keys if k is not None)
    order = sorted(range(len(calls)), key=lambda i: keys[i] or floor)
    return [calls[i] for i in order]


def special(path: Path) -> bool:
    """Whether ``path`` is a FIFO, a device or a socket (through links): never to be read."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def regular(path: Path) -> None:
    """Refuse a file that is not a regular one before it is opened (a reader's backstop).

    A FIFO waits for a writer forever, ``/dev/zero`` never ends: found in a folder (a
    sub-agent's log, a member of a store) they are not read. One named on the command
    line is read once, up to a limit, by :func:`cacheviz.formats.load`.

    Raises
    ------
    TranscriptError
        When ``path`` is a FIFO, a device or a socket.
    """
    if special(path):
        msg = (
            "not a regular file (a pipe or a device: it may never end); cacheviz reads "
            "files found in folders only when they are regular files"
        )
        raise TranscriptError(msg, path=path)


def load_json_document(path: Path) -> object:
    """Parse a whole-file JSON document; a syntax error names its line and column.

    Raises
    ------
    TranscriptError
        When the file is empty, not UTF-8, or not valid JSON.
    """
    regular(path)
    data = path.read_bytes()
    if not data or data.isspace():
        msg = "file is empty; expected a JSON document"
        raise TranscriptError(msg, path=path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        msg = f"not valid UTF-8 at byte {exc.start + 1}; re-save the file as UTF-8"
        raise TranscriptError(msg, path=path, line=line) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} (column {exc.colno}); the file may be truncated"
        raise TranscriptError(msg, path=path, line=exc.lineno) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        msg = f"not valid JSON: {exc}"
        raise TranscriptError(msg, path=path) from None
    except RecursionError:
        msg = "JSON nested too deeply"
        raise TranscriptError(msg, path=path) from None
