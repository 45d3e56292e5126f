"""Many sessions at once: ``cacheviz scan`` (walk, analyse in parallel, cache, roll up)."""

from __future__ import annotations

from cacheviz.fleet.result import ScanResult
from cacheviz.fleet.scanner import scan

__all__ = ["ScanResult", "scan"]
