"""The ``cacheviz`` command line: ``main`` parses and runs, ``scan`` is its ``scan`` command."""

from __future__ import annotations

from cacheviz.cli.app import main, run

__all__ = ["main", "run"]
