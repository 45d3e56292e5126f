"""The live inspector: an inspector that follows a request log while calls arrive.

``rec = cacheviz.record(); rec.inspect()`` (or ``cacheviz.inspect(live="run.jsonl")``)
shows the inspector and keeps it in step: when a call is written, the log is analysed
again and, when the earlier calls' rows are unchanged (the usual case: a new call only
adds rows), only the new rows of the three Arrow tables are sent to the front end, in
one custom ``append`` message with the new ``meta``; the front end appends them to its
tables and redraws. When earlier rows did change (a call that ended late but was sent
earlier sorts before others), the whole state is sent instead.

The Python side of the widget is ``cacheviz.ui.widget`` (unchanged); this module only
feeds it. Imports Jupyter code: not part of the core.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import ipywidgets
import polars as pl

from cacheviz.errors import CacheVizError, TranscriptError
from cacheviz.recording import Recorder
from cacheviz.ui import views

_LOG = logging.getLogger(__name__)
_TTLS = {"5m": 300, "1h": 3600}
WAITING = "cacheviz: waiting for the first call…"


class LiveInspector:
    """An inspector box that follows a :class:`~cacheviz.recording.Recorder` or a log file.

    Parameters
    ----------
    source
        A recorder (updates when it writes a line) or the path of a log (checked for
        growth every ``poll`` seconds).
    provider, model, ttl, breakpoints
        The target simulation, as in :func:`cacheviz.inspect`.
    poll
        Seconds between checks of a log file.
    """

    def __init__(
        self,
        source: Recorder | str | Path,
        *,
        provider: str | None = None,
        model: str | None = None,
        ttl: str | None = None,
        breakpoints: str | None = None,
        poll: float = 0.5,
    ) -> None:
        self.source = source
        self.options = {
            "provider": provider,
            "model": model,
            "ttl": ttl,
            "breakpoints": breakpoints,
        }
        self.poll = poll
        self.box = ipywidgets.VBox([ipywidgets.HTML(WAITING)])
        self.inspector: Any = None
        self.updates = {"appended": 0, "replaced": 0}
        self._frames: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame] | None = None
        self._rules: dict[str, Any] = {"ttl": ttl, "breakpoints": breakpoints}
        self._size = -1
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        if isinstance(source, Recorder):
            source.writer.listeners.append(self._written)
        self.refresh()
        self._thread = threading.Thread(target=self._follow, name="cacheviz-live", daemon=True)
        self._thread.start()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)

    def stop(self) -> None:
        """Stop following the log (the inspector stays as it is)."""
        self._stop.set()
        self._wake.set()
        if isinstance(self.source, Recorder) and self._written in self.source.writer.listeners:
            self.source.writer.listeners.remove(self._written)

    def _written(self, _line: str) -> None:
        self._wake.set()

    def _follow(self) -> None:
        while not self._stop.is_set():
            woke = self._wake.wait(self.poll)
            self._wake.clear()
            if self._stop.is_set():
                return
            if woke or self._grew():
                try:
                    self.refresh()
                except Exception as exc:  # the thread must live on; say it in the widget
                    _LOG.exception("live update failed")
                    if self.inspector is not None:
                        self.inspector.status = f"live update failed: {exc}"

    def _grew(self) -> bool:
        if isinstance(self.source, Recorder):
            return False
        try:
            size = Path(self.source).stat().st_size
        except OSError:
            return False
        return size != self._size

    def _analysis(self) -> Any:
        """The log analysed, or ``None`` while it holds no call."""
        if isinstance(self.source, Recorder):
            if not self.source.lines:
                return None
            session = self.source.session(errors="skip")
        else:
            from cacheviz.formats import load

            path = Path(self.source)
            if not path.exists() or path.stat().st_size == 0:
                return None
            self._size = path.stat().st_size
            try:
                session = load(path, errors="skip")
            except TranscriptError:
                return None  # nothing complete yet
        return session.analyze()

    def refresh(self) -> str:
        """Analyse the log again and update the inspector.

        Returns
        -------
        str
            ``waiting`` (no call yet), ``built`` (first call: the inspector appeared),
            ``appended`` (only new rows sent), ``replaced`` (the whole state sent) or
            ``unchanged``.
        """
        with self._lock:
            analysis = self._analysis()
            if analysis is None:
                return "waiting"
            if self.inspector is None:
                return self._build(analysis)
            return self._update(analysis)

    def _build(self, analysis: Any) -> str:
        from cacheviz.ui.widget import inspect

        built = inspect(analysis, **self.options)
        self.inspector = built.inspector
        self._remember_settings(self.inspector)
        self._frames = self._tables(analysis)[:3]
        self.box.children = built.children
        self.box.inspector = self.inspector  # type: ignore[attr-defined]
        return "built"

    def _remember_settings(self, inspector: Any) -> None:
        """Follow the controls: remember what the inspector last simulated."""
        original = inspector.resimulate

        def resimulate(provider: str, model: str | None = None, **rules: Any) -> None:
            self._rules = rules
            original(provider, model, **rules)
            with self._lock:
                if self.inspector is not None and self._frames is not None:
                    self._frames = self._tables(self.inspector.analysis)[:3]

        inspector.resimulate = resimulate

    def _tables(self, analysis: Any) -> tuple[Any, ...]:
        """Timeline, shape and cost frames, the simulation and the provider comparison."""
        inspector = self.inspector
        ttl_seconds = _TTLS.get(self._rules.get("ttl") or "5m", 300)
        simulation = getattr(inspector, "simulation", None)
        if simulation is not None:
            rules = {k: v for k, v in self._rules.items() if v is not None}
            if simulation.provider != "anthropic":
                rules = {}
            try:
                simulation = analysis.simulate(
                    simulation.provider, simulation.model, unpriced="skip", **rules
                )
            except (CacheVizError, ValueError):
                simulation = None
        compare = None
        if inspector is not None and inspector._compare is not None:
            try:
                compare = analysis.compare(list(inspector.targets))
            except (CacheVizError, ValueError):
                compare = None
        return (
            views.timeline(analysis, ttl_seconds),
            views.shape_runs(analysis),
            views.costs(simulation, analysis.calls.height),
            simulation,
            compare,
            ttl_seconds,
        )

    def _update(self, analysis: Any) -> str:
        inspector = self.inspector
        timeline, shape, costs, simulation, compare, ttl_seconds = self._tables(analysis)
        meta = views.meta(analysis, ttl_seconds=ttl_seconds, simulation=simulation, compare=compare)
        old = self._frames
        assert old is not None
        n_old = old[0].height
        inspector.analysis, inspector.simulation = analysis, simulation
        inspector._compare = compare
        self._frames = (timeline, shape, costs)
        if timeline.height == n_old and timeline.equals(old[0]) and costs.equals(old[2]):
            return "unchanged"
        appended = (
            timeline.height > n_old
            and timeline.head(n_old).equals(old[0])
            and shape.filter(pl.col("call") < n_old).equals(old[1])
            and costs.head(n_old).equals(old[2])
        )
        state = {
            "_timeline": views.ipc(timeline),
            "_shape": views.ipc(shape),
            "_costs": views.ipc(costs),
            "meta": meta,
        }
        if appended and hasattr(inspector, "_lock_property"):
            buffers = [
                views.ipc(timeline.slice(n_old)),
                views.ipc(shape.filter(pl.col("call") >= n_old)),
                views.ipc(costs.slice(n_old)),
            ]
            inspector.send({"type": "append", "meta": meta}, buffers)
            # the Python side's state follows without sending it again (the front end
            # already has it): ipywidgets skips a value equal to the locked one
            with inspector._lock_property(**state):
                for name, value in state.items():
                    setattr(inspector, name, value)
            self.updates["appended"] += 1
            return "appended"
        with inspector.hold_sync():
            for name, value in state.items():
                setattr(inspector, name, value)
        self.updates["replaced"] += 1
        return "replaced"


def inspect_live(source: Recorder | str | Path, **options: Any) -> LiveInspector:
    """The live inspector of a recorder or a log path (see :class:`LiveInspector`)."""
    return LiveInspector(source, **options)


__all__ = ["WAITING", "LiveInspector", "inspect_live"]
