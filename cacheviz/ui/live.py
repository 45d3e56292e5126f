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

from cacheviz.errors import TranscriptError
from cacheviz.recording import Recorder

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
        self.box.children = built.children
        self.box.inspector = self.inspector  # type: ignore[attr-defined]
        return "built"

    def _update(self, analysis: Any) -> str:
        outcome = self.inspector.update(analysis)
        if outcome in self.updates:
            self.updates[outcome] += 1
        return outcome


__all__ = ["WAITING", "LiveInspector"]
