"""Run the per-unit work: in this process, on a process pool, or any executor.

The pool's workers send each batch's rows back as Arrow IPC (:class:`~cacheviz.scanning.
_worker.Batch`), read and concatenated here with polars; a serial scan builds its tables
from the units' lists. Either way :func:`execute` gives the units' results (without rows)
and one frame per table.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import suppress
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import polars as pl

from cacheviz.errors import CacheVizWarning
from cacheviz.scanning import _child
from cacheviz.scanning._child import single_threaded
from cacheviz.scanning._walk import Unit, shown
from cacheviz.scanning._worker import (
    Batch,
    UnitResult,
    frames,
    packed,
    run_batch,
    run_unit,
    table,
)

POOL_BYTES = _child.POOL_BYTES  # less work than this, or one unit, is analysed in this process
_BATCHES_PER_WORKER = 4
_MAX_BATCH = 32
_TABLES = ("calls", "drifts", "misses")


@dataclass
class Ran:
    """What :func:`execute` gives: the units' results, and their rows as one frame per table.

    ``results`` carry no rows (``calls``, ``drifts`` and ``misses`` are ``None``);
    ``tables`` holds them: ``calls``, ``drifts`` and ``misses`` of the scan's schemas, a
    unit's rows together and in its order, the units in the order of ``results``.
    """

    results: list[UnitResult]
    tables: dict[str, pl.DataFrame]


def execute(
    todo: list[tuple[Unit, str | None]],
    executor: Executor | None,
    jobs: int | None,
    show: bool,
    prices: str | None,
    timeout: float | None = None,
) -> Ran:
    """Run the units, serially for small scans and one unit, else in batches on the executor.

    Each unit within ``timeout`` seconds (:func:`~cacheviz.scanning._worker.run_unit`).
    A fork server started early for this scan (:func:`~cacheviz.scanning._child.
    start_early`) is stopped here when the scan runs serially; the caller stops the one
    the pool used (:func:`~cacheviz.scanning._child.stopped`).
    """
    if not todo:
        return Ran([], _listed([]))
    bar = _bar(len(todo)) if show else None
    update: Callable[[int], Any] = bar.update if bar is not None else (lambda _n: None)

    def serial() -> Ran:
        _child.stop_unused()  # started early, in case: not needed
        results = []
        rates: dict[str, Any] = {}  # one price book for the scan's sessions
        for unit, known in todo:
            results.append(run_unit(unit, known, prices, rates, timeout))
            update(1)
        return Ran(results, _listed(results))

    try:
        workers = jobs or os.cpu_count() or 1
        small = len(todo) == 1 or _size(todo) < POOL_BYTES  # one unit: nothing to share out
        if executor is None and (workers == 1 or small):
            return serial()
        if executor is None:
            try:
                return _ran(_on_pool(todo, None, workers, update, prices, timeout))
            except _Broken as broken:
                if not broken.done and not _pool_starts():
                    warnings.warn(
                        "the worker processes could not start (a script that calls "
                        "cacheviz.scan must do so under `if __name__ == '__main__':`); "
                        "scanning in this process",
                        CacheVizWarning,
                        stacklevel=3,
                    )
                    todo = broken.left
                    return serial()
                rest = _isolated(broken.left, update, prices, timeout)
                return _ran(broken.done + rest)
        return _ran(_on_pool(todo, executor, workers, update, prices, timeout))
    finally:
        if bar is not None:
            bar.close()


def _listed(results: list[UnitResult]) -> dict[str, pl.DataFrame]:
    """The tables of units run in this process (rows as lists), in their order; rows moved."""
    tables = {}
    for name in _TABLES:
        parts = [part for r in results if (part := getattr(r, name)) is not None]
        tables[name] = table(name, parts)
    for result in results:
        result.calls = result.drifts = result.misses = None
    return tables


def _ran(batches: list[Batch]) -> Ran:
    """The batches' results by path, and their rows (:func:`~cacheviz.scanning._worker.frames`)."""
    results = sorted((r for b in batches for r in b.results), key=lambda r: r.path)
    return Ran(results, frames(batches))


def _on_pool(
    todo: list[tuple[Unit, str | None]],
    executor: Executor | None,
    workers: int,
    update: Callable[[int], Any],
    prices: str | None,
    timeout: float | None = None,
) -> list[Batch]:
    """Run the units in batches on ``executor`` (default: the scan's process pool)."""
    own = executor is None
    pool = executor or _spawned(workers)
    size = max(1, min(_MAX_BATCH, math.ceil(len(todo) / (workers * _BATCHES_PER_WORKER))))
    try:
        futures = [
            pool.submit(
                run_batch,
                [u for u, _ in todo[i : i + size]],
                [k for _, k in todo[i : i + size]],
                prices,
                timeout,
            )
            for i in range(0, len(todo), size)
        ]
        results: list[Batch] = []
        taken = set()
        try:
            for future in as_completed(futures):
                batch = future.result()
                taken.add(future)
                results.append(batch)
                update(len(batch.results))
        except BrokenProcessPool:
            if not own:
                raise
            left = []
            for start, future in zip(range(0, len(todo), size), futures, strict=True):
                if future in taken:
                    continue
                if future.done() and future.exception() is None:
                    results.append(future.result())
                else:
                    left += todo[start : start + size]
            raise _Broken(results, left) from None
    finally:
        if own:
            pool.shutdown()
    return results


class _Broken(Exception):  # noqa: N818 - control flow, never leaves this module
    """The pool broke: ``done`` results came back, ``left`` units did not."""

    def __init__(self, done: list[Batch], left: list[tuple[Unit, str | None]]) -> None:
        super().__init__(f"{len(left)} unit(s) left")
        self.done, self.left = done, left


def _spawned(workers: int) -> ProcessPoolExecutor:
    """A pool of fresh processes: forked from a fork server where there is one, else spawned.

    Never forked from this process: polars' threads do not survive a fork. The fork
    server is a fresh process too, which loads tiktoken's table and genai-prices once
    for all workers (:mod:`cacheviz.scanning._child`; started before the walk when the
    scan looked big, :func:`~cacheviz.scanning._child.start_early`).
    """
    if not _child.start_server():  # Windows (no fork server), or no Unix socket to serve on
        spawn = get_context("spawn")
        return ProcessPoolExecutor(workers, mp_context=spawn, initializer=single_threaded)
    _child.used()
    server = get_context("forkserver")
    return ProcessPoolExecutor(workers, mp_context=server, initializer=single_threaded)


def _pool_starts() -> bool:
    """Whether a worker process can start at all (not so from an unguarded script)."""
    probe = _spawned(1)
    try:
        probe.submit(os.getpid).result()
    except BrokenProcessPool:
        return False
    finally:
        probe.shutdown()
    return True


def _isolated(
    todo: list[tuple[Unit, str | None]],
    update: Callable[[int], Any],
    prices: str | None,
    timeout: float | None = None,
) -> list[Batch]:
    """Run the units a broken pool left, one at a time in a worker of their own.

    A worker was killed (out of memory, a signal): the unit that kills its worker again
    is marked failed, naming its file; every other unit is analysed as usual.
    """
    results: list[Batch] = []
    pool: ProcessPoolExecutor | None = None
    try:
        for unit, known in todo:
            pool = pool or _spawned(1)
            try:
                results.append(pool.submit(run_batch, [unit], [known], prices, timeout).result())
            except BrokenProcessPool:
                pool.shutdown(wait=False)
                pool = None
                error = (
                    f"{shown(unit.path)}: the worker process reading it died (killed by "
                    "the system, e.g. out of memory); the other files were scanned"
                )
                failed = UnitResult(shown(unit.path), "failed", "", error=error)
                results.append(packed([failed]))
            update(1)
    finally:
        if pool is not None:
            pool.shutdown()
    return results


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
