"""The providers panel's data: the target's numbers, the comparison rows, pricing notes.

``widgets/src/views/providers.js`` draws the target's headline numbers and the provider
comparison table, ``widgets/src/views/costs.js`` the notice when there is no cost to
chart. (The provider registry itself is :mod:`cacheviz.providers`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz import providers
from cacheviz._schema import clean
from cacheviz.money import pricing

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation


def unpriced_models(analysis: Analysis, simulation: Simulation | None) -> list[str]:
    """Models the target could not price (empty for self-hosted engines)."""
    if simulation is None or simulation.provider in providers.self_hosted():
        return []
    missing = simulation.calls.filter(pl.col("cost_usd").is_null() & pl.col("model").is_not_null())
    return sorted({clean(m) for m in missing["model"].to_list()})


def pricing_notes(analysis: Analysis, simulation: Simulation | None) -> dict[str, Any]:
    """Why the cost chart would be empty (``notice``) and a tokenizer ``warning``."""
    if simulation is None:
        return {"notice": None, "warning": None}
    provider = simulation.provider
    recorded = sorted(set(analysis.calls["provider"].to_list()))
    notice = None
    if provider in providers.self_hosted():
        notice = (
            f"{provider} is a self-hosted engine: it has no prices, so there is no cost to "
            "chart; its row in the comparison shows the prefill tokens its prefix cache "
            "saves (cache read)."
        )
    else:
        missing = unpriced_models(analysis, simulation)
        if missing and simulation.total_cost_usd in (None, 0):
            picks = pricing.priced_models(provider)[:3]
            hint = f" (for example {', '.join(picks)})" if picks else ""
            notice = (
                f"No {provider} price for {', '.join(missing)}: choose a priced {provider} "
                f"model in the model list{hint}."
            )
        elif missing:
            notice = f"Calls to {', '.join(missing)} have no {provider} price and are left out."
    warning = None
    others = [p for p in recorded if p != provider]
    if others and provider not in providers.self_hosted():
        encodings = sorted(set(analysis.calls["encoding"].to_list()))
        warning = (
            f"This session was recorded with {', '.join(others)} models and is priced here "
            f"under {provider}'s rules with tokens counted by {', '.join(encodings)}; "
            f"{provider}'s own tokenizer would count differently, so these costs are approximate."
        )
    return {"notice": notice, "warning": warning}


def target_facts(
    analysis: Analysis,
    simulation: Simulation | None,
    *,
    hit_ratio: float | None,
    warning: str | None,
) -> dict[str, Any] | None:
    """The target's headline numbers (``None`` without a simulation).

    ``hit_ratio`` is the simulation's token hit ratio, ``warning`` the tokenizer warning
    of :func:`pricing_notes`. A self-hosted engine's replay adds :func:`prefill_facts`.
    """
    if simulation is None:
        return None
    facts: dict[str, Any] = {
        "provider": simulation.provider,
        "model": simulation.model,
        # a self-hosted engine (vllm, sglang, llamacpp) has no prices: nothing is billed or priced
        "self_hosted": providers.profile(simulation.provider).self_hosted,
        # the session replayed under its own provider's rules: its waste is the
        # session's (billed - ideal), the same number as summary, scan and check
        "own": simulation is analysis.own_simulation,
        "price_source": simulation.price_source,
        "total_cost_usd": simulation.total_cost_usd,
        "ideal_usd": simulation.ideal_usd,
        "score": simulation.score,
        "token_scale": simulation.token_scale,
        "hit_ratio": hit_ratio,
        "warning": warning,
    }
    if simulation.prefill_factor is not None:
        facts.update(prefill_facts(analysis, simulation))
    return facts


def prefill_facts(analysis: Analysis, simulation: Simulation) -> dict[str, Any]:
    """A self-hosted replay's estimated prefill: the session's and each drift point's.

    ``prefill_ms`` and ``prefill_ms_stable`` summed over the session and their ratio,
    ``prefill_factor`` (:attr:`~cacheviz.money._simulate.Simulation.prefill_factor`);
    ``prefill_drifts``: per drift point of the analysis, its ``call``, ``prefill_ms``,
    ``prefill_ms_stable`` and ``prefill_factor`` (the simulation's columns, as they are).
    """
    sim = simulation.calls
    drifts = set(analysis.drifts["call"].to_list())
    rows = sim.filter(pl.col("call").is_in(drifts)).select(
        "call", "prefill_ms", "prefill_ms_stable", "prefill_factor"
    )
    return {
        "prefill_ms": float(sim["prefill_ms"].sum()),
        "prefill_ms_stable": float(sim["prefill_ms_stable"].sum()),
        "prefill_factor": simulation.prefill_factor,
        "prefill_drifts": rows.to_dicts(),
    }


def compare_rows(compare: pl.DataFrame | None) -> list[dict[str, Any]]:
    """The comparison table: one row per ``provider:model`` target (empty without one).

    ``error`` is null, or one line: why the row has no cost ("no price ...") or, with
    null tokens too, why its replay failed.
    """
    if compare is None:
        return []
    keys = (
        "target",
        "cost_usd",
        "ideal_usd",
        "cache_read_tokens",
        "cache_write_tokens",
        "uncached_tokens",
        "error",
    )
    # a self-hosted engine's row also has its prefill factor (a priced row has none)
    return [
        {k: row[k] for k in keys}
        | ({} if row.get("prefill_factor") is None else {"prefill_factor": row["prefill_factor"]})
        for row in compare.iter_rows(named=True)
    ]
