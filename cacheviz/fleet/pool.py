"""Run the per-unit work: in this process, on a spawned process pool, or any executor."""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, suppress
from multiprocessing import get_context
from typing import Any

from cacheviz.errors import CacheVizWarning
from cacheviz.fleet.walk import Unit
from cacheviz.fleet.worker import UnitResult, run_batch, run_unit

POOL_BYTES = 8 << 20  # less work than this is analysed in this process (spawning costs ~1 s)
_BATCHES_PER_WORKER = 4
_MAX_BATCH = 32


def execute(
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
        if executor is None and (workers == 1 or _size(todo) < POOL_BYTES):
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
