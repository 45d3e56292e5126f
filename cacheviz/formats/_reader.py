"""What every transcript reader is: a module of :mod:`cacheviz.formats` (the spec of a reader).

A reader module defines ``NAME`` (the ``--format`` name), ``DESCRIPTION`` (one line for
``cacheviz formats``), ``detect`` and ``read``; usage-only readers also set
``USAGE_ONLY = True``. The modules satisfy :class:`Reader` as they are (a module is an
object with attributes): mypy checks each registered one (``formats/_registered.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from cacheviz.model import Session


@runtime_checkable
class Reader(Protocol):
    """A transcript reader (one module per format)."""

    NAME: str
    DESCRIPTION: str

    def detect(self, path: Path, head: bytes) -> bool:
        """Whether this reader reads ``path``; ``head`` is its first bytes (``b""``: a folder).

        Detection runs every reader in order until one claims the file, so a detector
        looks only at ``head`` (and the folder's entries) and is total: a failure inside
        one is taken as a no.
        """
        ...

    def read(self, path: Path, *, errors: str = "raise") -> Session:
        """Read ``path`` into a session; ``errors="skip"`` skips bad lines with a warning."""
        ...
