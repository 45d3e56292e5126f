"""The per-unit function of a scan: load, analyse, and flatten one session into rows.

It runs in worker processes (or on any ``concurrent.futures.Executor``), so its input
and output are plain picklable values: a :class:`~cacheviz.scanning._walk.Unit` in, a
:class:`UnitResult` of rows as plain lists out (:func:`table` builds the frames). A
batch (:func:`run_batch`) sends its units' rows back as one Arrow IPC stream per table
(:class:`Batch`), which the scanning process reads and concatenates with polars without
making a Python object per value. Nothing here depends on other units; de-duplication
across files happens afterwards (:mod:`cacheviz.scanning._scanner`).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import signal
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl

from cacheviz import _schema
from cacheviz._limits import UNIT_SECONDS
from cacheviz.analysis import AnalysisColumns, analyze_columns
from cacheviz.errors import (
    CacheVizError,
    CacheVizWarning,
    EmptyTranscriptError,
    UnknownFormatError,
)
from cacheviz.formats import READERS, detect
from cacheviz.formats._lines import READ_TAP, Hasher, ReadTap
from cacheviz.formats._replays import REPLAYED
from cacheviz.model import OPAQUE, Session, paused_gc
from cacheviz.money.pricing import PriceBook, RateCache
from cacheviz.scanning._title import session_title
from cacheviz.scanning._walk import Unit, shown

_HASH_CHUNK = 1 << 20
Columns = dict[str, list[Any]]
"""A table as plain lists, one per column (built into one frame per scan, not per unit)."""


@dataclass(slots=True)
class UnitResult:
    """What one unit gave: its rows, or why it gave none."""

    path: str
    status: str  # "ok" | "empty" | "failed" | "unknown" | "unchanged" (hash as cached)
    content_hash: str
    format: str | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    calls: Columns | None = None  # the unit's rows of each table (see :func:`table`)
    drifts: Columns | None = None
    misses: Columns | None = None
    replays: int = 0  # responses the loader dropped as replays of others


def _hasher() -> Hasher:
    return hashlib.blake2b(digest_size=16)


def content_hash(members: tuple[Path, ...]) -> str:
    """BLAKE2b over the bytes of every member file (names included), hex."""
    digest = _hasher()
    for path in members:
        if path != members[0]:  # a copy of a session under another name is the same session
            digest.update(os.fsencode(path.name) + b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


class _OutOfTime(BaseException):
    """Raised by the alarm in the unit's thread when its time is up."""


@contextmanager
def _time_limit(seconds: float | None, expired: list[bool]) -> Iterator[None]:
    """Stop the block after ``seconds`` (``SIGALRM``; ``expired[0]`` then says so).

    The alarm raises in the block between two Python steps, and inside a query through
    SQLite's progress handler; a single long step of C code ends first. Only where there
    is an interval timer and in the main thread (a worker process's task, ``cacheviz
    scan`` serially); elsewhere the block runs without a limit.
    """
    usable = (
        seconds is not None
        and seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def ring(_signum: int, _frame: Any) -> None:
        expired[0] = True
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, float(seconds or 0))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def unit_timeout(seconds: float | None) -> float:
    """The time a unit may take: ``seconds``, else :data:`cacheviz._limits.UNIT_SECONDS`."""
    return UNIT_SECONDS.value() if seconds is None else seconds


def run_unit(
    unit: Unit,
    known_hash: str | None = None,
    prices: str | None = None,
    rates: dict[str, RateCache] | None = None,
    timeout: float | None = None,
    sizes: str = "tokens",
) -> UnitResult:
    """Load and analyse one unit within ``timeout`` seconds (see :func:`_run_unit`).

    Past the time (``timeout``, default ``CACHEVIZ_UNIT_TIMEOUT`` or 300 s; 0: none) the
    unit is given up and marked failed, its error naming the file and the limit.
    ``sizes``: how block sizes are found (:func:`cacheviz.analysis.prefix_lists`).
    """
    seconds = unit_timeout(timeout)
    expired = [False]
    try:
        with _time_limit(seconds, expired):
            result = _run_unit(unit, known_hash, prices, rates, sizes)
    except _OutOfTime:
        result = UnitResult(shown(unit.path), "failed", "")
    if expired[0]:  # also when the alarm ended in an error (an interrupted query)
        result.status = "failed"
        result.calls = result.drifts = result.misses = None
        result.error = (
            f"{shown(unit.path)}: not analysed: it took longer than {seconds:g} s, the time "
            "a scan gives one session (--timeout, CACHEVIZ_UNIT_TIMEOUT); the other "
            "files were scanned"
        )
    return result


def _run_unit(
    unit: Unit,
    known_hash: str | None = None,
    prices: str | None = None,
    rates: dict[str, RateCache] | None = None,
    sizes: str = "tokens",
) -> UnitResult:
    """Load and analyse one unit; never raises for bad input (it is reported instead).

    Parameters
    ----------
    unit
        The session to read.
    known_hash
        The content hash the scan cache holds for this path; when the files still hash to
        it, nothing is analysed (``status="unchanged"``).
    prices
        A user price file, as for ``--prices``.
    rates
        The rates resolved for earlier units with the same ``prices`` (a dict the
        caller keeps for a batch; filled in here): each price period is resolved once.
    """
    tap = None
    if known_hash is None and len(unit.members) == 1:
        # nothing to compare with before reading: the reader's own read feeds the hash
        tap = ReadTap(unit.members[0], _hasher())
        digest = ""
    else:
        try:
            digest = content_hash(unit.members)
        except OSError as exc:
            return UnitResult(
                shown(unit.path), "failed", "", error=f"{shown(unit.path)}: {exc.strerror}"
            )
        if known_hash is not None and digest == known_hash:
            return UnitResult(shown(unit.path), "unchanged", digest)
    token = READ_TAP.set(tap)
    try:
        return _analysed(unit, digest, tap, prices, rates, sizes)
    finally:
        READ_TAP.reset(token)


def _analysed(
    unit: Unit,
    digest: str,
    tap: ReadTap | None,
    prices: str | None,
    rates: dict[str, RateCache] | None,
    sizes: str = "tokens",
) -> UnitResult:
    """:func:`run_unit` past the hash: ``digest`` is ``""`` when ``tap`` is to give it."""

    def hashed() -> str:
        if tap is not None and tap.complete():
            return tap.hasher.hexdigest()
        try:
            return digest or content_hash(unit.members)
        except OSError:
            return ""

    try:
        fmt = detect(unit.path)
    except UnknownFormatError:
        return UnitResult(shown(unit.path), "unknown", hashed())
    except OSError as exc:
        if tap is not None:  # not hashed first: the error the hash would have met
            return UnitResult(
                shown(unit.path), "failed", "", error=f"{shown(unit.path)}: {exc.strerror}"
            )
        return UnitResult(shown(unit.path), "failed", hashed(), error=_one_line(exc, unit.path))
    except (CacheVizError, ValueError) as exc:
        return UnitResult(shown(unit.path), "failed", hashed(), error=_one_line(exc, unit.path))
    # the collector paused as for cacheviz.load and Session.analyze (model.paused_gc)
    with warnings.catch_warnings(record=True) as caught, paused_gc():
        warnings.simplefilter("always", CacheVizWarning)
        try:
            session = READERS[fmt].read(unit.path, errors="raise")
            analysis = analyze_columns(session, prices=_book(prices), rates=rates, sizes=sizes)
            if fmt == "codex":  # sessions/YYYY/MM/DD says nothing: the folder it ran in
                unit = replace(unit, project=_codex_project(unit.path) or unit.project)
            calls, drifts, misses = _rows(unit, fmt, session, analysis)
        except EmptyTranscriptError as exc:  # a session opened and left: not a failure
            return UnitResult(
                shown(unit.path), "empty", hashed(), format=fmt, error=_one_line(exc, unit.path)
            )
        except (CacheVizError, OSError, ValueError, RecursionError) as exc:
            return UnitResult(
                shown(unit.path), "failed", hashed(), format=fmt, error=_one_line(exc, unit.path)
            )
        except Exception as exc:  # a bug must not stop a scan of thousands of files
            text = (str(exc).splitlines() or [""])[0]
            error = (
                f"{shown(unit.path)}: internal error ({type(exc).__name__}: {text}); "
                "please report it"
            )
            return UnitResult(shown(unit.path), "failed", hashed(), format=fmt, error=error)
    digest = hashed()
    notes = [
        shown(str(w.message).splitlines()[0])
        for w in caught
        if issubclass(w.category, CacheVizWarning)
    ]
    replays = session.ignored.get(REPLAYED, 0)
    return UnitResult(
        shown(unit.path), "ok", digest, fmt, None, notes, calls, drifts, misses, replays
    )


def _book(prices: str | None) -> PriceBook:
    """One price book per price file (as it is now) and process: parsed once, not per file."""
    if prices is None:
        return _book_of(None, 0, 0)
    try:
        stat = Path(prices).stat()
    except OSError:
        return PriceBook(prices)  # raises the one-line error of a missing file
    return _book_of(prices, stat.st_size, stat.st_mtime_ns)


@cache
def _book_of(prices: str | None, size: int, mtime_ns: int) -> PriceBook:
    del size, mtime_ns  # part of the cache key only
    return PriceBook(prices)


@dataclass(slots=True)
class Batch:
    """What a batch of units gave: each unit's result, and all their rows as Arrow IPC.

    ``results`` are in the batch's order, without rows (their ``calls``, ``drifts`` and
    ``misses`` are ``None``); ``tables`` holds, per table, the rows of every unit of the
    batch in that order, as the bytes of an Arrow IPC stream of the scan's schema
    (:func:`frames` reads them back).
    """

    results: list[UnitResult]
    tables: dict[str, bytes]


def run_batch(
    units: list[Unit],
    known: list[str | None],
    prices: str | None = None,
    timeout: float | None = None,
    sizes: str = "tokens",
) -> Batch:
    """:func:`run_unit` over a batch (one task per batch keeps process overhead low).

    The rows go back as one Arrow IPC stream per table (:class:`Batch`): built here, in the
    worker, they cost the scanning process a read instead of a Python object per value
    to unpickle and convert.
    """
    rates: dict[str, RateCache] = {}  # the batch's sessions share one price book
    pairs = zip(units, known, strict=True)
    return packed([run_unit(unit, k, prices, rates, timeout, sizes) for unit, k in pairs])


def packed(results: list[UnitResult]) -> Batch:
    """``results`` with their rows moved into one Arrow IPC stream per table, in their order."""
    tables = {}
    for name in _SCHEMAS:
        rows = table(name, [part for r in results if (part := getattr(r, name)) is not None])
        buffer = io.BytesIO()  # the stream format: its writer holds less than the file's
        rows.write_ipc_stream(buffer, compression="uncompressed")
        tables[name] = buffer.getvalue()
    for result in results:
        result.calls = result.drifts = result.misses = None
    return Batch(results, tables)


def frames(batches: list[Batch]) -> dict[str, pl.DataFrame]:
    """The scan's tables of these batches' rows, each one frame of one chunk, by path.

    Rows keep their order within a unit (a stable sort on the path column, which the
    units of a scan do not share).
    """
    out = {}
    for name, schema in _SCHEMAS.items():
        parts = [pl.read_ipc_stream(batch.tables[name]) for batch in batches]
        rows = pl.concat(parts, rechunk=False) if parts else pl.DataFrame(schema=schema)
        out[name] = rows.sort("path", maintain_order=True).rechunk()
    return out


_CWD = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)+)"')


def _codex_project(path: Path) -> str | None:
    """The last folder of the ``cwd`` a Codex rollout's ``session_meta`` records."""
    with path.open("rb") as handle:
        found = _CWD.search(handle.read(1 << 16))
    if found is None:
        return None
    cwd = found.group(1).decode("utf-8", "replace").replace("\\\\", "/").rstrip("/")
    return cwd.rsplit("/", 1)[-1] or None


def _one_line(exc: BaseException, path: Path) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    text = text.replace(" (or pass --errors skip / errors='skip')", "")  # scan has no such option
    return shown(text if str(path) in text else f"{path}: {text}")


_OF_THE_UNIT = {"path", "session", "format", "project", "usage_only"}
_FROM_META = {"response_id", "reported_cost_usd", "title"}
_FROM_ANALYSIS = tuple(n for n in _schema.SCAN_CALLS if n not in _OF_THE_UNIT | _FROM_META)
_SCHEMAS = {
    "calls": _schema.SCAN_CALLS,
    "drifts": _schema.SCAN_DRIFTS,
    "misses": _schema.SCAN_MISSES,
}


def _rows(unit: Unit, fmt: str, session: Session, analysis: AnalysisColumns) -> tuple[Columns, ...]:
    """The unit's calls, drifts and misses as columns of the scan's tables.

    Plain lists: a polars frame per unit costs more to build, pickle and concatenate
    than the rows of a small session (the scanner builds one frame of all of them), so
    the analysis is taken as lists too (:func:`~cacheviz.analysis.analyze_columns`).
    """
    frame = analysis.calls
    calls = session.calls  # row i of the calls columns is session.calls[i]
    opaque = {h for h, c in session.contents.items() if c.kind == OPAQUE}
    path = shown(unit.path)
    metas = [c.meta for c in calls]
    n = len(calls)
    out: Columns = {name: list(frame[name]) for name in _FROM_ANALYSIS}
    logged = [not any(h in opaque for h in c.hashes[: c.message_start]) for c in calls]
    # Whale logs a fingerprint of system + tools; elsewhere the hash, when they were logged
    out["prefix_hash"] = [
        m.get("prefix_fingerprint")
        if m.get("prefix_fingerprint") is not None
        else (h if known else None)
        for m, h, known in zip(metas, out["prefix_hash"], logged, strict=True)
    ]
    usage_only = bool(getattr(READERS[fmt], "USAGE_ONLY", False))
    keys = [f"{path}#{m['session']}" if m.get("session") else path for m in metas]
    out |= {
        "path": [path] * n,
        "session": keys,
        "format": [fmt] * n,
        "project": [unit.project] * n,
        "usage_only": [usage_only] * n,
        "response_id": [m.get("response_id") for m in metas],
        "reported_cost_usd": [m.get("reported_cost_usd") for m in metas],
        "title": _titles(session, keys, list(frame["thread"])),
    }
    total = analysis.costs.billed_usd
    if session.session_usage and n and total is not None:
        # usage reported for the session only (Copilot CLI): the scan adds up its calls, so
        # what the session's figure holds beyond its calls' own billed costs (a
        # compaction's) is put on its last call, and no per-call waste is priced on the
        # rebuilt requests (their system prompt and tools are not in the log)
        billed = list(out["billed_usd"])
        rest = total - sum(b for b in billed if b is not None)
        billed[-1] = (billed[-1] or 0.0) + rest
        out["billed_usd"] = billed
        out["waste_usd"] = [None] * n
    drifts = _own(path, analysis.drifts, _schema.SCAN_DRIFTS)
    return out, drifts, _own(path, analysis.costs.misses, _schema.SCAN_MISSES)


def _titles(session: Session, keys: list[str], threads: list[str]) -> list[str | None]:
    """Each session's title on its first row (null on the others): its main thread's."""
    first: dict[str, int] = {}
    main: dict[str, int] = {}
    for i, (key, thread) in enumerate(zip(keys, threads, strict=True)):
        first.setdefault(key, i)
        if thread == "main":
            main.setdefault(key, i)
    titles: list[str | None] = [None] * len(keys)
    for key, i in first.items():
        titles[i] = session_title(session, session.calls[main.get(key, i)])
    return titles


def _own(path: str, columns: Columns, schema: dict[str, Any]) -> Columns:
    """The scan table's columns of one analysis table, with the unit's path."""
    rows = len(columns["call"])
    return {"path": [path] * rows, **{n: list(columns[n]) for n in schema if n != "path"}}


def table(name: str, parts: list[Columns]) -> pl.DataFrame:
    """One of the scan's tables (``calls``, ``drifts``, ``misses``) from units' columns.

    A time column of aware datetimes goes in as microseconds since the epoch, cast to its
    dtype: the same values, without polars' conversion of each datetime object (which
    also holds ~16 MB in every process that first does it).
    """
    schema = _SCHEMAS[name]
    if not parts:
        return pl.DataFrame(schema=schema)
    columns: dict[str, list[Any]] = {c: [v for part in parts for v in part[c]] for c in schema}
    casts = {}
    for column, dtype in schema.items():
        if isinstance(dtype, pl.Datetime) and dtype.time_unit == "us":
            micros = _micros(columns[column])
            if micros is not None:
                columns[column], casts[column] = micros, dtype
    built = _schema.frame({c: pl.Int64 if c in casts else t for c, t in schema.items()}, columns)
    for column, dtype in casts.items():  # eager, on the series: no query engine started
        built.replace_column(built.get_column_index(column), built[column].cast(dtype))
    return built


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _micros(values: list[Any]) -> list[int | None] | None:
    """Aware datetimes (or None) as microseconds since the epoch; None if any is not one."""
    out: list[int | None] = []
    for value in values:
        if value is None:
            out.append(None)
        elif type(value) is datetime and value.tzinfo is not None:
            out.append((value - _EPOCH) // _MICROSECOND)
        else:
            return None
    return out
