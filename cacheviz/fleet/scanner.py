"""``cacheviz.scan``: analyse every session under some folders, in parallel, with a cache.

Steps: find the units (:mod:`~cacheviz.fleet.walk`); reuse the cached rows of units
whose files did not change (:mod:`~cacheviz.fleet.cache`); run
:func:`~cacheviz.fleet.worker.run_batch` over the rest on a process pool (or the
executor given); then drop the calls seen twice (same provider response id, e.g. a
forked sub-agent replaying its parent's responses, or a resumed session) and roll up.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import polars as pl

from cacheviz import _schema
from cacheviz.errors import CacheVizWarning
from cacheviz.fleet import rollup as _rollup
from cacheviz.fleet.cache import MANIFEST, TABLES, ScanCache, default_dir, signature
from cacheviz.fleet.walk import Location, Unit, default_locations, find_units
from cacheviz.fleet.worker import UnitResult, run_batch, run_unit

_POOL_BYTES = 8 << 20  # less work than this is analysed in this process (spawning costs ~1 s)
_BATCHES_PER_WORKER = 4
_MAX_BATCH = 32


@dataclass
class ScanResult:
    """The scan of many sessions: polars frames plus what could not be read.

    ``calls`` has one row per de-duplicated call (columns in ``_schema.SCAN_CALLS``);
    ``drifts`` and ``misses`` keep only the rows of kept calls; ``sessions``,
    ``busters`` and ``projects`` are rolled up from them. ``files`` lists every unit
    with its status (``ok``, ``failed`` with its one-line ``error``, ``unknown``).
    """

    calls: pl.DataFrame
    drifts: pl.DataFrame
    misses: pl.DataFrame
    files: pl.DataFrame
    duplicates_dropped: int
    locations: list[Location] | None = None
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
        """Totals per day, week, month, session, project or model; see :mod:`.rollup`."""
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
        kept = calls.select("path", pl.col("index").alias("call"))
        return ScanResult(
            calls,
            self.drifts.join(kept, on=["path", "call"], how="semi"),
            self.misses.join(kept, on=["path", "call"], how="semi"),
            self.files,
            self.duplicates_dropped,
            self.locations,
        )

    def totals(self) -> dict[str, Any]:
        """The ``totals`` object of ``cacheviz scan --json``."""
        return _rollup.totals(self)

    def to_dict(self, *, by: str | None = None, **options: Any) -> dict[str, Any]:
        """The ``cacheviz scan --json`` document (see docs/scan.md)."""
        return _rollup.document(self, by=by, **options)

    def write_parquet(self, folder: str | Path) -> list[Path]:
        """Write ``sessions``, ``calls``, ``drifts``, ``misses`` and ``busters`` as Parquet."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name in ("sessions", "calls", "drifts", "misses", "busters", "files"):
            target = out / f"{name}.parquet"
            getattr(self, name).write_parquet(target)
            written.append(target)
        return written

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """Shown in a notebook cell, a scan is the fleet view."""
        from cacheviz.fleet.view import FleetView

        return FleetView(self)._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return (
            f"<ScanResult sessions={self.sessions.height} calls={self.calls.height} "
            f"failed={self.failed.height} duplicates_dropped={self.duplicates_dropped}>"
        )


def scan(
    paths: Sequence[str | Path] | str | Path | None = None,
    *,
    executor: Executor | None = None,
    jobs: int | None = None,
    cache: bool | str | Path = True,
    progress: bool | None = None,
    prices: str | Path | None = None,
) -> ScanResult:
    """Analyse every session under ``paths`` (folders or files).

    Parameters
    ----------
    paths
        Folders and files; ``None`` scans the agents' default locations
        (:func:`~cacheviz.fleet.walk.default_locations`).
    executor
        Any :class:`concurrent.futures.Executor` to run the per-file work on (e.g.
        ``dask.distributed.Client(...).get_executor()``); by default a process pool
        on all cores (small scans run in this process).
    jobs
        Worker processes of the default pool (default: every core; 1 = no pool).
    cache
        ``True`` (the platform cache dir), ``False`` (no cache) or a folder.
    progress
        Show a progress bar (default: when stderr is a terminal).
    prices
        A user price file (cacheviz JSON or LiteLLM's).

    Returns
    -------
    ScanResult

    Examples
    --------
    >>> result = scan(["sample_sessions"], cache=False)  # doctest: +SKIP
    >>> result.rollup("day")  # doctest: +SKIP
    """
    locations = None
    if paths is None:
        locations = default_locations()
        roots = [loc.path for loc in locations if loc.found]
    else:
        roots = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    units = find_units(roots)
    store = None
    if cache is not False:
        folder = default_dir() if cache is True else Path(cache)
        store = ScanCache(folder, None if prices is None else Path(prices))
    signatures: dict[str, str] = {}
    hits: set[str] = set()
    todo: list[tuple[Unit, str | None]] = []
    for unit in units:
        key = str(unit.path)
        try:
            signatures[key] = signature(unit)
        except OSError:
            signatures[key] = ""
        entry = store.entry(unit.path) if store is not None else None
        if entry is not None and entry["signature"] == signatures[key] and signatures[key]:
            hits.add(key)
        else:
            todo.append((unit, None if entry is None else entry["content_hash"]))
    show = sys.stderr.isatty() if progress is None else progress
    results = _execute(todo, executor, jobs, show, None if prices is None else str(prices))
    hits |= {r.path for r in results if r.status == "unchanged"}
    fresh = [r for r in results if r.status != "unchanged"]
    cached = store.rows(hits) if store is not None else {n: _empty(n) for n in TABLES}
    tables = {name: pl.concat([cached[name], *(_table(r, name) for r in fresh)]) for name in TABLES}
    manifest = _manifest(fresh, signatures)
    if store is not None:
        reused = store.manifest.filter(pl.col("path").is_in(sorted(hits)))
        touched = reused.with_columns(
            pl.col("path")
            .replace_strict(signatures, default=None, return_dtype=pl.String)
            .alias("signature")
        )
        if fresh or touched["signature"].to_list() != reused["signature"].to_list():
            try:
                store.save(
                    pl.concat([touched, manifest]),
                    tables,  # every row of these paths
                )
            except OSError as exc:
                warnings.warn(
                    f"can't write the scan cache in {store.folder} ({exc.strerror}); the next "
                    "scan starts cold (set CACHEVIZ_CACHE_DIR, or pass --no-cache)",
                    CacheVizWarning,
                    stacklevel=2,
                )
        files = pl.concat([touched, manifest])
    else:
        files = manifest
    calls, drifts, misses, dropped = _dedupe(tables["calls"], tables["drifts"], tables["misses"])
    files = files.select("path", "status", "format", "error", "warnings").sort("path")
    return ScanResult(calls, drifts, misses, files, dropped, locations)


def _empty(name: str) -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "calls": _schema.SCAN_CALLS,
            "drifts": _schema.SCAN_DRIFTS,
            "misses": _schema.SCAN_MISSES,
        }[name]
    )


def _table(result: UnitResult, name: str) -> pl.DataFrame:
    frame = getattr(result, name)
    return _empty(name) if frame is None else frame


def _manifest(results: list[UnitResult], signatures: dict[str, str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "path": [r.path for r in results],
            "signature": [signatures.get(r.path, "") for r in results],
            "content_hash": [r.content_hash for r in results],
            "status": [r.status for r in results],
            "format": [r.format for r in results],
            "error": [r.error for r in results],
            "warnings": [r.warnings for r in results],
        },
        schema=MANIFEST,
    )


def _execute(
    todo: list[tuple[Unit, str | None]],
    executor: Executor | None,
    jobs: int | None,
    show: bool,
    prices: str | None,
) -> list[UnitResult]:
    """Run the units, serially for small scans, else in batches on the executor."""
    if not todo:
        return []
    bar = _bar(len(todo)) if show else None
    update: Callable[[int], Any] = bar.update if bar is not None else (lambda _n: None)

    def serial() -> list[UnitResult]:
        results = []
        for unit, known in todo:
            results.append(run_unit(unit, known, prices))
            update(1)
        return results

    try:
        workers = jobs or os.cpu_count() or 1
        if executor is None and (workers == 1 or _size(todo) < _POOL_BYTES):
            return serial()
        if executor is None:
            try:
                return _on_pool(todo, None, workers, update, prices)
            except BrokenProcessPool:
                warnings.warn(
                    "the worker processes could not start (a script that calls "
                    "cacheviz.scan must do so under `if __name__ == '__main__':`); "
                    "scanning in this process",
                    CacheVizWarning,
                    stacklevel=3,
                )
                return serial()
        return _on_pool(todo, executor, workers, update, prices)
    finally:
        if bar is not None:
            bar.close()


def _on_pool(
    todo: list[tuple[Unit, str | None]],
    executor: Executor | None,
    workers: int,
    update: Callable[[int], Any],
    prices: str | None,
) -> list[UnitResult]:
    """Run the units in batches on ``executor`` (default: a spawned process pool)."""
    own = executor is None
    pool = executor or ProcessPoolExecutor(workers, mp_context=get_context("spawn"))
    size = max(1, min(_MAX_BATCH, math.ceil(len(todo) / (workers * _BATCHES_PER_WORKER))))
    try:
        with _one_thread_each(own):  # workers start while submitting
            futures = [
                pool.submit(
                    run_batch,
                    [u for u, _ in todo[i : i + size]],
                    [k for _, k in todo[i : i + size]],
                    prices,
                )
                for i in range(0, len(todo), size)
            ]
        results = []
        for future in as_completed(futures):
            batch = future.result()
            results += batch
            update(len(batch))
    finally:
        if own:
            pool.shutdown()
    return sorted(results, key=lambda r: r.path)


@contextmanager
def _one_thread_each(active: bool) -> Iterator[None]:
    """Workers of our own pool run polars single-threaded: the pool is the parallelism."""
    if not active:
        yield
        return
    saved = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["POLARS_MAX_THREADS"]
        else:
            os.environ["POLARS_MAX_THREADS"] = saved


def _size(todo: list[tuple[Unit, str | None]]) -> int:
    total = 0
    for unit, _ in todo:
        for member in unit.members:
            with suppress(OSError):
                total += member.stat().st_size
    return total


def _bar(total: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="file", desc="scanning", file=sys.stderr, leave=False)


def _dedupe(
    calls: pl.DataFrame, drifts: pl.DataFrame, misses: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, int]:
    """Keep the first call of each provider response id.

    First by request time, then path; within a file a parent thread's copy before a
    sub-agent's, then the reader's order (``index``).
    """
    ordered = calls.sort(
        [pl.col("ts"), pl.col("path"), pl.col("parent_thread").is_not_null(), pl.col("index")],
        nulls_last=True,
        maintain_order=True,
    )
    key = pl.concat_str(["provider", "response_id"], separator=":")
    repeat = pl.when(pl.col("response_id").is_not_null()).then(pl.int_range(pl.len()).over(key) > 0)
    flagged = ordered.with_columns(repeat.fill_null(value=False).alias("_repeat"))
    kept = flagged.filter(~pl.col("_repeat")).drop("_repeat")
    dropped = flagged.height - kept.height
    index = kept.select("path", pl.col("index").alias("call"), "session")
    drifts = drifts.join(index, on=["path", "call"], how="inner")
    misses = misses.join(index, on=["path", "call"], how="inner")
    return kept, drifts, misses, dropped
