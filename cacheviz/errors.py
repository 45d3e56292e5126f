"""Errors and warnings raised by cacheviz.

::

    CacheVizError(Exception)
    ├── TranscriptError(CacheVizError, ValueError)   bad input; carries .path and .line
    │   └── UnknownFormatError                       no reader recognises the file
    ├── JSONSyntaxError(CacheVizError, ValueError)   a request body is not JSON; .pos
    ├── RenderError(CacheVizError, ValueError)       a request body lacks what its API needs; .field
    ├── UsageError(CacheVizError, ValueError)        a usage field is not a token count; .field
    ├── SimulationError(CacheVizError, ValueError)   no such provider or rule
    ├── EncodingUnavailableError(CacheVizError, RuntimeError)   tiktoken files missing
    ├── UnknownModelError(CacheVizError, LookupError)   no price for a model
    └── PortBusyError(CacheVizError, OSError)        the proxy's port is taken
    CacheVizWarning(UserWarning)                     recoverable data issues
    CacheVizDeprecationWarning(CacheVizWarning, DeprecationWarning)   a moved name or path

Every error cacheviz raises on purpose is defined here and is a :class:`CacheVizError`.

Every message is one line: where (file:line or field), what was wrong, what to do next.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: errors.py is on the start-up path
if TYPE_CHECKING:
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


class EmptyTranscriptError(TranscriptError):
    """A transcript read without a bad line holds no API call (a session opened and left).

    ``cacheviz scan`` counts such a file as ``empty``, not as failed.
    """


class EncodingUnavailableError(CacheVizError, RuntimeError):
    """A tiktoken encoding could not be loaded (usually: no network, no cache)."""


class UnknownModelError(CacheVizError, LookupError):
    """No price source knows the model; the message lists close matches."""


class CacheVizWarning(UserWarning):
    """A recoverable problem with the data (skipped lines, approximations)."""


class JSONSyntaxError(CacheVizError, ValueError):
    """The text is not valid JSON at ``pos`` (an index into the scanned text)."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


class RenderError(CacheVizError, ValueError):
    """The request body lacks what its API requires; ``field`` names the culprit."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class UsageError(CacheVizError, ValueError):
    """A usage field holds something other than a sane non-negative token count."""

    def __init__(
        self,
        field: str,
        value: object,
        limit: int,
        *,
        reason: str | None = None,
        prefix: str = "usage.",
    ) -> None:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else f"{shown[:37]}..."
        expected = f"expected a whole number of tokens from 0 to {limit - 1:,}"
        super().__init__(f"field `{prefix}{field}` is {shown}; {reason or expected}")
        self.field = field


class SimulationError(CacheVizError, ValueError):
    """The simulation was asked for something it can't do (an unknown provider or rule)."""


class PortBusyError(CacheVizError, OSError):
    """The port is taken; the message says which and what to do."""


class RecordingPathError(CacheVizError, ValueError):
    """The request log path is a folder, a device, or can't be written; the message says which."""


class CacheVizDeprecationWarning(CacheVizWarning, DeprecationWarning):
    """A name or import path moved; the message gives the new one."""
