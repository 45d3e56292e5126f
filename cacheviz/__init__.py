"""cacheviz: see where an LLM agent's prompt cache held, where it broke, and why.

>>> import cacheviz
>>> analysis = cacheviz.load("sample_sessions/compaction.jsonl").analyze()  # doctest: +SKIP
>>> analysis.drifts  # doctest: +SKIP
"""

from __future__ import annotations

from cacheviz.analysis import Analysis, analyze
from cacheviz.errors import (
    CacheVizError,
    CacheVizWarning,
    EncodingUnavailableError,
    TranscriptError,
    UnknownFormatError,
)
from cacheviz.formats import load
from cacheviz.model import Session
from cacheviz.recording import Recorder, record

__version__ = "0.1.0"


def inspect(source, **kwargs):  # noqa: ANN001, ANN003, ANN201 - see cacheviz.widget.inspect
    """Show the inspector for an analysis or a transcript path (imports Jupyter lazily)."""
    from cacheviz.widget import inspect as show

    return show(source, **kwargs)


__all__ = [
    "Analysis",
    "CacheVizError",
    "CacheVizWarning",
    "EncodingUnavailableError",
    "Recorder",
    "Session",
    "TranscriptError",
    "UnknownFormatError",
    "__version__",
    "analyze",
    "inspect",
    "load",
    "record",
]
