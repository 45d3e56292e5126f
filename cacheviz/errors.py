"""Errors and warnings raised by cacheviz.

::

    CacheVizError(Exception)
    ├── TranscriptError(CacheVizError, ValueError)   bad input; carries .path and .line
    │   └── UnknownFormatError                       no reader recognises the file
    ├── EncodingUnavailableError(CacheVizError, RuntimeError)   tiktoken files missing
    └── UnknownModelError(CacheVizError, LookupError)   no price for a model
    CacheVizWarning(UserWarning)                     recoverable data issues

Every message is one line: where (file:line or field), what was wrong, what to do next.
"""

from __future__ import annotations

from pathlib import Path


class CacheVizError(Exception):
    """Base class of every error cacheviz raises on purpose."""


class TranscriptError(CacheVizError, ValueError):
    """A transcript could not be read; ``path`` and ``line`` say where."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        where = ""
        if path is not None:
            where = f"{path}: "
            if line is not None:
                where = f"{path}:{line}: " if column is None else f"{path}:{line}:{column}: "
        super().__init__(f"{where}{message}")
        self.path = None if path is None else str(path)
        self.line = line
        self.column = column if line is not None else None
        self.reason = message


class UnknownFormatError(TranscriptError):
    """No reader recognised the file."""


class EncodingUnavailableError(CacheVizError, RuntimeError):
    """A tiktoken encoding could not be loaded (usually: no network, no cache)."""


class UnknownModelError(CacheVizError, LookupError):
    """No price source knows the model; the message lists close matches."""


class CacheVizWarning(UserWarning):
    """A recoverable problem with the data (skipped lines, approximations)."""
