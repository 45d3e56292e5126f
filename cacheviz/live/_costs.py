"""The cost columns of a followed log, call by call (:mod:`cacheviz.live._incremental`).

The steps of :func:`cacheviz.money._costs.cost_lists` and :func:`cacheviz.money._simulate.sim_calls`
for one new call: its replay input, its billed, simulated and ideal cost, its drift's
what-if cost and its miss. Each reads only the call and the state the earlier calls left
(the thread's unlogged-prefix version, its first read, the namespace's latest call).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from cacheviz.formats import native
from cacheviz.live._sim_stream import SimulationStream
from cacheviz.money._costs import (
    MISS_COLUMNS,
    call_billed,
    drift_cost,
    next_miss,
    opaque_blocks,
    provider_key,
    unlogged_holds,
)
from cacheviz.money._metrics import call_waste
from cacheviz.money._simulate import drifted_from
from cacheviz.money.pricing import RateCache
from cacheviz.providers._base import SimCall

if TYPE_CHECKING:
    from cacheviz.live._incremental import LiveLog


def sim_call(log: LiveLog, i: int) -> SimCall:
    """:func:`cacheviz.money._simulate.sim_calls` for call ``i`` (provider-token axis)."""
    cols = log.call_cols
    return log._sims.step(
        log.calls,
        cols,
        i,
        offsets=log.mapped[i],
        cache=log.caches[cols["encoding"][i]],
        local_offsets=log.local[i],
    )


def costs_from(log: LiveLog, start: int) -> None:
    """Extend the replays and the cost, drift-cost and miss columns by calls ``start:``."""
    assert log.g is not None
    n = len(log.calls)
    if start >= n:
        return
    for i in range(start, n):
        log.built.append(sim_call(log, i))
    keys = log.g.keys
    for name in keys:
        if name not in log.runs:
            log.runs[name] = SimulationStream(name, prices=log.prices, unpriced="skip")
            log._prices_of[name] = RateCache(log.prices, name)
    recorded = log.call_cols["provider"]
    prefixes = log.call_cols["prefix_tokens"]
    drifts = drifted_from(log.call_cols["drift"], log.call_cols["prev_call"])
    for run in log.runs.values():
        run.extend(log.built[start:n], recorded, prefixes, drifts)
    cc = log.cost_cols
    for i in range(start, n):
        call = log.calls[i]
        key = provider_key(call.provider)
        simulated = ideal = read = None
        detail = ""
        if key is not None:
            run = log.runs[key]
            simulated = run.cols["cost_usd"][i]
            ideal = run.cols["ideal_usd"][i]
            read = run.cols["cache_read_tokens"][i]
            detail = run.cols["detail"][i]
        billed = call_billed(call, key, log._prices_of, log._unpriced)
        if billed is not None:
            log._billed_sum = billed if log._billed_sum is None else log._billed_sum + billed
        cc["billed_usd"].append(billed)
        cc["simulated_usd"].append(simulated)
        cc["ideal_usd"].append(ideal)

        # the billed basis once any call has a billed cost (money/_metrics.py)
        on_billed = log._billed_sum is not None
        cc["waste_usd"].append(call_waste(billed, simulated, ideal, billed_basis=on_billed))
        _drift_cost_of(log, i, key)
        _miss_of(log, i, read, detail, billed)
        k = log._drift_of.get(i)
        cc["drift_material"].append(
            log._drift_material[k] if log.call_cols["drift"][i] and k is not None else None
        )


def _drift_cost_of(log: LiveLog, i: int, key: str | None) -> None:
    """:func:`cacheviz.money._costs.drift_cost` for call ``i``'s drift, if it has one."""
    k = log._drift_of.get(i)
    if k is None:
        return
    cost: float | None = None
    material: bool | None = None
    if key is not None and key in log.runs:
        before = log.drift_cols["prev_call"][k]
        cost, material = drift_cost(
            log.built[before],
            log.built[i],
            log.drift_cols["cause"][k],
            log.runs[key].cols,
            log._prices_of[key],
        )
    log._drift_cost.append(cost)
    log._drift_material.append(material)


def _miss_of(
    log: LiveLog,
    i: int,
    predicted: int | None,
    sim_detail: str,
    paid: float | None,
) -> None:
    """:func:`cacheviz.money._costs.next_miss` for call ``i``."""
    cc = log.cost_cols
    k = log._drift_of.get(i)
    drift = None
    if k is not None:
        d = log.drift_cols
        drift = (d["part"][k], d["cause"][k], d["detail"][k])
    contents = log.store.contents
    miss = next_miss(
        log.calls,
        log.call_cols,
        i,
        log._miss_ns,
        predicted=predicted,
        sim_detail=sim_detail,
        paid=paid,
        prices_of=log._prices_of,
        holds=unlogged_holds(native.NAME),
        offsets=log.mapped[i],
        opaque=functools.partial(opaque_blocks, contents, log.calls[i].hashes),
        drift=drift,
    )
    if miss.row is not None:
        for name, value in miss.row.items():
            log.miss_cols[name].append(value)
    for name, attribute in MISS_COLUMNS.items():
        cc[name].append(getattr(miss, attribute))


__all__ = ["costs_from", "sim_call"]
