"""The notebook inspector: an anywidget view of an analysis, plus ipywidgets controls.

Synced state (the front end is ``widgets/src/inspector.js``, built into ``static/``):

=================  =========  ================  ==========================================
trait              direction  wire type         contents
=================  =========  ================  ==========================================
``_timeline``      Py→JS      bytes (Arrow)     one row per call (:mod:`._timeline`)
``_shape``         Py→JS      bytes (Arrow)     status runs per call (:mod:`._shape`)
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
import polars as pl
import traitlets

from cacheviz import providers
from cacheviz.static import bundle
from cacheviz.ui import _state as state
from cacheviz.ui._detail import drift_detail
from cacheviz.ui._shared import ipc

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation

_LOG = logging.getLogger(__name__)
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
    """Timeline, cache shape map, drift detail and provider costs of one analysis.

    It shows an :class:`~cacheviz.ui._state.InspectorState` (``state``): every number comes
    from :func:`cacheviz.ui._state.build`, as in the report and the live inspector.
    """

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
        targets: tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.analysis = analysis
        self.targets = tuple(targets) if targets else tuple(state.comparison_targets(analysis))
        self.state: state.InspectorState | None = None
        target = state.resolve_target(analysis, provider, model, ttl=ttl, breakpoints=breakpoints)
        self.resimulate(target.provider, target.model, ttl=ttl, breakpoints=breakpoints)

    @property
    def simulation(self) -> Simulation | None:
        """The target's simulation (``None`` when it failed)."""
        return self.state.simulation if self.state is not None else None

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
        self.status = "simulating…"
        target = state.Target(provider, model, ttl=ttl, breakpoints=breakpoints)
        compare = self.state.compare if self.state is not None else None
        new = state.build(self.analysis, target, targets=self.targets, compare=compare)
        if new.simulation is None and self.state is not None:
            _LOG.error("simulation failed: %s", new.status)
            self.status = new.status  # keep showing the last simulation that worked
            return
        self._show(new)

    def update(self, analysis: Analysis) -> str:
        """Show a new analysis of the same session under the same target (the live view).

        Returns
        -------
        str
            ``unchanged``, ``appended`` (only the new calls' rows were sent) or ``replaced``.
        """
        old = self.state
        assert old is not None
        new = state.rebuild(old, analysis)
        self.analysis = analysis
        n_old = old.timeline.height
        if new.timeline.equals(old.timeline) and new.costs.equals(old.costs):
            self.state = new
            return "unchanged"
        appended = (
            new.timeline.height > n_old
            and new.timeline.head(n_old).equals(old.timeline)
            and new.shape.filter(pl.col("call") < n_old).equals(old.shape)
            and new.costs.head(n_old).equals(old.costs)
        )
        if not appended:
            self._show(new)
            return "replaced"
        self.state = new
        buffers = [
            ipc(new.timeline.slice(n_old)),
            ipc(new.shape.filter(pl.col("call") >= n_old)),
            ipc(new.costs.slice(n_old)),
        ]
        self.send({"type": "append", "meta": new.meta}, buffers)
        # the Python side's state follows without sending it again (the front end has it)
        self._quietly(self._traits_of(new))
        self.status = new.status
        return "appended"

    def follow(
        self,
        new: state.InspectorState,
        rows: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame] | None,
    ) -> str:
        """Show ``new``, a state that followed this one's log (the live inspector).

        ``rows`` are the new calls' timeline, shape and cost rows when the earlier rows
        are unchanged (:class:`cacheviz.ui._live_state.LiveState`): only they are sent,
        in one ``append`` message with the new ``meta``. ``None`` sends the whole state.

        Returns
        -------
        str
            ``unchanged``, ``appended`` or ``replaced``.
        """
        old = self.state
        if new is old:
            return "unchanged"
        self.analysis = new.analysis
        if old is None or rows is None:
            self._show(new)
            return "replaced"
        self.state = new
        timeline, shape, costs = rows
        self.send(
            {"type": "append", "meta": new.meta},
            [ipc(timeline), ipc(shape), ipc(costs)],
        )
        traits: dict[str, Any] = {"meta": new.meta}
        for name, part in zip(("_timeline", "_shape", "_costs"), rows, strict=True):
            grown = _ipc_append(getattr(self, name), part)
            traits[name] = grown if grown is not None else ipc(getattr(new, name[1:]))
        self._quietly(traits)
        self.status = new.status
        return "appended"

    def _quietly(self, traits: dict[str, Any]) -> None:
        """Set the traits the front end already has, without sending them again."""
        # ipywidgets skips a value equal to the locked one
        with self._lock_property(**traits):
            for name, value in traits.items():
                setattr(self, name, value)

    @staticmethod
    def _traits_of(new: state.InspectorState) -> dict[str, Any]:
        return {
            "_timeline": ipc(new.timeline),
            "_shape": ipc(new.shape),
            "_costs": ipc(new.costs),
            "meta": new.meta,
        }

    def _show(self, new: state.InspectorState) -> None:
        old, self.state = self.state, new
        traits = self._traits_of(new)
        if old is not None and old.timeline.equals(new.timeline):
            traits.pop("_timeline")
        if old is not None and old.shape.equals(new.shape):
            traits.pop("_shape")
        with self.hold_sync():
            for name, value in traits.items():
                setattr(self, name, value)
            self.status = new.status
        self._show_detail()

    @traitlets.observe("selected_call")
    def _selected(self, _: Any) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        if self.selected_call < 0:
            self._detail = {}
            return
        try:
            self._detail = drift_detail(
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


_CONTINUATION = b"\xff\xff\xff\xff"
_END = _CONTINUATION + b"\x00\x00\x00\x00"  # an Arrow IPC stream's end-of-stream marker


def _schema_end(stream: bytes) -> int:
    """Where an Arrow IPC stream's first message (its schema, no body) ends; -1 if unsure."""
    if stream[:4] != _CONTINUATION or len(stream) < 8:
        return -1
    return 8 + int.from_bytes(stream[4:8], "little")


def _ipc_append(stream: bytes, rows: pl.DataFrame) -> bytes | None:
    """``stream`` (an Arrow IPC stream) with ``rows`` as more record batches, or ``None``.

    The stream of the whole table without serializing it again: the old stream's
    batches, then the new rows' (same schema), then the end marker. ``None`` when the
    schemas differ or the stream is not one :func:`~cacheviz.ui._shared.ipc` wrote.
    """
    part = ipc(rows)
    old_end, new_end = _schema_end(stream), _schema_end(part)
    if old_end < 0 or new_end < 0 or not stream.endswith(_END):
        return None
    if stream[:old_end] != part[:new_end]:
        return None
    return stream[: -len(_END)] + part[new_end:]


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
        options=list(providers.ids()),
        value=current.provider if current else state.default_target(analysis).provider,
        description="provider",
    )
    options, _default = state.model_choices(analysis, provider_box.value)
    chosen = (current.model or "") if current else ""
    model_box = ipywidgets.Dropdown(
        options=options if chosen in {v for _, v in options} else [*options, (chosen, chosen)],
        value=chosen,
        description="model",
    )
    ttls = providers.rule_choices("ttl")
    ttl_box = ipywidgets.Dropdown(options=list(ttls), value=ttl or ttls[0], description="TTL")
    strategies = providers.rule_choices("breakpoints")
    strategy_box = ipywidgets.Dropdown(
        options=list(strategies),
        value=breakpoints or strategies[0],
        description="breakpoints",
    )

    switching = False

    def switch_provider(change: Any) -> None:
        nonlocal switching
        switching = True  # one simulation for the provider and its default model
        try:
            options, default = state.model_choices(analysis, change["new"])
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
    box.inspector = inspector
    box.controls = {
        "provider": provider_box,
        "model": model_box,
        "ttl": ttl_box,
        "breakpoints": strategy_box,
    }
    return box
