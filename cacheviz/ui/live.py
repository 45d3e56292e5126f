"""The live inspector: an inspector that follows a request log while calls arrive.

``rec = cacheviz.record(); rec.inspect()`` (or ``cacheviz.inspect(live="run.jsonl")``)
shows the inspector and keeps it in step. When a call is written, only the new lines are
read and only the new calls are analysed (:mod:`cacheviz.live._incremental`, through
:class:`cacheviz.ui._live_state.LiveState`): the work per appended call does not grow
with the session. The new rows of the three Arrow tables are sent to the front end in
one custom ``append`` message with the new ``meta``; the front end appends them to its
tables and redraws. When earlier rows did change (a call that ended late but was sent
earlier sorts before others, a thread renamed or given TTL evidence), the whole state is
sent instead. A log in another format than the cacheviz request log is analysed again
in full at each change.

Imports Jupyter code: not part of the core.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets

from cacheviz.recording import Recorder
from cacheviz.ui._live_state import LiveState

_LOG = logging.getLogger(__name__)
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
        self._size = -1
        self._shown: Any = None
        if isinstance(source, Recorder):
            self.live = LiveState(_lines_of(source) if source.path is None else source.path)
        else:
            self.live = LiveState(source)
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
        grew, self._size = size != self._size, size
        return grew

    def refresh(self) -> str:
        """Read what was written since the last refresh and update the inspector.

        Returns
        -------
        str
            ``waiting`` (no call yet), ``built`` (first call: the inspector appeared),
            ``appended`` (only new rows sent), ``replaced`` (the whole state sent) or
            ``unchanged``.
        """
        with self._lock:
            if self.inspector is not None and self.inspector.state is not None:
                shown = self.inspector.state  # follow the target the user picked
                self.live.choose(
                    shown.target, shown.targets, with_compare=shown.compare is not None
                )
            log = self.live.log
            if self.live.state is None and log.analysis is not None and log.incremental:
                self.live.rebuild()
            new, appended = self.live.update(full_state=False)
            analysis = log.analysis
            if analysis is None:
                return "waiting"
            if self.inspector is None:
                return self._build(analysis)
            if new is None:  # another format: analysed in full, its rows compared
                if analysis is self._shown:
                    return "unchanged"
                self._shown = analysis
                outcome = self.inspector.update(analysis)
            elif new is self._shown:
                return "unchanged"
            else:
                self._shown = new
                outcome = self.inspector.follow(new, self.live.delta if appended else None)
            if outcome in self.updates:
                self.updates[outcome] += 1
            return outcome

    def _build(self, analysis: Any) -> str:
        from cacheviz.ui.widget import inspect

        built = inspect(analysis, **self.options)
        self.inspector = built
        self.box.children = [built]
        self.box.inspector = self.inspector
        shown = self.inspector.state
        self.live.choose(shown.target, shown.targets, with_compare=shown.compare is not None)

        def compared() -> None:  # the view asked for the comparison: follow it from now on
            self.live.choose(shown.target, shown.targets, with_compare=True)

        built.compare_hook = compared
        # the next call appends to the state shown
        self._shown = self.live.rebuild() if self.live.log.incremental else analysis
        return "built"


def _lines_of(recorder: Recorder) -> Callable[[], list[str]]:
    """A recorder's lines in memory, as :class:`~cacheviz.live._incremental.LiveLog` reads them."""

    def lines() -> list[str]:
        return recorder.lines

    return lines


__all__ = ["WAITING", "LiveInspector"]
