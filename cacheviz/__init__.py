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

__version__ = "0.1.0"

__all__ = [
    "Analysis",
    "CacheVizError",
    "CacheVizWarning",
    "EncodingUnavailableError",
    "Session",
    "TranscriptError",
    "UnknownFormatError",
    "__version__",
    "analyze",
    "load",
]
