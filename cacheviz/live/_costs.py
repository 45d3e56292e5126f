"""The cost columns of a followed log, call by call (:mod:`cacheviz.live._incremental`).

The steps of :func:`cacheviz.money._costs.cost_lists` and :func:`cacheviz.money._simulate.sim_calls`
for one new call: its replay input, its billed, simulated and ideal cost, its drift's
what-if cost and its miss. Each reads only the call and the state the earlier calls left
(the thread's unlogged-prefix version, its first read, the namespace's latest call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cacheviz.errors import UnknownModelError
from cacheviz.formats import native
from cacheviz.live._sim_stream import SimulationStream
from cacheviz.money._costs import (
    _UNLOGGED_DEFAULT,
    UNLOGGED_HOLDS,
    _cost,
    _provider_key,
    _what_if,
    billed_cost,
    miss_at,
)
from cacheviz.money._metrics import call_waste
from cacheviz.money._simulate import (
    _explicit,
    make_simulator,
    material_shortfall,
    next_sim_call,
    next_warm_head,
    shortest_ttl,
    version_evidence,
)
from cacheviz.money.pricing import RateCache
from cacheviz.prefix._calibrate import next_version
from cacheviz.providers._base import SimCall
from cacheviz.reported._verdict import agrees

if TYPE_CHECKING:
    from cacheviz.live._incremental import LiveLog


def sim_call(log: LiveLog, i: int) -> SimCall:
    """:func:`cacheviz.money._simulate.sim_calls` for call ``i`` (provider-token axis)."""
    cols = log.call_cols
    call = log.calls[i]
    thread = cols["thread"][i]
    explicit = _explicit(cols["provider"][i])
    version = next_version(
        log._versions,
        thread,
        *version_evidence(log.calls, cols, i, explicit, shortest_ttl()),
        material_shortfall,
    )
    warm = next_warm_head(log._warm_first, cols, i, explicit)
    ttl = cols["ttl_seconds"][i]
    previous = log.built[-1] if log.built else None
    sim = next_sim_call(
        call,
        previous,
        thread=thread,
        version=version,
        clock=log._clock,
        offsets=log.mapped[i],
        cache=log.caches[cols["encoding"][i]],
        local_offsets=log.local[i],
        ttl_hint=ttl,
        warm_tokens=warm,
    )
    log._clock = sim.clock
    return sim


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
    for run in log.runs.values():
        run.extend(log.built[start:n], recorded, prefixes)
    cc = log.cost_cols
    for i in range(start, n):
        call = log.calls[i]
        key = _provider_key(call.provider)
        simulated = ideal = read = None
        detail = ""
        if key is not None:
            run = log.runs[key]
            simulated = run.cols["cost_usd"][i]
            ideal = run.cols["ideal_usd"][i]
            read = run.cols["cache_read_tokens"][i]
            detail = run.cols["detail"][i]
        billed = None
        if key is not None and call.usage is not None:
            try:
                rates = log._prices_of[key](call.model, call.ts, call.usage.input_tokens or 0)
            except UnknownModelError:
                log._unpriced[call.model] = None
            else:
                billed = billed_cost(call, rates)
        if billed is not None:
            log._billed_sum = billed if log._billed_sum is None else log._billed_sum + billed
        cc["billed_usd"].append(billed)
        cc["simulated_usd"].append(simulated)
        cc["ideal_usd"].append(ideal)

        cc["waste_usd"].append(call_waste(billed, simulated, ideal))
        _drift_cost_of(log, i, key)
        _miss_of(log, i, read, detail, billed)
        k = log._drift_of.get(i)
        cc["drift_material"].append(
            log._drift_material[k] if log.call_cols["drift"][i] and k is not None else None
        )
        part, cause = (None, None)
        if k is not None:
            part, cause = log.drift_cols["part"][k], log.drift_cols["cause"][k]
        cc["verdict_agrees"].append(
            agrees(log.call_cols["provider_verdict"][i], part, cause, log._own_miss[i])
        )


def _drift_cost_of(log: LiveLog, i: int, key: str | None) -> None:
    """:func:`cacheviz.money._costs._drift_costs` for call ``i``'s drift, if it has one."""
    k = log._drift_of.get(i)
    if k is None:
        return
    before = log.drift_cols["prev_call"][k]
    cause = log.drift_cols["cause"][k]
    if key is None or key not in log.runs:
        log._drift_cost.append(None)
        log._drift_material.append(None)
        return
    previous, kept = _what_if(log.built[before], log.built[i], cause)
    results = make_simulator(key).run([previous, kept])
    run = log.runs[key].cols
    actual_read = run["cache_read_tokens"][i]
    gained = results[1].cache_read_tokens - actual_read
    log._drift_material.append(gained > 0)
    actual = run["cost_usd"][i]
    what_if = _cost(log._prices_of[key], kept, results[1])
    if actual is None or what_if is None:
        log._drift_cost.append(None)
    else:
        log._drift_cost.append(max(0.0, actual - what_if) if gained > 0 else 0.0)


def _miss_of(
    log: LiveLog,
    i: int,
    predicted: int | None,
    sim_detail: str,
    paid: float | None,
) -> None:
    """One step of :func:`cacheviz.money._costs._misses`."""
    cols = log.call_cols
    cc = log.cost_cols
    calls = log.calls
    namespace = cols["namespace"][i]
    source = cols["prev_call"][i]
    if source is None or cols["namespace"][source] != namespace:
        source = log._miss_ns.get(namespace)
    log._miss_ns[namespace] = i
    miss = miss_at(
        calls,
        i,
        source,
        line=cols["prefix_tokens"][i],
        ttl_evidence=cols["ttl_seconds"][i],
        predicted=predicted,
        sim_detail=sim_detail,
        hidden=cols["unlogged_tokens"][i],
        verdict=cols["provider_verdict"][i],
        missed=cols["provider_missed_tokens"][i],
        rebuild=cols["rebuild"][i],
        thread=cols["thread"][i],
        paid=paid,
        prices_of=log._prices_of,
        holds=UNLOGGED_HOLDS.get(native.NAME, _UNLOGGED_DEFAULT),
    )
    log._own_miss.append(miss.own)
    if miss.row is not None:
        for name, value in miss.row.items():
            log.miss_cols[name].append(value)
    cc["expected_read_tokens"].append(miss.expected)
    cc["miss_cause"].append(miss.cause)
    cc["shortfall_tokens"].append(miss.shortfall)


__all__ = ["costs_from", "sim_call"]
