"""The scan cache: every analysed unit's rows, kept as Parquet in the platform cache dir.

Four tables (``manifest``, ``calls``, ``drifts``, ``misses``) in one folder per cache
version (and per user price file, whose costs differ). A unit is reused when its files
have the size and mtime recorded in the manifest; when they changed but still hash to
the recorded content hash (a ``touch``, a copy) the rows are reused too; otherwise the
unit is analysed again. Tables are rewritten whole, each through a temporary file
renamed into place, and ``checksums.json`` records each table's rows and BLAKE2b
digest. On reading, a table that is unreadable, of another schema, or that does not
match its checksum (truncated, edited, or two scans' writes interleaved) makes the cache
cold: every unit is analysed again and the cache rewritten, never read as empty.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz import _schema
from cacheviz.scanning._cachedir import (
    CACHE_VERSION,
    CHECKSUMS,
    default_dir,
    replace_file,
    versioned,
)
from cacheviz.scanning._walk import Unit, shown

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

__all__ = ["CACHE_VERSION", "MANIFEST", "TABLES", "ScanCache", "default_dir", "signature"]
TABLES = ("calls", "drifts", "misses")
MANIFEST: dict[str, PolarsDataType] = {
    "path": pl.String,
    "signature": pl.String,  # [(file, device, inode, size, mtime_ns), ...] as JSON
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


def signature(unit: Unit) -> str:
    """Path, device, inode, size and mtime of every file of ``unit``.

    What a re-scan compares first: the same signature reuses the cached rows without
    reading the files; another one (a file replaced, grown or touched) has the files
    hashed, and rows are reused only when their content hash is the one recorded.
    """
    parts = []
    for member in unit.members:
        stat = member.stat()
        parts.append([shown(member), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns])
    return json.dumps(parts, separators=(",", ":"))


class ScanCache:
    """Read and write the cache tables in ``folder`` (created on first write)."""

    def __init__(self, folder: Path, prices: Path | None = None) -> None:
        self.folder = versioned(folder, prices)
        self.damaged: list[str] = []  # tables found damaged (the cache was read cold)
        sums = self._checksums()
        schemas = {"manifest": MANIFEST, **SCHEMAS}
        frames = {n: self._read(n, schema, sums.get(n)) for n, schema in schemas.items()}
        if self.damaged:  # a table lost: nothing cached can be trusted to be whole
            frames = {n: pl.DataFrame(schema=schema) for n, schema in schemas.items()}
        self.manifest = frames["manifest"]
        self.tables = {name: frames[name] for name in TABLES}
        self._by_path = {row["path"]: row for row in self.manifest.iter_rows(named=True)}

    def _checksums(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads((self.folder / CHECKSUMS).read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):  # no cache yet (or can't be one)
            return {}
        except (OSError, ValueError):
            self.damaged.append(CHECKSUMS)
            return {}
        return data if isinstance(data, dict) else {}

    def _read(
        self, name: str, schema: dict[str, PolarsDataType], expected: dict[str, object] | None
    ) -> pl.DataFrame:
        path = self.folder / f"{name}.parquet"
        if not path.is_file():
            if expected is not None:  # a table the checksums list is gone
                self.damaged.append(name)
            return pl.DataFrame(schema=schema)
        try:
            data = path.read_bytes()
            if expected is None or expected.get("blake2b") != _digest(data):
                raise ValueError(name)
            frame = pl.read_parquet(data)
            if dict(frame.schema) != dict(schema) or frame.height != expected.get("rows"):
                raise ValueError(name)
        except (OSError, ValueError, pl.exceptions.PolarsError):
            self.damaged.append(name)
            return pl.DataFrame(schema=schema)
        return frame

    def entry(self, path: Path) -> dict[str, Any] | None:
        """The manifest row of ``path``, if any."""
        return self._by_path.get(shown(path))

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
        sums: dict[str, dict[str, object]] = {}
        for name, frame in merged.items():
            buffer = io.BytesIO()
            frame.write_parquet(buffer)
            data = buffer.getvalue()
            sums[name] = {"rows": frame.height, "blake2b": _digest(data)}
            replace_file(self.folder / f"{name}.parquet", data)
        replace_file(self.folder / CHECKSUMS, json.dumps(sums, indent=1).encode())


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()
