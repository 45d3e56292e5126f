"""The header's data: the ``meta`` document every view reads.

``widgets/src/views/header.js`` shows what session this is, its totals, the thread tree
and the hit ratios from it; the other views read its thread names, causes and TTL, and
the providers panel its ``target`` and ``compare`` (:mod:`cacheviz.ui._providers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz._schema import CAUSES, MISS_CAUSES, clean
from cacheviz.money import pricing
from cacheviz.money._metrics import Waste, hit_ratio, waste_of
from cacheviz.redact import redact_all
from cacheviz.reported._verdict import verdict_counts
from cacheviz.ui._providers import compare_rows, pricing_notes, target_facts, unpriced_models
from cacheviz.ui._shared import thread_names

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation


def _thread_parents(analysis: Analysis) -> list[int]:
    """Index of each thread's parent thread (sub-agents), -1 for a root or unknown."""
    calls = analysis.calls
    names = thread_names(analysis)
    if "parent_thread" not in calls.columns:
        return [-1] * len(names)
    index = {name: i for i, name in enumerate(names)}
    parents = (
        calls.group_by("thread", maintain_order=True)
        .agg(pl.col("parent_thread").drop_nulls().first())
        .rows()
    )
    found = {name: index.get(parent, -1) for name, parent in parents}
    return [found.get(name, -1) for name in names]


def _hit_ratio(read: pl.Series, total: pl.Series) -> float | None:
    """Token-weighted hit ratio (:func:`cacheviz.money._metrics.hit_ratio`)."""
    return hit_ratio(read.to_list(), total.to_list()).tokens


_DISAGREEMENTS = 50  # listed in the header; the calls frame holds every one


def verdicts(calls: pl.DataFrame) -> dict[str, Any] | None:
    """The provider's own verdicts against cacheviz's reading: the rate and each disagreement.

    ``None`` when no call asked the provider for a verdict. Otherwise
    :func:`~cacheviz.reported._verdict.verdict_counts` (``compared``, ``agree``,
    ``agree_rate``, ...) and ``disagreements``: per call cacheviz disagrees on (at most
    50), both readings — the provider's (``provider``, ``provider_missed_tokens``) and
    cacheviz's (``cacheviz``: its own cause of the call's miss or drift, else ``no
    change found``; ``detail``: the evidence, one line).
    """
    if "provider_verdict" not in calls.columns or calls["provider_verdict"].is_null().all():
        return None
    out = verdict_counts(calls["provider_verdict"].to_list(), calls["verdict_agrees"].to_list())
    rows = calls.filter(pl.col("verdict_agrees").not_()).head(_DISAGREEMENTS)
    out["disagreements"] = [
        {
            "call": row["call"],
            "provider": row["provider_verdict"],
            "provider_missed_tokens": row["provider_missed_tokens"],
            "cacheviz": row["own_cause"] or row["drift_cause"] or "no change found",
            "detail": clean(row["verdict_detail"]),
        }
        for row in rows.iter_rows(named=True)
    ]
    return out


def meta(
    analysis: Analysis,
    *,
    ttl_seconds: float | None,
    simulation: Simulation | None,
    compare: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """Totals, names and the target's headline numbers, as JSON-ready values."""
    sim_hit = None
    if simulation is not None:
        sim = simulation.calls
        sim_hit = _hit_ratio(sim["cache_read_tokens"], sim["input_tokens"])
    head = analysis.headline()  # the session's own hit ratio where usage is per session
    reported = head["hit_ratio"]
    return meta_of(
        analysis,
        ttl_seconds=ttl_seconds,
        simulation=simulation,
        compare=compare,
        notes=pricing_notes(analysis, simulation),
        threads=thread_names(analysis),
        hit_ratio=sim_hit,
        reported=(reported["tokens"], reported["requests"]),
        waste=None if head["waste_of"] is None else Waste(head["waste_usd"], **head["waste_of"]),
    )


def meta_of(
    analysis: Analysis,
    *,
    ttl_seconds: float | None,
    simulation: Simulation | None,
    compare: pl.DataFrame | None,
    notes: dict[str, Any],
    threads: list[str],
    hit_ratio: float | None,
    reported: tuple[float | None, float | None],
    waste: Waste | None,
) -> dict[str, Any]:
    """:func:`meta` from its per-call sums (the live inspector keeps them call by call).

    ``notes`` is :func:`pricing_notes`, ``threads`` the thread names in order,
    ``hit_ratio`` the simulation's token hit ratio, ``reported`` the reported hit ratios
    (tokens, requests), ``waste`` the session's waste (:mod:`cacheviz.money._metrics`).

    The target's ``waste_usd`` and ``waste_of`` are the session's under its own replay,
    else the replay's simulated cost above its ideal (no bill to compare with).
    """
    calls = analysis.calls
    target = target_facts(analysis, simulation, hit_ratio=hit_ratio, warning=notes["warning"])
    if target is not None and simulation is not None:
        mine = waste
        if not target["own"]:
            sim = simulation.calls
            mine = waste_of(
                [None] * sim.height, sim["cost_usd"].to_list(), sim["ideal_usd"].to_list()
            )
        target["waste_usd"] = None if mine is None else mine.usd
        target["waste_of"] = None if mine is None else mine.to_dict()
    rows = compare_rows(compare)
    path = analysis.session.path
    out: dict[str, Any] = {
        "path": None if path is None else clean(str(path)),
        "format": analysis.session.format,
        "n_calls": calls.height,
        "threads": [clean(name) for name in threads],
        "thread_parents": _thread_parents(analysis),
        "causes": list(CAUSES),
        "miss_causes": list(MISS_CAUSES),
        "ttl_seconds": ttl_seconds,
        "totals": {
            "input_tokens": int(calls["input_tokens"].sum()),
            "prefix_tokens": int(calls["prefix_tokens"].sum()),
            "new_tokens": int(calls["new_tokens"].sum()),
            "drifts": analysis.drifts.height,
        },
        "reported": {"hit_ratio": reported[0], "hit_ratio_requests": reported[1]},
        "waste_usd": None if waste is None else waste.usd,
        "waste_of": None if waste is None else waste.to_dict(),
        "target": target,
        "models": pricing.priced_models(simulation.provider) if simulation is not None else [],
        "unpriced_models": unpriced_models(analysis, simulation),
        "notice": notes["notice"],
        "compare": rows,
        # false until something asks for the comparison (the notebook builds it lazily)
        "compare_built": compare is not None,
        "approximate": not bool(calls["tokens_exact"].all()) if calls.height else False,
        "reconstructed": bool(calls["reconstructed"].any()) if calls.height else False,
        "verdicts": verdicts(calls),
    }
    billed = getattr(analysis, "billed_usd", None)
    if "billed_usd" in calls.columns or billed is not None:
        out["billed_usd"] = billed
        out["billed_unpriced_models"] = list(getattr(analysis, "unpriced_models", []) or [])
    return redact_all(out)
