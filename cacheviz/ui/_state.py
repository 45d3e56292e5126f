"""The one inspector state: everything the widget, the live inspector and the report show.

:func:`build` turns an ``(analysis, target)`` into an :class:`InspectorState` — the
target's simulation, the provider comparison, the timeline, shape and cost tables and
the ``meta`` document. The notebook widget, the live inspector and the HTML report only
serialize it, so the three cannot disagree about a number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz import _schema, providers
from cacheviz.errors import CacheVizError
from cacheviz.money import pricing
from cacheviz.money._simulate import compare_row, failure_line
from cacheviz.ui import _costs as costs
from cacheviz.ui import _header as header
from cacheviz.ui import _shape as shape
from cacheviz.ui import _timeline as timeline
from cacheviz.ui._providers import unpriced_models

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation
    from cacheviz.ui._segment_rows import SegmentRows

DEFAULT_TARGETS = tuple(providers.reference_targets())
"""``provider:model`` of each priced vendor's comparable model: the default comparison."""


@dataclass(frozen=True, slots=True)
class Target:
    """The simulation the inspector shows: a provider, its model and its rules.

    ``model`` ``None`` means the recorded models; ``ttl`` and ``breakpoints`` are the
    provider's rules (they apply where its simulator has them).
    """

    provider: str
    model: str | None = None
    ttl: str | None = None
    breakpoints: str | None = None

    def rules(self) -> dict[str, Any]:
        """The rules the provider's simulator takes among ``ttl`` and ``breakpoints``."""
        names = set(providers.simulator_class(self.provider).__dataclass_fields__)
        asked = {"ttl": self.ttl, "breakpoints": self.breakpoints}
        return {k: v for k, v in asked.items() if v is not None and k in names}

    def ttl_seconds(self, analysis: Analysis) -> float | None:
        """The cache lifetime behind the idle marks: the chosen TTL, else the default."""
        found = providers.find(self.provider)
        chosen = found.ttl_seconds(self.ttl) if found is not None else None
        if chosen is not None:
            return chosen
        return timeline.default_ttl_seconds(analysis, self.provider)


def _recorded_provider(analysis: Analysis) -> str | None:
    recorded = analysis.calls["provider"].unique().to_list()
    return recorded[0] if len(recorded) == 1 else None


def default_target(analysis: Analysis) -> Target:
    """The recorded provider (and its recorded models) when it can be simulated."""
    recorded = _recorded_provider(analysis)
    if providers.known(recorded) is not None:
        return Target(str(providers.known(recorded)))
    provider, _, model = DEFAULT_TARGETS[0].partition(":")
    return Target(provider, model)


def model_choices(analysis: Analysis, provider: str) -> tuple[list[tuple[str, str]], str]:
    """The model picker's options for ``provider`` (label, value) and its default.

    The default is :func:`cacheviz.money.pricing.comparable_model`'s (the one rule
    ``simulate`` and ``compare`` follow): the recorded models when ``provider`` prices
    them, else the provider's comparable model, else the closest priced one.
    """
    recorded = analysis.calls["model"].unique(maintain_order=True).to_list()
    models = pricing.priced_models(provider, retired=recorded)  # retired: only the session's
    options = [("recorded models", ""), *[(m, m) for m in models]]
    pairs = analysis.calls.select("provider", "model").unique(maintain_order=True).rows()
    return options, pricing.comparable_model(provider, pairs).model or ""


def comparison_targets(analysis: Analysis) -> list[str]:
    """The recorded ``provider:model`` pairs, then one comparable model per other vendor.

    :func:`cacheviz.providers.comparison_targets` of the session's recorded pairs.
    """
    recorded = analysis.calls.select("provider", "model").unique(maintain_order=True).rows()
    return providers.comparison_targets(recorded)


def resolve_target(
    analysis: Analysis,
    provider: str | None = None,
    model: str | None = None,
    *,
    ttl: str | None = None,
    breakpoints: str | None = None,
) -> Target:
    """The target a user asked for, completed: another vendor gets its comparable model."""
    chosen = default_target(analysis)
    name = providers.known(provider) or provider or chosen.provider
    if name == chosen.provider:
        model = model or chosen.model
    elif model is None:
        model = model_choices(analysis, name)[1] or None
    return Target(name, model, ttl=ttl, breakpoints=breakpoints)


@dataclass(slots=True)
class InspectorState:
    """What every surface shows for one analysis under one target."""

    analysis: Analysis
    target: Target
    simulation: Simulation | None
    compare: pl.DataFrame | None
    ttl_seconds: float | None
    timeline: pl.DataFrame
    shape: pl.DataFrame
    costs: pl.DataFrame
    meta: dict[str, Any]
    status: str = ""
    """Empty, or a one-line message: a failed simulation, models without a price."""
    targets: tuple[str, ...] = field(default=DEFAULT_TARGETS)
    """The ``provider:model`` pairs of the comparison."""


def simulate_target(analysis: Analysis, target: Target) -> Simulation:
    """The target's simulation; the analysis's own one when it is the same replay."""
    own = own_simulation_of(analysis, target)
    if own is not None:
        return own
    return analysis.simulate(target.provider, target.model, unpriced="skip", **target.rules())


def own_simulation_of(analysis: Analysis, target: Target) -> Simulation | None:
    """The analysis's own simulation when it is ``target``'s replay, else ``None``.

    It is when the target is the recorded provider's default rules on each call's own
    model. Shared by :func:`simulate_target` and :class:`cacheviz.ui._live_state.LiveState`.
    """
    own = analysis.own_simulation
    if own is None or target.model is not None or target.rules():
        return None
    return own if own.provider == target.provider else None


def unpriced_status(analysis: Analysis, target: Target, simulation: Simulation | None) -> str:
    """The status line when no model of the target's replay has a price (else ``""``)."""
    missing = unpriced_models(analysis, simulation)
    if missing and simulation is not None and not simulation.total_cost_usd:
        return (
            f"{target.provider}: no price for {', '.join(missing)}; "
            "choose a priced model in the list"
        )
    return ""


def timeline_mode(analysis: Analysis, target: Target, ttl_seconds: float | None) -> Any:
    """The timeline's TTL mode: ``"recorded"`` or ``ttl_seconds``.

    ``"recorded"`` (each thread's own TTL, :mod:`cacheviz.prefix._ttl`) when no TTL is chosen on
    the recorded provider.
    """
    if target.ttl is None and target.provider == _recorded_provider(analysis):
        return "recorded"
    return ttl_seconds


def with_target_row(
    compare: pl.DataFrame | None,
    targets: tuple[str, ...],
    target: Target,
    simulation: Simulation | None,
) -> pl.DataFrame | None:
    """``compare``'s rows of ``targets``, and a row for a self-hosted ``target`` (its own).

    An engine has no prices: the default comparison names none, and its row is where the
    prefill tokens its prefix cache saves are shown (the cost chart's notice says so). Made
    from ``simulation``; a row an earlier target added is dropped.
    """
    if compare is None:
        return compare
    compare = compare.filter(pl.col("target").is_in(list(targets)))
    if simulation is None or target.provider not in providers.self_hosted():
        return compare
    key = target.provider if target.model is None else f"{target.provider}:{target.model}"
    if key in compare["target"].to_list():
        return compare
    row = pl.DataFrame([compare_row(key, simulation)], schema=_schema.COMPARE)
    return pl.concat([compare, row])


def build(
    analysis: Analysis,
    target: Target | None = None,
    *,
    targets: tuple[str, ...] | None = None,
    compare: pl.DataFrame | None = None,
    with_compare: bool = True,
    rows: SegmentRows | None = None,
) -> InspectorState:
    """The inspector state of ``analysis`` under ``target`` (default: the recorded provider).

    ``targets`` are the comparison's ``provider:model`` pairs (default:
    :func:`comparison_targets`); ``compare`` passes a comparison already computed (it does
    not depend on the target); ``with_compare=False`` skips it; ``rows`` are the segment
    rows the shape is read from (:func:`cacheviz.ui._segment_rows.report_rows`, computed when not
    given). A simulation that fails leaves the tables without target numbers and says
    why in ``status``; a comparison target that fails is its row's ``error`` (the other
    rows are computed).
    """
    target = target or default_target(analysis)
    targets = tuple(targets) if targets else tuple(comparison_targets(analysis))
    status = ""
    simulation: Simulation | None = None
    try:
        simulation = simulate_target(analysis, target)
    except Exception as exc:  # the view shows why; the rest of it is still drawn
        status = f"{target.provider}: {failure_line(exc)}"
    if compare is None and with_compare:
        try:
            compare = analysis.compare(list(targets))  # a failed target: its row's error
        except (CacheVizError, ValueError) as exc:  # a target names no known provider
            status = status or f"comparison: {exc}"
    compare = with_target_row(compare, targets, target, simulation)
    ttl_seconds = target.ttl_seconds(analysis)
    status = status or unpriced_status(analysis, target, simulation)
    return InspectorState(
        analysis=analysis,
        target=target,
        simulation=simulation,
        compare=compare,
        ttl_seconds=ttl_seconds,
        timeline=timeline.timeline(analysis, timeline_mode(analysis, target, ttl_seconds)),
        shape=shape.shape_runs(analysis, rows),
        costs=costs.costs(simulation, analysis.calls.height, analysis),
        meta=header.meta(analysis, ttl_seconds=ttl_seconds, simulation=simulation, compare=compare),
        status=status,
        targets=targets,
    )


def rebuild(state: InspectorState, analysis: Analysis) -> InspectorState:
    """``state``'s target on a new analysis of the same session (the live inspector).

    The comparison is recomputed only if the old state had one.
    """
    return build(
        analysis, state.target, targets=state.targets, with_compare=state.compare is not None
    )


__all__ = [
    "DEFAULT_TARGETS",
    "InspectorState",
    "Target",
    "build",
    "comparison_targets",
    "default_target",
    "model_choices",
    "own_simulation_of",
    "rebuild",
    "resolve_target",
    "simulate_target",
    "timeline_mode",
    "unpriced_status",
    "with_target_row",
]
