"""The ``cacheviz`` command line: ``main`` parses and runs; each command is a module here."""

from __future__ import annotations

from cacheviz.cli._app import main, run

__all__ = ["main", "run"]
