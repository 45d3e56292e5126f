"""The notebook inspector: one anywidget, its controls included (any front end shows it).

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
``provider``       both       str               the target's provider (a control)
``model``          both       str               its model, ``""`` for the recorded models
``ttl``            both       str               its cache TTL, ``""`` as recorded
``breakpoints``    both       str               its breakpoint strategy, ``""`` as recorded
``_choices``       Py→JS      dict (JSON)       each control's options; ``{}``: no controls
``_found``         Py→JS      dict (JSON)       the full-text search's results
=================  =========  ================  ==========================================

The front end (``_esm`` and two traits of its own) is shipped once per kernel and per
page by :class:`cacheviz.ui._frontend.SharedEsmWidget`.

Custom messages from the front end: ``{"type": "compare"}`` builds the provider
comparison (it is not built before something asks for it), ``{"type": "search",
"text": ...}`` searches every call's segments (:func:`cacheviz.ui._search.search`).

Text never travels in bulk: the detail is computed for the selected call only.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import traitlets

from cacheviz import providers
from cacheviz.ui import _header as header
from cacheviz.ui import _state as state
from cacheviz.ui._detail import drift_detail
from cacheviz.ui._frontend import SharedEsmWidget
from cacheviz.ui._search import search_segments
from cacheviz.ui._shared import ipc

if TYPE_CHECKING:
    from collections.abc import Callable

    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation

_LOG = logging.getLogger(__name__)


class Inspector(SharedEsmWidget):
    """Timeline, cache shape map, drift detail and provider costs of one analysis.

    It shows an :class:`~cacheviz.ui._state.InspectorState` (``state``): every number comes
    from :func:`cacheviz.ui._state.build`, as in the report and the live inspector.
    """

    _timeline = traitlets.Bytes(b"").tag(sync=True)
    _shape = traitlets.Bytes(b"").tag(sync=True)
    _costs = traitlets.Bytes(b"").tag(sync=True)
    meta = traitlets.Dict().tag(sync=True)
    """Totals, thread and cause names, the target's numbers and the provider comparison."""
    selected_call = traitlets.Int(-1).tag(sync=True)
    """The call every view highlights; -1 for none. Set it from Python or click a call."""
    _detail = traitlets.Dict().tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    provider = traitlets.Unicode("").tag(sync=True)
    """The target's provider; setting it (the control, or Python) re-simulates."""
    model = traitlets.Unicode("").tag(sync=True)
    """The target's model (``""``: the recorded models); setting it re-simulates."""
    ttl = traitlets.Unicode("").tag(sync=True)
    """The target's cache TTL (``""``: as recorded); setting it re-simulates."""
    breakpoints = traitlets.Unicode("").tag(sync=True)
    """The target's breakpoint strategy (``""``: as recorded); setting it re-simulates."""
    _choices = traitlets.Dict().tag(sync=True)
    _found = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        analysis: Analysis,
        *,
        provider: str | None = None,
        model: str | None = None,
        ttl: str | None = None,
        breakpoints: str | None = None,
        targets: tuple[str, ...] | None = None,
        controls: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.analysis = analysis
        self.targets = tuple(targets) if targets else tuple(state.comparison_targets(analysis))
        self.state: state.InspectorState | None = None
        self._controls = controls
        self._applying = False
        self.compare_hook: Callable[[], None] | None = None
        """Called once the comparison is built (the live inspector then keeps it)."""
        target = state.resolve_target(analysis, provider, model, ttl=ttl, breakpoints=breakpoints)
        self.resimulate(target.provider, target.model, ttl=ttl, breakpoints=breakpoints)
        # a view opens on a call worth reading, as the report does
        self.selected_call = state.opening_call(analysis)
        self.on_msg(self._message)

    @property
    def inspector(self) -> Inspector:
        """The widget itself (``cacheviz.inspect(...).inspector`` of the former box)."""
        return self

    @property
    def compare(self) -> pl.DataFrame | None:
        """The provider comparison, built on first use (the view asks when it is shown)."""
        if self.state is not None and self.state.compare is None:
            self._build_compare()
        return self.state.compare if self.state is not None else None

    def _build_compare(self) -> None:
        old = self.state
        if old is None or old.compare is not None:
            return
        compare, status = state.compare_of(self.analysis, self.targets)
        compare = state.with_target_row(compare, self.targets, old.target, old.simulation)
        old.compare = compare
        old.meta = header.meta(
            self.analysis,
            ttl_seconds=old.ttl_seconds,
            simulation=old.simulation,
            compare=compare,
        )
        self.meta = old.meta
        if self.compare_hook is not None:
            self.compare_hook()
        if status and not self.status:
            self.status = status

    def _message(self, _: Any, content: Any, buffers: Any = None) -> None:
        """The front end's requests: the comparison, a full-text search."""
        kind = content.get("type") if isinstance(content, dict) else None
        try:
            if kind == "compare":
                self._build_compare()
            elif kind == "search":
                text = str(content.get("text") or "")
                self._found = search_segments(self.analysis, text)
        except Exception as exc:  # the view shows why; the kernel goes on
            _LOG.exception("inspector request %s failed", kind)
            self.status = f"{kind}: {exc}"

    def _choices_of(self, provider: str) -> dict[str, Any]:
        """Each control's options (label, value) for ``provider``; ``{}`` without controls."""
        if not self._controls:
            return {}
        models, _default = state.model_choices(self.analysis, provider)
        if self.model and self.model not in {v for _, v in models}:
            models = [*models, (self.model, self.model)]
        return {
            "provider": [[p, p] for p in providers.ids()],
            "model": [list(m) for m in models],
            "ttl": [["as recorded", ""], *[[t, t] for t in providers.rule_choices("ttl")]],
            "breakpoints": [
                [b, "" if b == "recorded" else b] for b in providers.rule_choices("breakpoints")
            ],
        }

    @traitlets.observe("provider", "model", "ttl", "breakpoints")
    def _control_changed(self, change: Any) -> None:
        if self._applying:
            return
        if change["name"] == "provider":
            # another provider: its default model (the recorded models on the session's own)
            _options, default = state.model_choices(self.analysis, change["new"])
            self._applying = True
            try:
                self.model = default
            finally:
                self._applying = False
        self.resimulate(
            self.provider,
            self.model or None,
            ttl=self.ttl or None,
            breakpoints=self.breakpoints or None,
        )

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
        """Re-run the target simulation and redraw the costs (errors go to ``status``).

        The controls follow (``provider``, ``model``, ``ttl``, ``breakpoints``).
        """
        self.status = "simulating…"
        target = state.Target(provider, model, ttl=ttl, breakpoints=breakpoints)
        compare = self.state.compare if self.state is not None else None
        new = state.build(
            self.analysis, target, targets=self.targets, compare=compare, with_compare=False
        )
        self._applying = True
        try:  # the controls show what was asked, whether or not it could be simulated
            with self.hold_sync():
                self.provider = provider
                self.model = model or ""
                self.ttl = ttl or ""
                self.breakpoints = "" if breakpoints in (None, "recorded") else breakpoints
                self._choices = self._choices_of(provider)
        finally:
            self._applying = False
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
) -> Inspector:
    """The inspector with its controls (provider, model, TTL, breakpoint strategy).

    One anywidget: JupyterLab, Notebook 7, VS Code, Voilà and marimo show it as it is.

    Parameters
    ----------
    source
        An :class:`~cacheviz.analysis.Analysis`, or a transcript path to load and analyse.
    provider, model, ttl, breakpoints
        The target simulation shown in the providers view (default: the recorded
        provider and models); the controls start there.
    """
    from cacheviz.analysis import Analysis
    from cacheviz.formats import load

    analysis = source if isinstance(source, Analysis) else load(source).analyze()
    return Inspector(analysis, provider=provider, model=model, ttl=ttl, breakpoints=breakpoints)
