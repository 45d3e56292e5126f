"""The user cache folder and the atomic writes every cache file goes through.

The folder is ``$CACHEVIZ_CACHE_DIR`` or the platform's user cache dir (platformdirs),
the convention of the scan cache (``cacheviz.scanning._cache.default_dir``), with one
subfolder per cache. A cache is a faster copy of data found elsewhere: a folder that
cannot be written (read-only, full disk) skips the copy, never fails the command.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def folder(name: str) -> Path:
    """``$CACHEVIZ_CACHE_DIR`` (or the platform's user cache dir) / ``name``."""
    base = os.environ.get("CACHEVIZ_CACHE_DIR")
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("cacheviz", appauthor=False)
    return Path(base) / name


def write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file renamed into place.

    Returns whether it was written; a failure (no permission, no space) leaves no
    partial file behind and is not an error.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        Path(temporary).replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        return False
    return True
