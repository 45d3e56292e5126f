"""What hostile input may cost at most: the limits every reader shares, in one place.

A transcript is data from elsewhere: a compressed body can inflate a thousandfold, a
reference can be expanded again and again, an SQL view can recurse forever, a FIFO or
``/dev/zero`` never ends. Each limit below is checked where the cost arises, for every
reader alike, and passing it is one line naming the file, the limit and how to raise it
(:class:`LimitError`). Every default is documented in ``docs/formats.md`` ("Limits"),
and each can be changed with its environment variable (a number, in the unit shown):

===================  =====================================  ===========================
limit                what it bounds                         variable (default)
===================  =====================================  ===========================
decompressed         one body inflated (gzip, deflate, br)  ``CACHEVIZ_MAX_INFLATE_MB``
                                                            (256)
expansion            bytes references expand to in a file   ``CACHEVIZ_MAX_EXPANSION``
                     (a multiple of the file's size, with   (500) and
                     a floor in MiB)                        ``CACHEVIZ_MIN_EXPANSION_MB``
                                                            (256)
sql seconds          one SQLite read of a store             ``CACHEVIZ_MAX_SQL_SECONDS``
                                                            (120)
sql rows             rows one SQLite query may give         ``CACHEVIZ_MAX_SQL_ROWS``
                                                            (10000000)
stream bytes         stdin, a FIFO or a device given by     ``CACHEVIZ_MAX_STREAM_MB``
                     name (never a regular file)            (1024)
line bytes           one line ``--follow`` reads            ``CACHEVIZ_MAX_LINE_MB``
                                                            (64)
unit seconds         one session of ``cacheviz scan``       ``--timeout`` /
                                                            ``CACHEVIZ_UNIT_TIMEOUT``
                                                            (300)
===================  =====================================  ===========================
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from cacheviz.errors import CacheVizError

MIB = 1 << 20


class LimitError(CacheVizError):
    """Reading a file would pass one of the limits; the message names both.

    Not a ``ValueError``: a reader that skips bad records does not skip this one, the
    file as a whole is refused.
    """


@dataclass(frozen=True)
class Limit:
    """One limit: its default, the environment variable that changes it, its unit."""

    name: str
    variable: str
    default: float
    unit: float = 1  # the variable's unit in the limit's own (MiB -> bytes: MIB)

    def value(self) -> float:
        """The limit now (the variable is read each time: a test or a user may set it)."""
        text = os.environ.get(self.variable)
        if text:
            try:
                number = float(text)
            except ValueError:
                number = -1.0
            if number > 0:
                return number * self.unit
        return self.default * self.unit

    def shown(self) -> str:
        """The limit as a person reads it, and how to change it."""
        value = self.value()
        amount = f"{value / MIB:g} MiB" if self.unit == MIB else f"{value:g}"
        return f"{self.name} limit of {amount}; raise it with {self.variable}"


INFLATE = Limit("decompressed-size", "CACHEVIZ_MAX_INFLATE_MB", 256, MIB)
EXPANSION = Limit("reference-expansion", "CACHEVIZ_MAX_EXPANSION", 500)
EXPANSION_FLOOR = Limit("reference-expansion", "CACHEVIZ_MIN_EXPANSION_MB", 256, MIB)
SQL_SECONDS = Limit("SQL time", "CACHEVIZ_MAX_SQL_SECONDS", 120)
SQL_ROWS = Limit("SQL rows", "CACHEVIZ_MAX_SQL_ROWS", 10_000_000)
STREAM = Limit("stream size", "CACHEVIZ_MAX_STREAM_MB", 1024, MIB)
LINE = Limit("line length", "CACHEVIZ_MAX_LINE_MB", 64, MIB)
UNIT_SECONDS = Limit("time per session", "CACHEVIZ_UNIT_TIMEOUT", 300)


def inflate(data: bytes, wbits: int, *, where: str) -> bytes:
    """``data`` decompressed (zlib ``wbits``: 31 gzip, 15 zlib, -15 raw deflate), bounded.

    Inflated a piece at a time (``decompressobj`` with ``max_length``), so a bomb stops
    at the limit without the memory of its whole output.

    Raises
    ------
    LimitError
        When the output would pass :data:`INFLATE` (``where`` names the body).
    zlib.error
        When ``data`` is not that compression.
    """
    limit = int(INFLATE.value())
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    pending = data
    while True:
        out += inflater.decompress(pending, limit + 1 - len(out))
        if len(out) > limit:
            msg = f"{where} decompresses to more than the {INFLATE.shown()}"
            raise LimitError(msg)
        pending = inflater.unconsumed_tail
        if not pending:
            break
    out += inflater.flush()
    if len(out) > limit:
        msg = f"{where} decompresses to more than the {INFLATE.shown()}"
        raise LimitError(msg)
    if not inflater.eof and wbits != -15:
        raise zlib.error("incomplete or truncated stream")
    return bytes(out)


class Inflater:
    """A streamed body inflated chunk by chunk, never past :data:`INFLATE` in all."""

    def __init__(self, wbits: int, *, where: str) -> None:
        self.where = where
        self._inflater = zlib.decompressobj(wbits)
        self._limit = int(INFLATE.value())
        self.size = 0

    def feed(self, chunk: bytes) -> bytes:
        """The bytes ``chunk`` inflates to.

        Raises
        ------
        LimitError
            When the body so far passes the limit.
        """
        out = self._inflater.decompress(chunk, self._limit + 1 - self.size)
        self.size += len(out)
        if self.size > self._limit or self._inflater.unconsumed_tail:
            msg = f"{self.where} decompresses to more than the {INFLATE.shown()}"
            raise LimitError(msg)
        return out

    def flush(self) -> bytes:
        """What is left at the end."""
        out = self._inflater.flush()
        self.size += len(out)
        if self.size > self._limit:
            msg = f"{self.where} decompresses to more than the {INFLATE.shown()}"
            raise LimitError(msg)
        return out


class Expansion:
    """A file's budget of bytes expanded from references (blobs, objects, deltas).

    ``max(floor, multiple * the file's size)``: a file may expand to what its requests
    resend (a long conversation resends its history), not without end.
    """

    def __init__(self, path: Path, size: int | None = None) -> None:
        self.path = path
        if size is None:
            size = _size(path)
        self.limit = max(EXPANSION_FLOOR.value(), EXPANSION.value() * size)
        self.spent = 0

    def spend(self, n: int) -> None:
        """Count ``n`` more bytes expanded.

        Raises
        ------
        LimitError
            When the file's references have expanded past the budget.
        """
        self.spent += n
        if self.spent > self.limit:
            msg = (
                f"{self.path}: its references expand to more than {self.limit / MIB:,.0f} MiB "
                f"(the reference-expansion limit: {EXPANSION.value():g} times the file's size, "
                f"at least {EXPANSION_FLOOR.value() / MIB:g} MiB; raise it with "
                f"{EXPANSION.variable} or {EXPANSION_FLOOR.variable})"
            )
            raise LimitError(msg)


def _size(path: Path) -> int:
    """The bytes of ``path``: a file's size, a folder's files' sizes added up."""
    try:
        if not path.is_dir():
            return path.stat().st_size
        total = 0
        for root, _dirs, files in os.walk(path):
            for name in files:
                try:
                    total += (Path(root) / name).lstat().st_size
                except OSError:
                    continue
        return total
    except OSError:
        return 0
