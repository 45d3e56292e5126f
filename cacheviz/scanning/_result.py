"""The result of a scan: polars frames of many sessions, and what could not be read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz.scanning import _rollup
from cacheviz.scanning._walk import Location

_PARQUET_TABLES = ("sessions", "calls", "drifts", "misses", "busters", "files")

if TYPE_CHECKING:
    from cacheviz._writing import Inputs


@dataclass
class ScanResult:
    """The scan of many sessions: polars frames plus what could not be read.

    ``calls`` has one row per de-duplicated call (columns in ``_schema.SCAN_CALLS``);
    ``drifts`` and ``misses`` keep only the rows of kept calls; ``sessions``,
    ``busters`` and ``projects`` are rolled up from them. ``files`` lists every unit
    with its status (``ok``; ``empty``: read, no API call in it, the reader's line in
    ``error``; ``failed`` with its one-line ``error``; ``unknown``).
    """

    calls: pl.DataFrame
    drifts: pl.DataFrame
    misses: pl.DataFrame
    files: pl.DataFrame
    duplicates_dropped: int
    locations: list[Location] | None = None
    sizes: str = "tokens"
    """How block sizes were found: ``tokens`` (tiktoken) or ``bytes`` (estimated)."""
    _derived: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def sessions(self) -> pl.DataFrame:
        """One row per session, ranked by waste (billed - ideal), then billed cost."""
        if "sessions" not in self._derived:
            self._derived["sessions"] = _rollup.sessions(self.calls, self.drifts)
        return self._derived["sessions"]

    @property
    def busters(self) -> pl.DataFrame:
        """Drifts and misses grouped by (kind, cause, part, label), costliest first."""
        if "busters" not in self._derived:
            self._derived["busters"] = _rollup.busters(self.drifts, self.misses)
        return self._derived["busters"]

    @property
    def projects(self) -> pl.DataFrame:
        """Per project: sessions, calls, billed cost and distinct system+tools prefixes."""
        if "projects" not in self._derived:
            self._derived["projects"] = _rollup.projects(self.calls)
        return self._derived["projects"]

    @property
    def failed(self) -> pl.DataFrame:
        """Units that failed to load, with their one-line error."""
        return self.files.filter(pl.col("status") == "failed").select("path", "error")

    def rollup(
        self,
        by: str = "day",
        *,
        tz: str = "UTC",
        since: str | None = None,
        until: str | None = None,
    ) -> pl.DataFrame:
        """Totals per day, week, month, session, project or model (``_rollup.rollup``)."""
        return _rollup.rollup(self.calls, by, tz=tz, since=since, until=until)

    def between(
        self, since: str | None = None, until: str | None = None, *, tz: str = "UTC"
    ) -> ScanResult:
        """The scan restricted to the calls of days ``since`` to ``until`` (in ``tz``).

        Sessions, busters, rollups and totals of the result cover that period only;
        ``files`` and ``duplicates_dropped`` still describe the whole scan.
        """
        if since is None and until is None:
            return self
        calls = _rollup.between(self.calls, tz=tz, since=since, until=until)
        kept = calls.select("path", pl.col("call").alias("call"))
        return ScanResult(
            calls,
            self.drifts.join(kept, on=["path", "call"], how="semi"),
            self.misses.join(kept, on=["path", "call"], how="semi"),
            self.files,
            self.duplicates_dropped,
            self.locations,
            self.sizes,
        )

    def totals(self) -> dict[str, Any]:
        """The ``totals`` object of ``cacheviz scan --json``."""
        return _rollup.totals(self.calls, self.files, self.failed)

    def to_dict(self, *, by: str | None = None, **options: Any) -> dict[str, Any]:
        """The ``cacheviz scan --json`` document (see docs/scan.md)."""
        return _document(self, by=by, **options)

    def inputs(self) -> Inputs:
        """The files the scan read: an output never overwrites one (:mod:`cacheviz._writing`).

        Every unit but those of no known format (``unknown``: a report written by an
        earlier scan into the scanned folder is one).
        """
        from cacheviz._writing import Inputs

        return Inputs.of(self.files.filter(pl.col("status") != "unknown")["path"].to_list())

    def write_parquet(self, folder: str | Path, *, option: str | None = None) -> list[Path]:
        """Write ``sessions``, ``calls``, ``drifts``, ``misses`` and ``busters`` as Parquet.

        Each file whole or not at all, never over a file the scan read; ``option`` names
        the command-line option that chose ``folder`` in an error.
        """
        from cacheviz import _writing

        out = _writing.make_folder(folder, what="parquet folder", option=option)
        inputs = self.inputs()
        targets = {name: out / f"{name}.parquet" for name in _PARQUET_TABLES}
        for target in targets.values():  # all refused or none written
            _writing.guard(target, inputs, option=option)
        for name, target in targets.items():
            data = _writing.parquet(getattr(self, name))
            _writing.write(target, data, what="parquet file", option=option)
        return list(targets.values())

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """Shown in a notebook cell, a scan result is the scan view."""
        from cacheviz.ui._scan import ScanView

        return ScanView(self)._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return (
            f"<ScanResult sessions={self.sessions.height} calls={self.calls.height} "
            f"failed={self.failed.height} duplicates_dropped={self.duplicates_dropped}>"
        )


def _records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in frame.iter_rows(named=True):
        out.append(
            {
                k: (v.isoformat().replace("+00:00", "Z") if hasattr(v, "isoformat") else v)
                for k, v in row.items()
            }
        )
    return out


def _document(result: ScanResult, *, by: str | None = None, **options: Any) -> dict[str, Any]:
    """The ``cacheviz scan --json`` document."""
    doc: dict[str, Any] = {}
    if result.locations is not None:
        doc["locations"] = [
            {"agent": loc.agent, "path": str(loc.path), "found": loc.found}
            for loc in result.locations
        ]
    doc["sessions"] = _records(
        result.sessions.select(
            "path",
            "session",
            "format",
            "project",
            "usage_only",
            "calls",
            "hit_ratio",
            "billed_usd",
            "ideal_usd",
            "waste_usd",
            "reported_cost_usd",
            "drifts",
            *_rollup.VERDICT_COLUMNS,
            "first_ts",
            "last_ts",
            "models",
            "title",
        )
    )
    doc["totals"] = result.totals()
    doc["busters"] = _records(result.busters)
    doc["duplicates_dropped"] = result.duplicates_dropped
    if result.sizes != "tokens":  # said only when estimated: the default document unchanged
        doc["sizes"] = result.sizes
    doc["failed"] = _records(result.failed)
    if by is not None:
        doc["by"] = by
        doc["rollup"] = _records(result.rollup(by, **options))
    return doc
