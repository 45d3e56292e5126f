"""The cost chart's data: per call, the target's cost, the ideal bound, the billed cost, waste.

``widgets/src/views/costs.js`` draws it (with the target's numbers and the comparison of
:mod:`cacheviz.ui._providers`) as per-call bars and running sums.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from cacheviz.money._metrics import call_waste

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation


def costs(
    simulation: Simulation | None,
    n_calls: int,
    analysis: Analysis | None = None,
    *,
    own: bool = False,
) -> pl.DataFrame:
    """Per call cost under the target, ideal bound, billed cost and waste (null: unknown).

    ``waste_usd`` is each call's waste by the one definition
    (:mod:`cacheviz.money._metrics`): the analysis's own column when ``own`` (the target
    is the session's own replay, on the billed basis where usage was reported), else
    the target's simulated cost above its ideal. A filter's waste is its sum.
    """
    frame = _costs(simulation, n_calls)
    billed = waste = None
    if analysis is not None and "billed_usd" in analysis.calls.columns:
        billed = analysis.calls["billed_usd"].cast(pl.Float64)
        if own and "waste_usd" in analysis.calls.columns:
            waste = analysis.calls["waste_usd"].cast(pl.Float64)
    if billed is None or billed.len() != frame.height:
        billed = pl.Series("billed_usd", [None] * frame.height, dtype=pl.Float64)
    if waste is None or waste.len() != frame.height:
        waste = pl.Series(
            "waste_usd",
            [
                call_waste(None, c, i, billed_basis=False)
                for c, i in zip(frame["cost_usd"], frame["ideal_usd"], strict=True)
            ],
            dtype=pl.Float64,
        )
    return frame.with_columns(billed.alias("billed_usd"), waste.alias("waste_usd"))


def _costs(simulation: Simulation | None, n_calls: int) -> pl.DataFrame:
    if simulation is None:
        return pl.DataFrame(
            {
                "call": pl.int_range(n_calls, eager=True, dtype=pl.Int32),
                "cost_usd": [None] * n_calls,
                "ideal_usd": [None] * n_calls,
                "cache_read_tokens": [0] * n_calls,
                "cache_write_tokens": [0] * n_calls,
                "uncached_tokens": [0] * n_calls,
            },
            schema={
                "call": pl.Int32,
                "cost_usd": pl.Float64,
                "ideal_usd": pl.Float64,
                "cache_read_tokens": pl.Int32,
                "cache_write_tokens": pl.Int32,
                "uncached_tokens": pl.Int32,
            },
        )
    return simulation.calls.select(
        pl.col("call").cast(pl.Int32).alias("call"),
        pl.col("cost_usd"),
        pl.col("ideal_usd").alias("ideal_usd"),
        pl.col("cache_read_tokens").cast(pl.Int32),
        pl.col("cache_write_tokens").cast(pl.Int32),
        pl.col("uncached_tokens").cast(pl.Int32),
    )
