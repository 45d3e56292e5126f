"""Follow a growing request log: per appended call, work proportional to the new calls.

:class:`LiveLog` reads a cacheviz request log (a file, or a recorder's lines in memory)
as it grows and keeps its :class:`~cacheviz.analysis.Analysis` current. Each
:meth:`LiveLog.update` reads only the bytes written since the last one (complete lines:
a line still being written is left for the next update), tokenizes only the new blocks,
and extends every per-call result - threads, prefix line, drifts, calibration, the own
provider's simulation, billed cost, drift costs, misses - by the new calls. The result is
the same, column for column, as :func:`cacheviz.analysis.analyze` of the same lines
(``tests/core/test_incremental.py`` checks it after every append).

A later call can change an earlier call's row only through a few session-wide values.
Each is recomputed per update, cheaply, and when one changed for the calls before, the
per-call results are recomputed from the first call (``LiveLog.rebuilds`` counts it):

* the names of the threads (``main``, ``sub-agent …``, ``side call …``) and their tree
  (:func:`cacheviz.prefix._thread.name_threads`: a session-wide choice of the main thread);
* the TTL of a thread's first write (:func:`cacheviz.prefix._ttl.thread_ttls`), which its
  calls before that write take (:func:`cacheviz.prefix._ttl.entry_ttls`) and the misses,
  the simulators and the idle marks read;
* the models that show no caching (:class:`cacheviz.money._costs.CacheActivity`): no miss
  for their calls, until one of them reads or writes;
* the session's median token rate, when a call without reported usage was calibrated
  with it (:mod:`cacheviz.prefix._calibrate`);
* the set of providers (one simulation per provider of the session).

The whole log is read again when the new lines do not simply follow the old ones: a call
sent before an already logged one (the log is ordered by request time), or a file that
shrank or was replaced. A session with unlogged-prefix blocks (sized from usage across
the session) is analysed in full from the calls read; a log in another format than the
cacheviz request log is loaded and analysed in full when it changed (``incremental`` is
then false).

The cost columns are extended by :mod:`cacheviz.live._costs`; each provider's replay is a
:class:`~cacheviz.live._sim_stream.SimulationStream` (also the inspector's target and its
comparison).
"""

from __future__ import annotations

import bisect
import dataclasses
import warnings
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from cacheviz import _schema, analysis
from cacheviz.analysis import Analysis, block_offsets, call_to_provider_tokens
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import native
from cacheviz.formats._lines import LineFilter, LineReader, call_order
from cacheviz.live._costs import costs_from
from cacheviz.live._sim_stream import SimulationStream, append_rows
from cacheviz.model import OPAQUE, Call, Session
from cacheviz.money._costs import CALL_COSTS, CacheActivity, MissState, provider_key
from cacheviz.money._simulate import SimCallWalk
from cacheviz.money.pricing import PriceBook, RateCache
from cacheviz.prefix._calibrate import (
    Calibration,
    calibrate_call,
    map_position,
    median_rate,
    reported_rate,
)
from cacheviz.prefix._namespace import keyed_params
from cacheviz.prefix._thread import ThreadWalk
from cacheviz.prefix._ttl import ThreadTTLs
from cacheviz.providers._base import SimCall
from cacheviz.request._blocks import BlockStore
from cacheviz.request._tokens import TokenCache, encoding_for_model


@dataclasses.dataclass
class _Globals:
    """The session-wide values earlier calls' rows depend on (module docstring)."""

    renamed: dict[str, str]
    tree: dict[str, str | None]
    ttls: dict[str, int | None]
    default_rate: float
    keys: tuple[str, ...]
    uncached: frozenset[str] = frozenset()


class LiveLog:
    """A cacheviz request log followed as it grows; :attr:`analysis` is kept current.

    Parameters
    ----------
    source
        The log file, or a function returning a recorder's lines (memory mode; each a
        complete line).
    errors
        ``"skip"`` (default: a bad line is kept in ``session.skipped``) or ``"raise"``.
    """

    def __init__(
        self, source: str | Path | Callable[[], list[str]], *, errors: str = "skip"
    ) -> None:
        self.source = source
        self.errors = errors
        self.path = Path(source) if isinstance(source, str | Path) else None
        self.rebuilds = 0  # per-call results recomputed from the first call
        self.reloads = 0  # the whole log read again
        self.analysis: Analysis | None = None
        self.incremental = True  # False: the last analysis was a full load (another format)
        self.prices = PriceBook()
        self._format: str | None = None
        self._full_stamp: tuple[int, int, int] | None = None
        self._reset_all()

    # -- reading -------------------------------------------------------------------------

    def _reset_all(self) -> None:
        self._offset = 0  # bytes (file) or lines (memory) consumed
        self._lineno = 0
        self._identity: tuple[int, int] | None = None
        self.reader = LineReader(self.path or Path("recording.jsonl"), errors=self.errors)
        self._kept = LineFilter(self.reader)  # which lines are read (whitespace-only wait)
        self.store = BlockStore()
        self._refs: list[Any] = []
        self.calls: list[Call] = []
        self._opaque = False
        self._max_key: datetime | None = None
        self._last_key: datetime | None = None
        self._reset_threads()
        self._reset_calls()

    def _new_lines(self) -> list[tuple[int, str]] | None:
        """The complete lines written since the last update (``None``: read it all again)."""
        if self.path is None:
            assert callable(self.source)
            lines = self.source()
            if len(lines) < self._offset:
                return None
            new = lines[self._offset :]
            self._offset = len(lines)
            first = self._lineno + 1
            self._lineno += len(new)
            return list(
                self._kept.texts((n, text.encode("utf-8")) for n, text in enumerate(new, first))
            )
        try:
            with self.path.open("rb") as handle:
                stat = _identity(handle)
                if self._identity is not None and stat[0] != self._identity[0]:
                    return None  # another file under the same name
                handle.seek(0, 2)
                if handle.tell() < self._offset:
                    return None  # the file shrank: rewritten
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return []
        self._identity = stat
        end = data.rfind(b"\n")
        if end < 0:
            return []  # nothing complete yet: a line being written waits for its newline
        data = data[: end + 1]
        self._offset += len(data)
        view = memoryview(data)

        def complete() -> Iterator[tuple[int, memoryview]]:
            start = 0
            while start < len(data):
                stop = data.find(b"\n", start)
                self._lineno += 1
                yield self._lineno, view[start:stop]
                start = stop + 1

        return list(self._kept.texts(complete()))

    def _parse(self, lines: list[tuple[int, str]], *, check: bool = True) -> list[Call] | None:
        """The calls of ``lines``; ``None`` when one goes before a logged call (``check``)."""
        new = native.calls_from_lines(self.reader, lines, self._refs, self.store)
        # the loader keeps the order written unless a call's time steps back (a call in
        # flight, or a clock off: formats._lines.call_order): any step back reads it again
        last, latest = self._last_key, self._max_key
        for call in new:
            key = call.ts if call.ts is not None else last
            if check and key is not None and latest is not None and key < latest:
                return None
            last = key
            if key is not None and (latest is None or key > latest):
                latest = key
        self._last_key, self._max_key = last, latest
        return new

    def _reload(self) -> list[Call]:
        """Read the whole log again; every call is new (in the loader's order)."""
        self.reloads += 1
        self._reset_all()
        new = self._parse(self._new_lines() or [], check=False) or []
        return call_order([new], self.reader.in_flight)[0]

    def update(self) -> int:
        """Read what was appended and extend the analysis; the number of new calls.

        Returns ``-1`` when the whole analysis was replaced (the log was read again, or
        a session-wide value changed an earlier call's row).
        """
        if self.path is not None and not self._is_native():
            return self._full()
        lines = self._new_lines()
        replaced = False
        if lines is None:
            new = self._reload()
            replaced = True
        else:
            parsed = self._parse(lines)
            if parsed is None:
                new = self._reload()
                replaced = True
            else:
                new = parsed
        if not new and not replaced:
            if lines and self.analysis is not None and self.incremental:
                self.analysis = self._assemble()  # a bad line: the session's skipped lines
            return 0
        start = len(self.calls)
        if replaced:
            self.rebuilds += 1
        for index, call in enumerate(new, start):
            call.index = index
        self.calls.extend(new)
        if not self.calls:
            self.analysis = None
            return -1 if replaced else 0
        contents = self.store.contents
        if self._opaque or any(contents[h].kind == OPAQUE for c in new for h in c.hashes):
            self._opaque = True  # unlogged-prefix blocks are sized across the session
            self.incremental = False
            self.analysis = self.session().analyze()
            return -1
        rebuilt = self._extend(start)
        self.incremental = True
        self.analysis = self._assemble()
        return -1 if replaced or rebuilt else len(new)

    def _is_native(self) -> bool:
        """Whether the log is a cacheviz request log (decided at its first complete line)."""
        from cacheviz.formats import detect

        assert self.path is not None
        if self._format is not None:
            return self._format == native.NAME
        try:
            with self.path.open("rb") as handle:
                head = handle.read(1 << 16)
        except OSError:
            return True
        if b"\n" not in head.lstrip():
            return True  # no complete line yet
        try:
            self._format = detect(self.path)
        except TranscriptError:
            self._format = native.NAME  # not recognised yet: its lines will say why
        return self._format == native.NAME

    def _full(self) -> int:
        """Another format (or unlogged-prefix blocks): load and analyse the whole log."""
        from cacheviz.formats import load

        assert self.path is not None
        try:
            info = self.path.stat()
        except OSError:
            return 0
        stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
        if stamp == self._full_stamp and not self.incremental:
            return 0
        self._full_stamp = stamp
        self.reloads += 1
        self.incremental = False
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheVizWarning)  # kept in session.skipped
                session = load(self.path, errors="skip")
        except TranscriptError:
            self.analysis = None
            return 0
        self.analysis = session.analyze()
        return -1

    def session(self) -> Session:
        """The calls read so far, as the loader gives them."""
        reader = self.reader
        skipped = list(reader.skipped)
        return Session(
            self.path,
            native.NAME,
            list(self.calls),
            self.store.contents,
            self.store.blocks,
            skipped,
            reader.ignored,
        )

    # -- threads (sequential, then named session-wide) -----------------------------------

    def _reset_threads(self) -> None:
        self.caches: dict[str, TokenCache] = {}
        self.call_cache: list[TokenCache] = []
        self.exact: list[bool] = []
        self.local: list[list[int]] = []
        self.raw: list[str] = []
        self._threads = ThreadWalk(contents=self.store.contents)
        self._ttls = ThreadTTLs()
        self._activity = CacheActivity()
        self._key_counts: dict[str, int] = {}  # calls per provider key, first seen first
        self._rates: list[float] = []  # sorted reported/local rates (calibration's median)

    def _thread_step(self, i: int) -> None:
        """Tokens, offsets and the thread of call ``i`` (:func:`analysis.analyze`)."""
        call = self.calls[i]
        own, is_exact = encoding_for_model(call.model)
        if own not in self.caches:
            self.caches[own] = TokenCache(own, self.store.contents)
        cache = self.caches[own]
        self.call_cache.append(cache)
        self.exact.append(is_exact)
        cache.ensure(call.hashes)
        same = i and self.call_cache[i - 1] is cache
        previous, before = (self.calls[i - 1].hashes, self.local[i - 1]) if same else ((), ())
        self.local.append(block_offsets(call.hashes, cache.length, previous, before))
        name, _ = self._threads.step(
            i, call, self.calls, self.local, lambda j, h: self.call_cache[j][h]
        )
        self.raw.append(name)
        self._ttls.add(call, name)
        self._activity.add(call)

    def _globals(self) -> _Globals:
        renamed, tree = self._threads.named()
        keys = tuple(self._key_counts)
        return _Globals(
            renamed,
            tree,
            self._ttls.ttls(),
            median_rate(self._rates),
            keys,
            self._activity.uncached(),
        )

    # -- per-call results (analysis, calibration, costs) ---------------------------------

    def _reset_calls(self) -> None:
        self._done = 0
        self.g: _Globals | None = None
        self._walk = analysis.CallWalk()
        self._params: list[Any] = []
        self.call_cols: dict[str, list[Any]] = {name: [] for name in _schema.CALLS}
        self.drift_cols: dict[str, list[Any]] = {name: [] for name in _schema.DRIFTS}
        self._drift_of: dict[int, int] = {}
        self.mapped: list[list[int]] = []
        self.basis: list[str] = []
        self.rates: list[float | None] = []
        self._thread_rate: dict[str, float] = {}
        self._used_default = False
        # costs
        self.built: list[SimCall] = []
        self._sims = SimCallWalk()
        self.runs: dict[str, SimulationStream] = {}
        self._billed_sum: float | None = None
        self._unpriced: dict[str, str] = {}
        self._prices_of: dict[str, RateCache] = {}
        self.miss_cols: dict[str, list[Any]] = {name: [] for name in _schema.MISSES}
        self._miss_ns = MissState()
        self.cost_cols: dict[str, list[Any]] = {name: [] for name in CALL_COSTS}
        self._drift_cost: list[float | None] = []
        self._drift_material: list[bool | None] = []
        self._frames: dict[str, pl.DataFrame] = {}
        self._flushed: dict[str, int] = {}

    def _extend(self, start: int) -> bool:
        """Extend the per-call results by calls ``start:``; whether all were recomputed."""
        for i in range(len(self.raw), len(self.calls)):
            self._thread_step(i)
            call = self.calls[i]
            key = provider_key(call.provider)
            if key is not None:
                self._key_counts[key] = self._key_counts.get(key, 0) + 1
            rate = reported_rate(call.usage.input_tokens if call.usage else None, self.local[i][-1])
            if rate is not None:
                bisect.insort(self._rates, rate)
        new = self._globals()
        old = self.g
        rebuild = old is not None and not self._same_for_earlier(old, new)
        if rebuild:
            self.rebuilds += 1
            self._reset_calls()
        self.g = new
        self._miss_ns.uncached = new.uncached
        self._session = Session(self.path, native.NAME, self.calls, self.store.contents)
        for i in range(self._done, len(self.calls)):
            self._analyse_one(i)
        costs_from(self, self._done)
        self._done = len(self.calls)
        return rebuild

    def _same_for_earlier(self, old: _Globals, new: _Globals) -> bool:
        for raw, name in old.renamed.items():
            if new.renamed.get(raw) != name or new.tree.get(name) != old.tree.get(name):
                return False
        for raw, ttl in old.ttls.items():
            if new.ttls.get(raw) != ttl:
                return False
        if self._used_default and new.default_rate != old.default_rate:
            return False
        if old.uncached - new.uncached:
            return False  # a model showed caching at last: its earlier calls may be misses
        return set(new.keys) == set(old.keys)

    def _analyse_one(self, i: int) -> None:
        """The main loop of :func:`cacheviz.analysis.analyze` for call ``i``."""
        assert self.g is not None
        calls = self.calls
        call = calls[i]
        g = self.g
        raw = self.raw[i]
        name = g.renamed[raw]
        self._params.append(keyed_params(call))
        drifts = len(self.drift_cols["call"])
        previous, shared, drifted = self._walk.step(
            self._session,
            i,
            name,
            g.tree[name],
            self.local,
            self._params,
            self.call_cache,
            self.exact[i],
            self.call_cols,
            self.drift_cols,
            {},
        )
        if drifted:
            self._drift_of[i] = drifts
        self.call_cols["ttl_seconds"][i] = self._ttls.at(i)
        self._calibrate_one(i, previous, shared, name)
        self._to_provider(i)

    def _calibrate_one(self, i: int, before: int | None, common: int | None, key: str) -> None:
        """One step of :func:`cacheviz.prefix._calibrate.calibrate`."""
        assert self.g is not None
        local = self.local
        calls = self.calls
        usage = calls[i].usage
        mapped, kind, rate_used, used_default = calibrate_call(
            local,
            self.mapped,
            i,
            before,
            common,
            usage.input_tokens if usage else None,
            self.exact[i],
            local[i][calls[i].message_start],
            None if before is None else local[before][calls[before].message_start],
            self._thread_rate,
            key,
            self.g.default_rate,
        )
        self._used_default = self._used_default or used_default
        self.mapped.append(mapped)
        self.basis.append(kind)
        self.rates.append(rate_used)

    def _at(self, i: int, position: int) -> int:
        return map_position(self.local[i], self.mapped[i], position)

    def _to_provider(self, i: int) -> None:
        """:func:`cacheviz.analysis.call_to_provider_tokens` for call ``i`` and its drift."""
        cols = self.call_cols
        cols["local_tokens"][i] = cols["input_tokens"][i]
        cols["token_basis"][i] = self.basis[i]
        call_to_provider_tokens(
            cols, self.drift_cols, i, self._drift_of.get(i), self.mapped, self._at
        )

    # -- the analysis ---------------------------------------------------------------------

    def _grown(self, name: str, schema: dict[str, Any], cols: dict[str, list[Any]]) -> pl.DataFrame:
        """Frame ``name`` with the rows added since the last call appended."""
        done = self._flushed.get(name, 0)
        n = len(next(iter(cols.values())))
        frame = self._frames.get(name)
        if frame is None or done > n:
            frame, done = _schema.frame(schema, {}), 0
        if n > done:
            new = _schema.frame(schema, {k: v[done:n] for k, v in cols.items()})
            frame = append_rows(frame, new)
        self._frames[name], self._flushed[name] = frame, n
        return frame

    def _assemble(self) -> Analysis:
        cols = dict(self.call_cols)
        cols.update(self.cost_cols)
        calls = self._grown("calls", _schema.CALLS, cols)
        drift_cols = dict(self.drift_cols)
        drift_cols["cost_usd"] = self._drift_cost
        drift_cols["material"] = self._drift_material
        drifts = self._grown("drifts", _schema.DRIFTS, drift_cols)
        misses = self._grown("misses", _schema.MISSES, self.miss_cols)
        assert self.g is not None
        own = None
        if self.g.keys:
            counts = self._key_counts
            first = sorted(counts, key=lambda k: -counts[k])[0]
            own = self.runs[first].simulation()
        return Analysis(
            self.session(),
            calls,
            drifts,
            dict(self.caches),
            list(self.mapped),
            list(self.local),
            Calibration(list(self.mapped), list(self.basis), list(self.rates)),
            misses=misses,
            billed_usd=self._billed_sum,
            unpriced_models=list(self._unpriced),
            unpriced_reasons=dict(self._unpriced),
            own_simulation=own,
        )


def _identity(handle: Any) -> tuple[int, int]:
    import os

    stat = os.fstat(handle.fileno())
    return (stat.st_ino, stat.st_dev)


__all__ = ["LiveLog"]
