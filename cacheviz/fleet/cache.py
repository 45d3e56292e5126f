"""The scan cache: every analysed unit's rows, kept as Parquet in the platform cache dir.

Four tables (``manifest``, ``calls``, ``drifts``, ``misses``) in one folder per cache
version (and per user price file, whose costs differ). A unit is reused when its files
have the size and mtime recorded in the manifest; when they changed but still hash to
the recorded content hash (a ``touch``, a copy) the rows are reused too; otherwise the
unit is analysed again. Tables are rewritten whole and swapped in atomically, so a
crashed or concurrent scan leaves a consistent cache (the last writer wins).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import polars as pl

from cacheviz import _schema
from cacheviz.fleet.walk import Unit

CACHE_VERSION = 4  # bump when what the cached tables hold changes
TABLES = ("calls", "drifts", "misses")
MANIFEST: dict[str, pl.DataType] = {
    "path": pl.String,
    "signature": pl.String,  # [(file, size, mtime_ns), ...] as JSON
    "content_hash": pl.String,
    "status": pl.String,
    "format": pl.String,
    "error": pl.String,
    "warnings": pl.List(pl.String),
    "replays": pl.Int64,  # responses the loader dropped as replays (a fork's copies)
}
SCHEMAS = {
    "calls": _schema.SCAN_CALLS,
    "drifts": _schema.SCAN_DRIFTS,
    "misses": _schema.SCAN_MISSES,
}


def default_dir() -> Path:
    """``$CACHEVIZ_CACHE_DIR`` or the platform's user cache dir (platformdirs), + ``scan``."""
    base = os.environ.get("CACHEVIZ_CACHE_DIR")
    if not base:
        from platformdirs import user_cache_dir

        base = user_cache_dir("cacheviz", appauthor=False)
    return Path(base) / "scan"


def signature(unit: Unit) -> str:
    """Path, size and mtime of every file of ``unit`` (what a re-scan compares first)."""
    parts = []
    for member in unit.members:
        stat = member.stat()
        parts.append([str(member), stat.st_size, stat.st_mtime_ns])
    return json.dumps(parts, separators=(",", ":"))


class ScanCache:
    """Read and write the cache tables in ``folder`` (created on first write)."""

    def __init__(self, folder: Path, prices: Path | None = None) -> None:
        from cacheviz import __version__

        name = f"v{CACHE_VERSION}-{__version__}"
        if prices is not None:  # costs under a user price file are cached apart
            digest = hashlib.blake2b(prices.read_bytes(), digest_size=8).hexdigest()
            name += f"-prices-{digest}"
        self.folder = folder / name
        self.manifest = self._read("manifest", MANIFEST)
        self.tables = {name: self._read(name, SCHEMAS[name]) for name in TABLES}
        self._by_path = {row["path"]: row for row in self.manifest.iter_rows(named=True)}

    def _read(self, name: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
        path = self.folder / f"{name}.parquet"
        if path.is_file():
            try:
                frame = pl.read_parquet(path)
                if dict(frame.schema) == dict(schema):
                    return frame
            except (OSError, pl.exceptions.PolarsError):
                pass  # a damaged cache is a cold cache
        return pl.DataFrame(schema=schema)

    def entry(self, path: Path) -> dict[str, object] | None:
        """The manifest row of ``path``, if any."""
        return self._by_path.get(str(path))

    def rows(self, paths: set[str]) -> dict[str, pl.DataFrame]:
        """The cached rows of ``paths``, per table."""
        keep = sorted(paths)
        return {n: t.filter(pl.col("path").is_in(keep)) for n, t in self.tables.items()}

    def save(self, manifest: pl.DataFrame, tables: dict[str, pl.DataFrame]) -> None:
        """Replace the entries of ``manifest``'s paths with these rows, atomically per table.

        ``tables`` must hold every row of those paths (reused ones included): the cached
        rows of each path in ``manifest`` are dropped first.
        """
        changed = manifest["path"].to_list()
        self.folder.mkdir(parents=True, exist_ok=True)
        merged = {
            "manifest": pl.concat([self.manifest.filter(~pl.col("path").is_in(changed)), manifest]),
        }
        for name in TABLES:
            old = self.tables[name].filter(~pl.col("path").is_in(changed))
            merged[name] = pl.concat([old, tables[name]])
        for name, frame in merged.items():
            handle, temp = tempfile.mkstemp(dir=self.folder, suffix=".parquet.tmp")
            os.close(handle)
            frame.write_parquet(temp)
            Path(temp).replace(self.folder / f"{name}.parquet")
