"""A provider's replay of a session, extended call by call (the live inspector's).

:class:`SimulationStream` mirrors :func:`cacheviz.money._simulate.simulate` row for row, on
calls given one at a time: the simulator's ``stream`` (every simulator's ``run`` is
``list(stream(calls))``) is fed from a queue, so each new call costs one step of the
replay, not a replay of the session.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl

from cacheviz import _schema, providers
from cacheviz.errors import SimulationError, UnknownModelError
from cacheviz.money._simulate import (
    Simulation,
    StableReads,
    TokenScale,
    call_rates,
    make_simulator,
    provider_id,
    read_unit,
    replay_row,
    simulation_of,
)
from cacheviz.money.pricing import PriceBook, RateCache
from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._prefill import PrefillModel

MAX_CHUNKS = 16  # a grown frame is made one chunk again past this many


def append_rows(frame: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with the rows of ``new`` below it, without copying ``frame`` each time.

    The chunks are kept (one per append) and joined into one past :data:`MAX_CHUNKS`:
    copying the whole frame costs a fraction of an append on average. The float columns
    are always one chunk: polars sums a column chunk by chunk, so a sum over several
    chunks can differ in its last bits from the full analysis's (one chunk).
    """
    if not frame.height:
        return new
    out = pl.concat([frame, new], rechunk=False)
    if out.n_chunks() > MAX_CHUNKS:
        return out.rechunk()
    floats = [name for name, dtype in out.schema.items() if dtype.is_float()]
    return out.with_columns(out[name].rechunk() for name in floats) if floats else out


class _Feed:
    """An iterator the caller fills one call at a time (a simulator's ``stream`` input)."""

    def __init__(self) -> None:
        self.queue: deque[SimCall] = deque()

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> SimCall:
        return self.queue.popleft()


class _Replay:
    """A simulator's replay that takes the calls one at a time."""

    def __init__(self, provider: str, **rules: Any) -> None:
        simulator = make_simulator(provider, **rules)
        self._feed = _Feed()
        stream = getattr(simulator, "stream", None)
        self._results: Iterator[CallResult] | None = (
            stream(self._feed) if stream is not None else None
        )
        self.simulator = simulator
        self._taken: list[SimCall] = []

    def step(self, call: SimCall) -> CallResult:
        if self._results is None:  # a simulator without ``stream``: replay all (correct)
            self._taken.append(call)
            return self.simulator.run(self._taken)[-1]
        self._feed.queue.append(call)
        return next(self._results)


class SimulationStream:
    """One ``simulate(analysis, provider, model, **rules)``, extended call by call.

    Mirrors :func:`cacheviz.money._simulate.simulate` row for row; :meth:`simulation` gives
    the same :class:`~cacheviz.money._simulate.Simulation`. A price error the full replay would
    raise is kept in ``error`` (the full replay raises at the first such call, and the
    earlier calls do not change).
    """

    def __init__(
        self,
        provider: str,
        model: str | None = None,
        *,
        prices: PriceBook,
        unpriced: str = "raise",
        **rules: Any,
    ) -> None:
        self.provider = provider_id(provider)
        self.model = model
        self.rules = dict(rules)
        self.unpriced = unpriced
        self.self_hosted = providers.profile(self.provider).self_hosted
        self._replay = _Replay(self.provider, **rules)
        self._price = RateCache(prices, self.provider)
        self.cols: dict[str, list[Any]] = {name: [] for name in _schema.SIMULATION}
        self._frame = _schema.frame(_schema.SIMULATION, {})
        self._pending = 0
        self.sources: list[str] = []
        self.error: Exception | None = None
        self._scale = TokenScale()
        self._reported = 0
        self._matched = 0
        self._prefills: dict[str, PrefillModel] = {}
        self._stable = StableReads(read_unit(self._replay.simulator), None)
        self.n = 0

    def extend(
        self,
        calls: list[SimCall],
        recorded: list[str],
        prefixes: list[int],
        drifts: Sequence[int | None] | None = None,
    ) -> None:
        """Replay ``calls`` (the next ones of the session; ``calls`` may be modified).

        ``recorded``, ``prefixes`` and ``drifts`` by call index, as
        :func:`cacheviz.money._simulate.replay` takes them.
        """
        model = self.model
        self._stable.drifts = drifts
        for call in calls:
            if model is not None:
                if call.model != model:
                    call.warm_tokens = 0
                call.model = model
            origin = recorded[call.index]
            result = self._replay.step(call)
            self._scale.add(call)
            rates = None
            if not self.self_hosted and self.error is None:
                try:
                    rates = call_rates(
                        self._price,
                        call,
                        provider=self.provider,
                        model=model,
                        origin=origin,
                        unpriced=self.unpriced,
                    )
                except (SimulationError, UnknownModelError) as exc:
                    self.error = exc
            if rates is not None and rates.source not in self.sources:
                self.sources.append(rates.source)
            values = replay_row(
                call,
                result,
                rates,
                prefixes[call.index],
                origin=origin,
                provider=self.provider,
                model=model,
                self_hosted=self.self_hosted,
                prefills=self._prefills,
                stable=self._stable,
            )
            verdict = values["verdict"]
            if verdict != "not_reported" and not values["sized_from_usage"]:
                self._reported += 1
                self._matched += verdict == "match"
            for name, value in values.items():
                self.cols[name].append(value)
            self.n += 1
            self._pending += 1

    def frame(self) -> pl.DataFrame:
        """The simulation's per-call frame (the new rows appended)."""
        if self._pending:
            start = self.n - self._pending
            new = _schema.frame(_schema.SIMULATION, {k: v[start:] for k, v in self.cols.items()})
            self._frame = append_rows(self._frame, new)
            self._pending = 0
        return self._frame

    def simulation(self) -> Simulation:
        """The :class:`~cacheviz.money._simulate.Simulation` of the calls so far.

        Raises
        ------
        CacheVizError
            The error the full replay would raise (an unpriced model).
        """
        if self.error is not None:
            raise self.error
        return simulation_of(
            self.provider,
            self.model,
            self.frame(),
            self.sources,
            self_hosted=self.self_hosted,
            token_scale=self._scale.value(),
            score=self._matched / self._reported if self._reported else None,
            rules=self.rules,
        )


__all__ = ["MAX_CHUNKS", "SimulationStream", "append_rows"]
