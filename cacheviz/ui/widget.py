"""The notebook inspector: an anywidget view of an analysis, plus ipywidgets controls.

Synced state (the front end is ``widgets/src/inspector.js``, built into ``static/``):

=================  =========  ================  ==========================================
trait              direction  wire type         contents
=================  =========  ================  ==========================================
``_timeline``      Py→JS      bytes (Arrow)     one row per call (:func:`views.timeline`)
``_shape``         Py→JS      bytes (Arrow)     status runs per call (:func:`views.shape_runs`)
``_costs``         Py→JS      bytes (Arrow)     per call: simulated, ideal and billed cost
``meta``           Py→JS      dict (JSON)       totals, threads, target, models, comparison
``selected_call``  both       int               the call every view highlights (-1: none)
``_detail``        Py→JS      dict (JSON)       drift, miss, what the call sent (capped)
``status``         Py→JS      str               "simulating…", or an error to show
=================  =========  ================  ==========================================

Text never travels in bulk: the detail is computed for the selected call only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import ipywidgets
import traitlets

from cacheviz.errors import CacheVizError
from cacheviz.simulate import SIMULATORS
from cacheviz.static import bundle
from cacheviz.ui import views

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.simulate import Simulation

_LOG = logging.getLogger(__name__)
DEFAULT_TARGETS = (
    "anthropic:claude-sonnet-4-5",
    "openai:gpt-5",
    "deepseek:deepseek-chat",
    "google:gemini-2.5-pro",
)
_TTLS = {"5m": 300, "1h": 3600}


def default_target(analysis: Analysis) -> tuple[str, str | None]:
    """The recorded provider (and its recorded models) when it can be simulated."""
    providers = analysis.calls["provider"].unique().to_list()
    if len(providers) == 1 and providers[0] in SIMULATORS:
        return providers[0], None
    return "anthropic", "claude-sonnet-4-5"


_MISSING_BUNDLE = """
export default { render({ el }) {
  el.textContent = "cacheviz: the inspector's front end is not built (static/inspector.js). "
    + "Run `make widgets` in the cacheviz checkout.";
} };
"""


def _bundle() -> str:
    """The built front end (plotly and the inspector), or a module that says how to build it."""
    return bundle("inspector.js") or _MISSING_BUNDLE


class Inspector(anywidget.AnyWidget):
    """Timeline, cache shape map, drift detail and provider costs of one analysis."""

    _esm = _bundle()
    _timeline = traitlets.Bytes(b"").tag(sync=True)
    _shape = traitlets.Bytes(b"").tag(sync=True)
    _costs = traitlets.Bytes(b"").tag(sync=True)
    meta = traitlets.Dict().tag(sync=True)
    """Totals, thread and cause names, the target's numbers and the provider comparison."""
    selected_call = traitlets.Int(-1).tag(sync=True)
    """The call every view highlights; -1 for none. Set it from Python or click a call."""
    _detail = traitlets.Dict().tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        analysis: Analysis,
        *,
        provider: str | None = None,
        model: str | None = None,
        ttl: str | None = None,
        breakpoints: str | None = None,
        targets: tuple[str, ...] = DEFAULT_TARGETS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.analysis = analysis
        self.targets = targets
        self.simulation: Simulation | None = None
        self._compare: Any = None  # the provider comparison: it doesn't depend on the controls
        self._timeline = views.ipc(views.timeline(analysis, _TTLS.get(ttl or "5m", 300)))
        self._shape = views.ipc(views.shape_runs(analysis))
        chosen, chosen_model = default_target(analysis)
        self.resimulate(
            provider or chosen,
            model if provider else (model or chosen_model),
            ttl=ttl,
            breakpoints=breakpoints,
        )

    def __repr__(self) -> str:
        # cheap: no trait serialization (anywidget's advice)
        return f"<Inspector {self.analysis!r}>"

    def resimulate(
        self,
        provider: str,
        model: str | None = None,
        *,
        ttl: str | None = None,
        breakpoints: str | None = None,
    ) -> None:
        """Re-run the target simulation and redraw the costs (errors go to ``status``)."""
        rules: dict[str, Any] = {}
        if ttl is not None and provider == "anthropic":
            rules["ttl"] = ttl
        if breakpoints is not None and provider == "anthropic":
            rules["breakpoints"] = breakpoints
        self.status = "simulating…"
        try:
            own = self.analysis.own_simulation  # the analysis replayed its own provider already
            if own is not None and model is None and not rules and own.provider == provider:
                self.simulation = own
            else:
                self.simulation = self.analysis.simulate(provider, model, unpriced="skip", **rules)
            if self._compare is None:
                self._compare = self.analysis.compare(list(self.targets))
        except (CacheVizError, ValueError) as exc:
            _LOG.exception("simulation failed")
            self.status = f"{provider}: {exc}"
            return
        ttl_seconds = _TTLS.get(ttl or "5m", 300)
        if self.meta.get("ttl_seconds") not in (None, ttl_seconds):  # idle gaps depend on it
            self._timeline = views.ipc(views.timeline(self.analysis, ttl_seconds))
        self._costs = views.ipc(
            views.costs(self.simulation, self.analysis.calls.height, self.analysis)
        )
        self.meta = views.meta(
            self.analysis,
            ttl_seconds=ttl_seconds,
            simulation=self.simulation,
            compare=self._compare,
        )
        missing = views.unpriced_models(self.analysis, self.simulation)
        self.status = (
            f"{provider}: no price for {', '.join(missing)}; choose a priced model in the list"
            if missing and not self.simulation.total_cost_usd
            else ""
        )
        self._show_detail()

    @traitlets.observe("selected_call")
    def _selected(self, _: Any) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        if self.selected_call < 0:
            self._detail = {}
            return
        try:
            self._detail = views.drift_detail(
                self.analysis, self.selected_call, simulation=self.simulation
            )
        except Exception as exc:
            _LOG.exception("drift detail failed")
            self._detail = {"call": self.selected_call, "error": str(exc)}

    def selected(self) -> dict[str, Any]:
        """The selected call's row of ``analysis.calls`` (empty when none is selected)."""
        if self.selected_call < 0:
            return {}
        return self.analysis.calls.row(self.selected_call, named=True)


def model_choices(analysis: Analysis, provider: str) -> tuple[list[tuple[str, str]], str]:
    """The model picker's options for ``provider`` (label, value) and its default.

    The default is the recorded models when ``provider`` prices them, else the provider's
    comparable model, else the closest priced one.
    """
    recorded = analysis.calls["model"].unique(maintain_order=True).to_list()
    models = views.priced_models(provider)
    options = [("recorded models", ""), *[(m, m) for m in models]]
    same = provider in analysis.calls["provider"].unique().to_list()
    if provider in views.SELF_HOSTED or (same and all(m in models for m in recorded)):
        return options, ""
    if not same:  # another vendor: its comparable model, as in the provider comparison
        for target in DEFAULT_TARGETS:
            name, _, model = target.partition(":")
            if name == provider and model in models:
                return options, model
    return options, views.closest_model(recorded, models) or ""


def inspect(
    source: Analysis | str | Path,
    *,
    provider: str | None = None,
    model: str | None = None,
    ttl: str | None = None,
    breakpoints: str | None = None,
) -> ipywidgets.VBox:
    """The inspector with its controls (provider, model, TTL, breakpoint strategy).

    Parameters
    ----------
    source
        An :class:`~cacheviz.analysis.Analysis`, or a transcript path to load and analyse.
    provider, model, ttl, breakpoints
        The target simulation shown in the providers view (default: the recorded
        provider and models).
    """
    from cacheviz.analysis import Analysis
    from cacheviz.formats import load

    analysis = source if isinstance(source, Analysis) else load(source).analyze()
    inspector = Inspector(
        analysis, provider=provider, model=model, ttl=ttl, breakpoints=breakpoints
    )
    current = inspector.simulation
    provider_box = ipywidgets.Dropdown(
        options=list(SIMULATORS),
        value=current.provider if current else "anthropic",
        description="provider",
    )
    options, _default = model_choices(analysis, provider_box.value)
    chosen = (current.model or "") if current else ""
    model_box = ipywidgets.Dropdown(
        options=options if chosen in {v for _, v in options} else [*options, (chosen, chosen)],
        value=chosen,
        description="model",
    )
    ttl_box = ipywidgets.Dropdown(options=["5m", "1h"], value=ttl or "5m", description="TTL")
    strategy_box = ipywidgets.Dropdown(
        options=["recorded", "auto", "kilocode", "none"],
        value=breakpoints or "recorded",
        description="breakpoints",
    )

    switching = False

    def switch_provider(change: Any) -> None:
        nonlocal switching
        switching = True  # one simulation for the provider and its default model
        try:
            options, default = model_choices(analysis, change["new"])
            model_box.options = options
            model_box.value = default
        finally:
            switching = False
        rerun()

    def rerun(_: Any = None) -> None:
        if switching:
            return
        inspector.resimulate(
            provider_box.value,
            model_box.value or None,
            ttl=ttl_box.value,
            breakpoints=strategy_box.value,
        )

    provider_box.observe(switch_provider, names="value")
    for control in (model_box, ttl_box, strategy_box):
        control.observe(rerun, names="value")
    controls = ipywidgets.HBox([provider_box, model_box, ttl_box, strategy_box])
    box = ipywidgets.VBox([controls, inspector])
    box.inspector = inspector  # type: ignore[attr-defined]
    box.controls = {  # type: ignore[attr-defined]
        "provider": provider_box,
        "model": model_box,
        "ttl": ttl_box,
        "breakpoints": strategy_box,
    }
    return box
