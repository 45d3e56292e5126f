"""The live inspector's state, extended by the appended calls (no Jupyter import).

:class:`LiveState` follows a log with :class:`~cacheviz.live._incremental.LiveLog` and keeps
an :class:`~cacheviz.ui._state.InspectorState` equal to
``state.build(analysis, target, targets=...)`` of the same lines: the target's
simulation and the comparison are :class:`~cacheviz.live._incremental.SimulationStream`
replays extended by the new calls, and the timeline, shape and cost tables get the new
calls' rows only. The header (``meta``) is recomputed from the frames each time (sums
and counts over one column each).

The whole state is rebuilt (``appended`` is false) when the analysis was replaced
(:meth:`LiveLog.update` returned ``-1``), when the target changed, or when the idle
marks' TTL changed (a thread's TTL evidence, or the recorded providers).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz import _schema
from cacheviz.errors import CacheVizError
from cacheviz.live._incremental import LiveLog
from cacheviz.live._sim_stream import SimulationStream, append_rows
from cacheviz.model import OPAQUE
from cacheviz.money._metrics import HitRatioSums, WasteSum
from cacheviz.money._simulate import (
    compare_row,
    drifted_from,
    failed_row,
    failure_line,
    provider_id,
)
from cacheviz.ui import _state as state
from cacheviz.ui._costs import costs as cost_rows
from cacheviz.ui._header import meta_of
from cacheviz.ui._providers import pricing_notes
from cacheviz.ui._segment_rows import STATUS, UNLOGGED_STATUS
from cacheviz.ui._timeline import default_ttl_seconds, timeline

if TYPE_CHECKING:
    from collections.abc import Callable

    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation
    from cacheviz.providers._base import SimCall

_SHAPE_SCHEMA = {"call": pl.Int32, "start": pl.Int32, "end": pl.Int32, "status": pl.Int8}


@dataclasses.dataclass
class _Choice:
    """What the state is built for (a change rebuilds it)."""

    target: state.Target | None
    targets: tuple[str, ...] | None
    with_compare: bool


class LiveState:
    """An inspector state that follows a growing log (module docstring).

    Parameters
    ----------
    source
        The log file, or a function returning a recorder's lines.
    """

    def __init__(self, source: str | Path | Callable[[], list[str]]) -> None:
        self.log = LiveLog(source)
        self.state: state.InspectorState | None = None
        self.choice = _Choice(None, None, with_compare=True)
        self._streams: dict[str, SimulationStream] = {}
        self._stream_errors: dict[str, Exception] = {}
        self._fed = 0
        self._timeline_mode: Any = None
        self._thread_last: dict[str, int] = {}
        self._threads: list[str] = []
        self._appended = False
        self._reported, self._replayed, self._waste = HitRatioSums(), HitRatioSums(), WasteSum()
        self.delta: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame] | None = None

    def choose(
        self,
        target: state.Target | None,
        targets: tuple[str, ...] | None,
        *,
        with_compare: bool = True,
    ) -> None:
        """Follow ``target`` and the comparison ``targets`` (the widget's current ones)."""
        choice = _Choice(target, tuple(targets) if targets else None, with_compare)
        if choice != self.choice:
            self.choice = choice
            self.state = None  # rebuilt at the next update

    def update(self, *, full_state: bool = True) -> tuple[state.InspectorState | None, bool]:
        """Read the new lines; the state and whether it only grew (``appended``).

        Returns the current state (``None`` while no call was logged) and ``True`` when
        the rows before the new ones are unchanged. For a log in another format
        (``log.incremental`` false) the state is :func:`state.build` of the new
        analysis, or ``None`` with ``full_state=False`` (the caller builds it).
        """
        grown = self.log.update()
        analysis = self.log.analysis
        if analysis is None:
            self.state = None
            return None, False
        old = self.state
        if grown == 0 and old is not None:
            return old, True
        if not self.log.incremental:  # another format: the full build
            self._reset_streams()
            if not full_state:
                self.state = None
                return None, False
            choice = self.choice
            self.state = state.build(
                analysis,
                choice.target,
                targets=choice.targets,
                with_compare=choice.with_compare,
            )
            return self.state, False
        if old is None or grown < 0:
            self._reset_streams()
            self.state = self._build(analysis, 0, None)
            return self.state, False
        new = self._build(analysis, old.timeline.height, old)
        self.state = new
        return new, new is not None and self._appended

    def rebuild(self) -> state.InspectorState | None:
        """The state of the calls read so far, built again (after :meth:`choose`)."""
        analysis = self.log.analysis
        if analysis is None:
            return None
        if not self.log.incremental:
            choice = self.choice
            self.state = state.build(
                analysis, choice.target, targets=choice.targets, with_compare=choice.with_compare
            )
            return self.state
        self._reset_streams()
        self.state = self._build(analysis, 0, None)
        return self.state

    # -- simulations -----------------------------------------------------------------

    def _reset_streams(self) -> None:
        self._streams = {}
        self._stream_errors = {}
        self._fed = 0
        self._timeline_mode = None
        self._thread_last = {}
        self._threads = []

    def _stream(self, key: str, provider: str, model: str | None, **rules: Any) -> Any:
        """The stream of ``key`` (created on first use); an exception if it cannot run."""
        if key in self._stream_errors:
            return self._stream_errors[key]
        found = self._streams.get(key)
        if found is None:
            try:
                found = SimulationStream(
                    provider, model, prices=self.log.prices, unpriced="skip", **rules
                )
            except Exception as exc:  # the status or the comparison row says why
                self._stream_errors[key] = exc
                return exc
            self._streams[key] = found
        return found

    def _feed(self, analysis: Analysis, upto: int) -> None:
        """Extend every stream to the first ``upto`` calls."""
        log = self.log
        recorded = log.call_cols["provider"]
        prefixes = log.call_cols["prefix_tokens"]
        drifts = drifted_from(log.call_cols["drift"], log.call_cols["prev_call"])
        for key, stream in list(self._streams.items()):
            if stream.n >= upto:
                continue
            calls = [_sim_call_for(stream, c, log) for c in log.built[stream.n : upto]]
            try:
                stream.extend(calls, recorded, prefixes, drifts)
            except Exception as exc:  # that replay's status or row says why; others go on
                del self._streams[key]
                self._stream_errors[key] = exc
        self._fed = upto

    def _simulation(self, analysis: Analysis, target: state.Target) -> Simulation:
        """:func:`cacheviz.ui._state.simulate_target`, from a stream."""
        own = state.own_simulation_of(analysis, target)
        if own is not None:
            return own
        rules = target.rules()
        key = f"target|{target.provider}|{target.model}|{sorted(rules.items())}"
        self._stream(key, target.provider, target.model, **rules)
        self._feed(analysis, analysis.calls.height)
        stream = self._stream(key, target.provider, target.model, **rules)
        if isinstance(stream, Exception):
            raise stream
        return stream.simulation()

    def _compare(self, analysis: Analysis, targets: tuple[str, ...]) -> pl.DataFrame:
        """:func:`cacheviz.money._simulate.compare`, from streams (a failed target: its row)."""
        parsed: list[tuple[str, str, str | None]] = []
        for target in targets:  # a misspelt provider fails the comparison, as compare()
            name, _, named = target.partition(":")
            parsed.append((target, provider_id(name), named or None))
        rows = []
        for target, provider, model in parsed:
            key = f"compare|{target}"
            self._stream(key, provider, model)
            self._feed(analysis, analysis.calls.height)
            stream = self._stream(key, provider, model)
            try:
                if isinstance(stream, Exception):
                    raise stream
                rows.append(compare_row(target, stream.simulation()))
            except Exception as exc:  # one target's failure is its row's
                rows.append(failed_row(target, provider, model, exc))
        return pl.DataFrame(rows, schema=_schema.COMPARE)

    # -- the state -------------------------------------------------------------------

    def _build(
        self, analysis: Analysis, start: int, old: state.InspectorState | None
    ) -> state.InspectorState:
        """:func:`cacheviz.ui._state.build`, with the tables' rows from ``start`` on."""
        choice = self.choice
        target = choice.target or state.default_target(analysis)
        targets = choice.targets or tuple(state.comparison_targets(analysis))
        status = ""
        simulation: Simulation | None = None
        compare: pl.DataFrame | None = None
        try:
            simulation = self._simulation(analysis, target)
        except Exception as exc:  # as state.build: the view shows why
            status = f"{target.provider}: {failure_line(exc)}"
        if choice.with_compare:
            try:
                compare = self._compare(analysis, targets)
            except (CacheVizError, ValueError) as exc:  # a target names no known provider
                status = status or f"comparison: {exc}"
        compare = state.with_target_row(compare, targets, target, simulation)
        ttl_seconds = target.ttl_seconds(analysis)
        status = status or state.unpriced_status(analysis, target, simulation)
        mode = state.timeline_mode(analysis, target, ttl_seconds)
        idle = default_ttl_seconds(analysis) if mode == "recorded" else mode
        self._appended = old is not None and (mode, idle) == self._timeline_mode
        if not self._appended:
            start, old = 0, None
            self._thread_last, self._threads = {}, []
            self._reported, self._replayed, self._waste = HitRatioSums(), HitRatioSums(), WasteSum()
        self._timeline_mode = (mode, idle)
        n = analysis.calls.height
        timeline = self._timeline_rows(analysis, start, mode, idle)
        shape = self._shape_rows(analysis, start)
        if simulation is None:
            costs = cost_rows(None, n, analysis).slice(start)
        else:  # stand-ins holding only the new calls' rows (cost_rows reads .calls)
            costs = cost_rows(
                SimpleNamespace(calls=simulation.calls.slice(start)),  # type: ignore[arg-type]  # above
                n - start,
                SimpleNamespace(calls=analysis.calls.slice(start)),  # type: ignore[arg-type]  # above
                own=simulation is analysis.own_simulation,
            )
        self.delta = (timeline, shape, costs)
        if old is not None:
            timeline = append_rows(old.timeline, timeline)
            shape = append_rows(old.shape, shape)
            costs = append_rows(old.costs, costs)
        return state.InspectorState(
            analysis=analysis,
            target=target,
            simulation=simulation,
            compare=compare,
            ttl_seconds=ttl_seconds,
            timeline=timeline,
            shape=shape,
            costs=costs,
            meta=self._meta(analysis, start, ttl_seconds, simulation, compare),
            status=status,
            targets=targets,
        )

    def _meta(
        self,
        analysis: Analysis,
        start: int,
        ttl_seconds: float | None,
        simulation: Simulation | None,
        compare: pl.DataFrame | None,
    ) -> dict[str, Any]:
        """:func:`.header.meta`, its per-call sums kept from one append to the next."""
        calls = analysis.calls
        new = calls.slice(start)
        self._reported.add(
            new["reported_cache_read_tokens"].to_list(), new["reported_input_tokens"].to_list()
        )
        self._waste.add(
            new["billed_usd"].to_list(), new["simulated_usd"].to_list(), new["ideal_usd"].to_list()
        )
        # the calls' providers and encodings are all pricing_notes reads of them
        kinds = SimpleNamespace(calls=calls.select("provider", "encoding").unique())
        notes = pricing_notes(kinds, simulation)  # type: ignore[arg-type]  # a stand-in
        sim_hit = None
        if simulation is not None:
            sim = simulation.calls.slice(start)
            self._replayed.add(sim["cache_read_tokens"].to_list(), sim["input_tokens"].to_list())
            sim_hit = self._replayed.ratio().tokens
        reported = self._reported.ratio()
        return meta_of(
            analysis,
            ttl_seconds=ttl_seconds,
            simulation=simulation,
            compare=compare,
            notes=notes,
            threads=self._threads,
            hit_ratio=sim_hit,
            reported=(reported.tokens, reported.requests),
            waste=self._waste.waste(),
        )

    def _timeline_rows(self, analysis: Analysis, start: int, mode: Any, idle: Any) -> pl.DataFrame:
        """:func:`.timeline.timeline`'s rows of calls ``start:`` (each thread's gap included)."""
        calls = analysis.calls
        new_threads = calls["thread"].slice(start).to_list()
        before = sorted({self._thread_last[t] for t in set(new_threads) if t in self._thread_last})
        for offset, t in enumerate(new_threads):
            if t not in self._thread_last:
                self._threads.append(t)
            self._thread_last[t] = start + offset
        rows = pl.concat([calls[before], calls.slice(start)]) if before else calls.slice(start)
        if mode == "recorded":
            fallback = float("inf") if idle is None else float(idle)
            rows = rows.with_columns(pl.col("ttl_seconds").cast(pl.Float64).fill_null(fallback))
        drifts = analysis.drifts.filter(pl.col("call") >= start)
        sub = SimpleNamespace(calls=rows, drifts=drifts)
        frame = timeline(sub, mode)  # type: ignore[arg-type]  # stand-in: .calls, .drifts
        local = rows["thread"].unique(maintain_order=True).to_list()
        where = {name: i for i, name in enumerate(self._threads)}
        frame = frame.with_columns(
            pl.col("thread").replace_strict(
                list(range(len(local))), [where[t] for t in local], return_dtype=pl.Int32
            )
        )
        return frame.filter(pl.col("call") >= start)

    def _shape_rows(self, analysis: Analysis, start: int) -> pl.DataFrame:
        """:func:`.shape.shape_runs`'s rows of calls ``start:`` (segments_frame's status)."""
        log = self.log
        contents = log.store.contents
        calls = log.calls
        prefix = log.call_cols["prefix_tokens"]
        prev_calls = log.call_cols["prev_call"]
        out: dict[str, list[int]] = {"call": [], "start": [], "end": [], "status": []}
        for i in range(start, analysis.calls.height):
            call = calls[i]
            prev = prev_calls[i]
            before = (
                {(b.part, b.position): b.hash for b in calls[prev].blocks}
                if prev is not None
                else {}
            )
            offsets = log.mapped[i]
            base = offsets[0] if offsets else 0
            line = prefix[i]
            run_status = -1
            for k, block in enumerate(call.blocks):
                at, end = offsets[k] - base, offsets[k + 1] - base
                if contents[block.hash].kind == OPAQUE:
                    code = UNLOGGED_STATUS
                elif end <= line:
                    code = STATUS["same"]
                else:
                    had = before.get((block.part, block.position))
                    if had is None:
                        code = STATUS["new"]
                    elif had == block.hash:
                        code = STATUS["invalidated"]
                    else:
                        code = STATUS["changed"]
                if code != run_status:
                    out["call"].append(i)
                    out["start"].append(at)
                    out["end"].append(end)
                    out["status"].append(code)
                    run_status = code
                else:
                    out["end"][-1] = max(out["end"][-1], end)
        return pl.DataFrame(out, schema=_SHAPE_SCHEMA)


def _sim_call_for(stream: SimulationStream, call: SimCall, log: LiveLog) -> SimCall:
    """The call as ``stream``'s replay takes it (its own copy when it is changed)."""
    if stream.self_hosted:
        i = call.index
        return dataclasses.replace(call, offsets=log.local[i], local_offsets=None)
    if stream.model is not None:
        return dataclasses.replace(call)
    return call


__all__ = ["LiveState"]
