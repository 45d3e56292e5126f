"""Where the scan cache lives: one folder per cache version, cacheviz version and price file.

Kept apart from :mod:`cacheviz.scanning._cache` (which reads Parquet with polars) so that a
warm ``cacheviz scan`` can find its answer without importing polars
(:mod:`cacheviz.scanning._answers`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CACHE_VERSION = 10  # bump when what the cached tables hold changes (10: "empty" files)
CHECKSUMS = "checksums.json"  # each table's rows and digest; none: nothing cached yet


def default_dir() -> Path:
    """``$CACHEVIZ_CACHE_DIR`` or the platform's user cache dir (platformdirs), + ``scan``."""
    base = os.environ.get("CACHEVIZ_CACHE_DIR")
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("cacheviz", appauthor=False)
    return Path(base) / "scan"


def versioned(base: Path, prices: Path | None = None, sizes: str = "tokens") -> Path:
    """The folder of this cache version under ``base``; costs under a price file apart.

    Sessions analysed with block sizes estimated from bytes (``sizes="bytes"``) are kept
    apart too: an exact scan never reuses them.

    Raises
    ------
    OSError
        When ``prices`` can't be read.
    """
    from cacheviz._version import __version__

    name = f"v{CACHE_VERSION}-{__version__}"
    if prices is not None:
        digest = hashlib.blake2b(prices.read_bytes(), digest_size=8).hexdigest()
        name += f"-prices-{digest}"
    if sizes != "tokens":
        name += f"-sizes-{sizes}"
    return base / name


def replace_file(target: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``target``, then rename it over ``target``."""
    import tempfile

    handle, temp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        Path(temp).replace(target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
