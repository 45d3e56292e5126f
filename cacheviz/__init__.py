"""cacheviz: see where an LLM agent's prompt cache held, where it broke, and why.

>>> import cacheviz
>>> analysis = cacheviz.load("sample_sessions/compaction.jsonl").analyze()  # doctest: +SKIP
>>> analysis.drifts  # doctest: +SKIP

``import cacheviz`` is cheap: the public names below load their modules (polars, the
analysis, the readers, the scanner) on first use, so ``cacheviz --version`` and the
commands that need none of them start fast.
"""

from __future__ import annotations

import importlib

from cacheviz import _moved
from cacheviz._version import __version__
from cacheviz.errors import (
    CacheVizError,
    CacheVizWarning,
    EncodingUnavailableError,
    TranscriptError,
    UnknownFormatError,
)

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    from typing import Any

    from cacheviz.analysis import Analysis, analyze
    from cacheviz.formats import load
    from cacheviz.model import Session
    from cacheviz.recording import Recorder, record
    from cacheviz.scanning import ScanResult, scan

_moved.install()

_LAZY: dict[str, str] = {
    "Analysis": "cacheviz.analysis",
    "analyze": "cacheviz.analysis",
    "ScanResult": "cacheviz.scanning",
    "scan": "cacheviz.scanning",
    "load": "cacheviz.formats",
    "Session": "cacheviz.model",
    "Recorder": "cacheviz.recording",
    "record": "cacheviz.recording",
}
"""Public name → the module that defines it, imported when the name is first used."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'cacheviz' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later uses skip this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
