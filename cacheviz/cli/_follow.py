"""``cacheviz summary --follow FILE``: a session being written, one line per call as it lands.

Like ``tail -F``: the file is checked for growth every ``poll`` seconds; when it grew,
the complete lines are analysed again (a half-written last line waits for the next
check; a bad line is skipped and named once on stderr) and the calls not printed yet get
their row of ``summary``'s table. Rows are laid out with fixed column widths chosen at
the start, so they line up as they come. Ctrl-C stops cleanly, and the running totals of the
calls read so far (billed, waste, hit ratio: the summary document's figures) are printed.

A file truncated, or replaced by another (a log rotated), is said in one line and
followed again from its start. Only a regular file is followed (a folder or a device
never grows: one line, exit 2), and a line longer than ``CACHEVIZ_MAX_LINE_MB`` (64 MiB,
:data:`cacheviz._limits.LINE`) is named and skipped unread.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from cacheviz._limits import LINE
from cacheviz.cli._table import Column, fit_columns, format_row, width_of
from cacheviz.errors import CacheVizError, CacheVizWarning

# a row as wide as a call's row usually gets: sets the fixed widths of the columns
_TEMPLATE = [
    "9999",
    "sub-agent general-purpose",
    "999,999",
    "999,999",
    "999,999",
    "100%",
    "999,999",
    "999,999",
    "999,999",
    "$99.9999",
    "✗ volatile_value at system/system[1] (−99,999 tok, $0.0000)",
]


@contextmanager
def _whole() -> Iterator[None]:
    """Let a Ctrl-C that arrives while a call's line is written and counted land after.

    A process-directed SIGINT may be taken by any thread (polars and tiktoken run their
    own), so blocking it in this one would not do: the handler defers it instead, and the
    interrupt is raised once the block is done. Outside the main thread: nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[object] = []
    previous = signal.signal(signal.SIGINT, lambda *args: pending.append(args))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt


def _ends_a_line(path: Path, size: int) -> bool:
    """Whether the file's last byte ends a line (a line being written waits)."""
    try:
        with path.open("rb") as handle:
            handle.seek(size - 1)
            return handle.read(1) == b"\n"
    except OSError:
        return False


def _identity(call: Any) -> tuple[Any, ...]:
    """A call as it stays from one reading of the growing file to the next."""
    return (call.thread_hint, call.parent_hint, call.line, call.ts, call.model)


def _fresh(calls: list[Any], seen: set[tuple[Any, ...]]) -> list[int]:
    """The positions of the calls not printed yet, in call order.

    A call is known by where it was written, not by its position: a call that arrives
    late and is ordered before calls already printed (a request still in flight when
    they were written) gets its row once, and no printed row comes again.
    """
    return [i for i, call in enumerate(calls) if _identity(call) not in seen]


def _read(load: Callable[..., Any], path: Path, fmt: str | None) -> Any:
    """The session so far (bad lines skipped, said once by the caller), or ``None``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheVizWarning)
            return load(path, fmt, errors="skip")
    except (CacheVizError, OSError):
        return None  # nothing complete yet, or the file went away for a moment


def follow(
    path: str | Path,
    out: TextIO,
    *,
    columns: tuple[Column, ...],
    row_of: Callable[[dict], list[str]],
    fmt: str | None = None,
    thread: str = "auto",
    encoding: str | None = None,
    poll: float = 0.5,
    stop: Callable[[], bool] | None = None,
    totals_of: Callable[[dict], str] | None = None,
) -> int:
    """Print each call of ``path`` as it is written; return how many were printed.

    Parameters
    ----------
    path
        The transcript being written (it may not exist yet).
    out
        Where the rows go.
    columns, row_of
        The table's columns, and the cells of one call of the summary document.
    fmt, thread, encoding
        As ``--format``, ``--thread``, ``--encoding``.
    poll
        Seconds between checks of the file's size.
    stop
        Called after each check; following ends when it returns True (default: never,
        until Ctrl-C).
    totals_of
        The line of running totals for the summary document of the calls read so far,
        written to ``out`` when following ends (Ctrl-C or ``stop``); None: no totals.
    """
    from cacheviz.formats import load
    from cacheviz.formats._lines import MAX_LINE

    source = Path(path)
    _regular_or_none(source)
    token = MAX_LINE.set(int(LINE.value()))  # a longer line is skipped unread
    try:
        return _follow(
            source, out, columns, row_of, fmt, thread, encoding, poll, stop, totals_of, load
        )
    finally:
        MAX_LINE.reset(token)


def _regular_or_none(source: Path) -> os.stat_result | None:
    """The file's ``stat`` (None: not there yet); a folder, a device or a pipe is refused.

    Raises
    ------
    CacheVizError
        One line: ``--follow`` waits for a regular file to grow, and a folder or
        ``/dev/zero`` never does (a pipe is read with ``summary`` itself).
    """
    try:
        info = source.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        msg = f"{source}: can't follow it ({exc.strerror or exc}); check the path"
        raise CacheVizError(msg) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a device or a pipe"
        msg = (
            f"{source}: --follow reads a file as it grows, and this is {kind}; give the "
            "transcript file (to read a pipe once, leave out --follow)"
        )
        raise CacheVizError(msg)
    return info


def _follow(
    source: Path,
    out: TextIO,
    columns: tuple[Column, ...],
    row_of: Callable[[dict], list[str]],
    fmt: str | None,
    thread: str,
    encoding: str | None,
    poll: float,
    stop: Callable[[], bool] | None,
    totals_of: Callable[[dict], str] | None,
    load: Callable[..., Any],
) -> int:
    shown, sizes = fit_columns(columns, [_TEMPLATE], width_of(out))
    out.write("\n".join(format_row(columns, shown, sizes, [c.header for c in columns])) + "\n")
    out.flush()
    printed = skipped = 0
    seen: set[tuple[Any, ...]] = set()  # the calls printed, by where they were written
    size = -1
    identity: tuple[int, int] | None = None  # the file's device and inode
    doc: dict | None = None
    sys.stderr.write(f"cacheviz: following {source} (Ctrl-C stops)\n")
    try:
        while True:
            info = _regular_or_none(source)
            current = info.st_size if info is not None else -1
            now = None if info is None else (info.st_dev, info.st_ino)
            if info is not None and identity is not None and (now != identity or current < size):
                what = "replaced by a new file" if now != identity else "truncated"
                sys.stderr.write(
                    f"cacheviz: {source} was {what}; following it again from its start\n"
                )
                printed = skipped = 0
                seen.clear()
                size = -1
                doc = None
            if info is not None:
                identity = now
            if current != size and current > 0 and _ends_a_line(source, current):
                size = current
                session = _read(load, source, fmt)
                if session is not None and len(session.skipped) > skipped:
                    for bad in session.skipped[skipped:]:
                        sys.stderr.write(f"cacheviz: skipped line {bad.line}: {bad.reason}\n")
                    skipped = len(session.skipped)
                fresh = [] if session is None else _fresh(session.calls, seen)
                if session is not None and fresh:
                    doc = session.analyze(thread=thread, encoding=encoding).summary()
                    for i in fresh:  # a late call ordered before printed ones still prints
                        lines = format_row(columns, shown, sizes, row_of(doc["calls"][i]))
                        with _whole():  # a Ctrl-C lands before or after a line and its count
                            out.write("\n".join(lines) + "\n")
                            out.flush()
                            seen.add(_identity(session.calls[i]))
                            printed += 1
            if stop is not None and stop():
                break
            time.sleep(poll)
    except KeyboardInterrupt:
        sys.stderr.write(f"\ncacheviz: stopped after {printed} call(s)\n")
    if totals_of is not None:
        text = totals_of(doc) if doc is not None else "totals: no calls read"
        out.write(text + "\n")
        out.flush()
    return printed
