"""Many sessions at once: ``cacheviz scan`` (walk, analyse in parallel, cache, roll up).

``ScanResult`` and ``scan`` are imported on first use: the walk and the kept answers
(:mod:`cacheviz.scanning._answers`) run without polars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cacheviz.scanning._result import ScanResult
    from cacheviz.scanning._scanner import scan

__all__ = ["ScanResult", "scan"]


def __getattr__(name: str) -> Any:
    if name == "ScanResult":
        from cacheviz.scanning._result import ScanResult

        return ScanResult
    if name == "scan":
        from cacheviz.scanning._scanner import scan

        return scan
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
