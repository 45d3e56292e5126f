"""``cacheviz.scan``: analyse every session under some folders, in parallel, with a cache.

Steps: start the pool's fork server when the scan looks big and cold, so that its
preload overlaps the walk (:func:`~cacheviz.scanning._child.start_early`); find the units
(:mod:`~cacheviz.scanning._walk`); reuse the cached rows of units whose files did not
change (:mod:`~cacheviz.scanning._cache`); run :func:`~cacheviz.scanning._worker.run_batch`
over the rest on a process pool or the executor given (:mod:`~cacheviz.scanning._pool`);
then drop the calls seen twice (same provider response id, e.g. a forked sub-agent
replaying its parent's responses, or a resumed session) and roll up.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from concurrent.futures import Executor
from pathlib import Path

import polars as pl

from cacheviz import _schema
from cacheviz.errors import CacheVizWarning
from cacheviz.formats._replays import REPEAT, flag_replays
from cacheviz.money.pricing import PriceBook
from cacheviz.scanning import _child
from cacheviz.scanning import _pool as pool
from cacheviz.scanning._cache import MANIFEST, TABLES, ScanCache, default_dir, signature
from cacheviz.scanning._result import ScanResult
from cacheviz.scanning._walk import Skipped, Tree, Unit, default_locations, shown, walk
from cacheviz.scanning._worker import UnitResult


def scan(
    paths: Sequence[str | Path] | str | Path | None = None,
    *,
    executor: Executor | None = None,
    jobs: int | None = None,
    cache: bool | str | Path = True,
    progress: bool | None = None,
    prices: str | Path | None = None,
    tree: Tree | None = None,
    unit_timeout: float | None = None,
) -> ScanResult:
    """Analyse every session under ``paths`` (folders or files).

    Parameters
    ----------
    paths
        Folders and files; ``None`` scans the agents' default locations
        (:func:`~cacheviz.scanning._walk.default_locations`).
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
    tree
        Record there what the walk saw (:class:`~cacheviz.scanning._walk.Tree`), e.g. to
        keep the answer while the tree stays the same (:mod:`cacheviz.scanning._answers`).
    unit_timeout
        Seconds one session may take (default ``$CACHEVIZ_UNIT_TIMEOUT``, else 300; 0:
        no limit). A session past it is not analysed: it is listed as failed, its error
        naming it, and the scan goes on.

    Returns
    -------
    ScanResult

    Raises
    ------
    TranscriptError
        When the price file can't be read. Files that fail to load do not raise: they
        are listed in ``ScanResult.files`` with their error.

    Examples
    --------
    >>> result = scan(["sample_sessions"], cache=False)  # doctest: +SKIP
    >>> result.rollup("day")  # doctest: +SKIP
    """
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        msg = f"jobs={jobs!r}: expected a whole number of worker processes, 1 or more"
        raise ValueError(msg)
    with _child.stopped():  # the fork server and resource tracker this scan started
        return _scan(paths, executor, jobs, cache, progress, prices, tree, unit_timeout)


def _scan(
    paths: Sequence[str | Path] | str | Path | None,
    executor: Executor | None,
    jobs: int | None,
    cache: bool | str | Path,
    progress: bool | None,
    prices: str | Path | None,
    tree: Tree | None,
    unit_timeout: float | None,
) -> ScanResult:
    """:func:`scan`, its arguments checked, within the fork server's lifetime."""
    if prices is not None:
        PriceBook(prices)  # a bad price file is one error now, not one per session
    locations = None
    if paths is None:
        locations = default_locations()
        roots = [loc.path for loc in locations if loc.found]
    else:
        roots = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if executor is None:  # before the walk: the server's preload overlaps it
        _child.start_early(roots, jobs, _child.cold(cache, prices))
    units, passed_over = walk(roots, tree)
    store = None
    if cache is not False:
        folder = default_dir() if cache is True else Path(cache)
        store = ScanCache(folder, None if prices is None else Path(prices))
        if store.damaged:
            warnings.warn(
                f"the scan cache in {store.folder} was damaged ({', '.join(store.damaged)}); "
                "every session is analysed again and the cache rewritten",
                CacheVizWarning,
                stacklevel=2,
            )
    signatures: dict[str, str] = {}
    hits: set[str] = set()
    todo: list[tuple[Unit, str | None]] = []
    for unit in units:
        key = shown(unit.path)
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
    price_file = None if prices is None else str(prices)
    ran = pool.execute(todo, executor, jobs, show, price_file, unit_timeout)
    hits |= {r.path for r in ran.results if r.status == "unchanged"}
    fresh = [r for r in ran.results if r.status != "unchanged"]
    cached = store.rows(hits) if store is not None else {n: _empty(n) for n in TABLES}
    tables = {name: pl.concat([cached[name], ran.tables[name]]) for name in TABLES}
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
    files, tables = _same_content(files, tables)
    calls, drifts, misses, dropped = _dedupe(tables["calls"], tables["drifts"], tables["misses"])
    counted = files.filter(pl.col("status") != "duplicate")
    dropped += int(counted["replays"].fill_null(0).sum())  # dropped by the loaders already
    files = pl.concat([files.select(*_FILE_COLUMNS), _passed_over(passed_over)])
    files = files.sort("path")
    return ScanResult(calls, drifts, misses, files, dropped, locations)


_FILE_COLUMNS = ("path", "status", "format", "error", "warnings")


def _passed_over(skipped: list[Skipped]) -> pl.DataFrame:
    """The files not read (not regular files, a second path to one file), as file rows."""
    return pl.DataFrame(
        {
            "path": [shown(s.path) for s in skipped],
            "status": [s.status for s in skipped],
            "format": [None] * len(skipped),
            "error": [s.reason for s in skipped],
            "warnings": [[] for _ in skipped],
        },
        schema={k: MANIFEST[k] for k in _FILE_COLUMNS},
    )


def _same_content(
    files: pl.DataFrame, tables: dict[str, pl.DataFrame]
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    """Count a session once when several files hold the same bytes (a copy, a backup).

    The first path (in sorted order) keeps its rows; the others become ``duplicate``
    file rows that name it. Formats with response ids were de-duplicated by id anyway;
    this covers those without.
    """
    ordered = files.sort("path")
    first: dict[str, str] = {}
    repeats: dict[str, str] = {}
    for path, status, digest in ordered.select("path", "status", "content_hash").iter_rows():
        if status != "ok" or not digest:
            continue
        if digest in first:
            repeats[path] = first[digest]
        else:
            first[digest] = path
    if not repeats:
        return files, tables
    marked = files.with_columns(
        pl.when(pl.col("path").is_in(list(repeats)))
        .then(pl.lit("duplicate"))
        .otherwise(pl.col("status"))
        .alias("status"),
        pl.when(pl.col("path").is_in(list(repeats)))
        .then(pl.col("path").replace_strict(repeats, default=None, return_dtype=pl.String))
        .otherwise(pl.col("error"))
        .alias("error"),
    ).with_columns(
        pl.when(pl.col("status") == "duplicate")
        .then(pl.lit("the same content as ") + pl.col("error"))
        .otherwise(pl.col("error"))
        .alias("error")
    )
    kept = {n: t.filter(~pl.col("path").is_in(list(repeats))) for n, t in tables.items()}
    return marked, kept


def _empty(name: str) -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "calls": _schema.SCAN_CALLS,
            "drifts": _schema.SCAN_DRIFTS,
            "misses": _schema.SCAN_MISSES,
        }[name]
    )


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
            "replays": [r.replays for r in results],
        },
        schema=MANIFEST,
    )


def _dedupe(
    calls: pl.DataFrame, drifts: pl.DataFrame, misses: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, int]:
    """Keep one call of each provider response id, in request-time order.

    The rule is :func:`~cacheviz.formats._replays.flag_replays`, the session loaders' own.
    """
    flagged = flag_replays(calls)
    kept = (
        flagged.filter(~pl.col(REPEAT))
        .drop(REPEAT)
        .sort(
            [pl.col("ts"), pl.col("path"), pl.col("parent_thread").is_not_null(), pl.col("call")],
            nulls_last=True,
            maintain_order=True,
        )
    )
    dropped = flagged.height - kept.height
    index = kept.select("path", pl.col("call").alias("call"), "session")
    drifts = drifts.join(index, on=["path", "call"], how="inner")
    misses = misses.join(index, on=["path", "call"], how="inner")
    return kept, drifts, misses, dropped
