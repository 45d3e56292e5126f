"""The cost columns of an analysis rebuilt from its frames (the list path, checked on frames).

:func:`cacheviz.analysis.analyze` runs :func:`cacheviz.money._costs.cost_lists` on its lists;
:func:`diagnose_costs` runs it on the frames of a finished analysis, so a test can check
that the two give the same columns and that the input is left alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import polars as pl

from cacheviz import _schema
from cacheviz.analysis import Analysis, PrefixLists
from cacheviz.money._costs import CALL_COSTS, cost_lists
from cacheviz.money._simulate import SIM_INPUTS, Simulation

_DRIFT_COSTS = ("cost_usd", "material")
# the calls columns cost_lists reads
_CALL_INPUTS = (
    *SIM_INPUTS,  # the replay input's
    "namespace",
    "provider_verdict",
    "provider_missed_tokens",
    "rebuild",
    "drift",
)
_DRIFT_INPUTS = ("call", "prev_call", "cause", "part", "detail")


@dataclasses.dataclass(frozen=True, slots=True)
class CostColumns:
    """What :func:`diagnose_costs` adds to an analysis: columns and totals."""

    calls: pl.DataFrame
    """The calls frame with the cost, expected-read and miss columns filled."""
    drifts: pl.DataFrame
    """The drifts frame with ``cost_usd`` and ``material`` filled."""
    misses: pl.DataFrame
    billed_usd: float | None
    unpriced_models: list[str]
    own_simulation: Simulation | None


def diagnose_costs(analysis: Analysis, *, prices: Any = None) -> CostColumns:
    """The cost, drift-cost and miss columns of an ``analysis`` (it is not changed).

    ``analysis`` holds the calls, drifts, token caches and offsets; its cost columns are
    not read.
    """
    frame, drifts = analysis.calls, analysis.drifts
    lists = PrefixLists(
        analysis.session,
        {name: frame[name].to_list() for name in _CALL_INPUTS},
        {name: drifts[name].to_list() for name in _DRIFT_INPUTS},
        analysis.token_caches,
        analysis.offsets,
        analysis.local_offsets,
        analysis.calibration,  # not read
    )
    got = cost_lists(lists, prices=prices)
    own = next(iter(got.runs.values()), None)
    return CostColumns(
        calls=frame.with_columns(
            pl.Series(name, got.calls[name], _schema.CALLS[name]) for name in CALL_COSTS
        ),
        drifts=drifts.with_columns(
            pl.Series(name, got.drifts[name], _schema.DRIFTS[name]) for name in _DRIFT_COSTS
        ),
        misses=_schema.frame(_schema.MISSES, got.misses),
        billed_usd=got.billed_usd,
        unpriced_models=got.unpriced_models,
        own_simulation=None if own is None else own.simulation(),
    )
