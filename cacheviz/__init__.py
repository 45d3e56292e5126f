"""cacheviz: see where an LLM agent's prompt cache held, where it broke, and why.

>>> import cacheviz
>>> analysis = cacheviz.load("sample_sessions/compaction.jsonl").analyze()  # doctest: +SKIP
>>> analysis.drifts  # doctest: +SKIP
"""

from __future__ import annotations

from cacheviz import _moved
from cacheviz.analysis import Analysis, analyze
from cacheviz.errors import (
    CacheVizError,
    CacheVizWarning,
    EncodingUnavailableError,
    TranscriptError,
    UnknownFormatError,
)
from cacheviz.fleet import ScanResult, scan
from cacheviz.formats import load
from cacheviz.model import Session
from cacheviz.recording import Recorder, record

__version__ = "0.1.0"

_moved.install()


def inspect(source=None, *, live=None, **kwargs):  # noqa: ANN001, ANN003, ANN201 - see cacheviz.ui.widget.inspect
    """Show the inspector for an analysis or a transcript path (imports Jupyter lazily).

    ``live=`` a request log path or a :class:`Recorder` gives the live inspector, which
    follows the log as calls arrive (see :mod:`cacheviz.ui.live`).
    """
    if live is not None:
        from cacheviz.ui.live import LiveInspector

        return LiveInspector(live, **kwargs)
    from cacheviz.ui.widget import inspect as show

    return show(source, **kwargs)


__all__ = [
    "Analysis",
    "CacheVizError",
    "CacheVizWarning",
    "EncodingUnavailableError",
    "Recorder",
    "ScanResult",
    "Session",
    "TranscriptError",
    "UnknownFormatError",
    "__version__",
    "analyze",
    "inspect",
    "load",
    "record",
    "scan",
]
