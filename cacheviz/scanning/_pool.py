"""Run the per-unit work: in this process, on a spawned process pool, or any executor."""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, contextmanager, suppress
from multiprocessing import get_context
from typing import Any

from cacheviz.errors import CacheVizWarning
from cacheviz.scanning._child import single_threaded
from cacheviz.scanning._walk import Unit, shown
from cacheviz.scanning._worker import UnitResult, run_batch, run_unit

POOL_BYTES = 8 << 20  # less work than this is analysed in this process (spawning costs ~1 s)
_BATCHES_PER_WORKER = 4
_MAX_BATCH = 32


def execute(
    todo: list[tuple[Unit, str | None]],
    executor: Executor | None,
    jobs: int | None,
    show: bool,
    prices: str | None,
    timeout: float | None = None,
) -> list[UnitResult]:
    """Run the units, serially for small scans, else in batches on the executor.

    Each unit within ``timeout`` seconds (:func:`~cacheviz.scanning._worker.run_unit`).
    """
    if not todo:
        return []
    bar = _bar(len(todo)) if show else None
    stack = ExitStack()
    update: Callable[[int], Any] = bar.update if bar is not None else (lambda _n: None)

    def serial() -> list[UnitResult]:
        results = []
        rates: dict[str, Any] = {}  # one price book for the scan's sessions
        for unit, known in todo:
            results.append(run_unit(unit, known, prices, rates, timeout))
            update(1)
        return results

    try:
        workers = jobs or os.cpu_count() or 1
        if executor is None and (workers == 1 or _size(todo) < POOL_BYTES):
            return serial()
        if executor is None:
            stack.enter_context(_fork_server())
            try:
                return _on_pool(todo, None, workers, update, prices, timeout)
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
                return sorted(broken.done + rest, key=lambda r: r.path)
        return _on_pool(todo, executor, workers, update, prices, timeout)
    finally:
        stack.close()
        if bar is not None:
            bar.close()


def _on_pool(
    todo: list[tuple[Unit, str | None]],
    executor: Executor | None,
    workers: int,
    update: Callable[[int], Any],
    prices: str | None,
    timeout: float | None = None,
) -> list[UnitResult]:
    """Run the units in batches on ``executor`` (default: a spawned process pool)."""
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
        results = []
        taken = set()
        try:
            for future in as_completed(futures):
                batch = future.result()
                taken.add(future)
                results += batch
                update(len(batch))
        except BrokenProcessPool:
            if not own:
                raise
            left = []
            for start, future in zip(range(0, len(todo), size), futures, strict=True):
                if future in taken:
                    continue
                if future.done() and future.exception() is None:
                    results += future.result()
                else:
                    left += todo[start : start + size]
            raise _Broken(results, left) from None
    finally:
        if own:
            pool.shutdown()
    return sorted(results, key=lambda r: r.path)


class _Broken(Exception):  # noqa: N818 - control flow, never leaves this module
    """The pool broke: ``done`` results came back, ``left`` units did not."""

    def __init__(self, done: list[UnitResult], left: list[tuple[Unit, str | None]]) -> None:
        super().__init__(f"{len(left)} unit(s) left")
        self.done, self.left = done, left


def _spawned(workers: int) -> ProcessPoolExecutor:
    """A pool of fresh processes: forked from a fork server where there is one, else spawned.

    Never forked from this process: polars' threads do not survive a fork. The fork
    server is a fresh process too, which loads tiktoken's table and genai-prices once
    for all workers (:mod:`cacheviz.scanning._child`).
    """
    try:
        server = get_context("forkserver")
        server.set_forkserver_preload(["cacheviz.scanning._warm"])
        from multiprocessing import forkserver

        forkserver.ensure_running()  # here, so that a server that can't start is one error
    except (ValueError, OSError):  # Windows (no fork server), or no Unix socket to serve on
        spawn = get_context("spawn")
        return ProcessPoolExecutor(workers, mp_context=spawn, initializer=single_threaded)
    return ProcessPoolExecutor(workers, mp_context=server, initializer=single_threaded)


@contextmanager
def _fork_server() -> Iterator[None]:
    """Stop the fork server after the scan if the scan started it.

    It holds tiktoken's table and genai-prices' data for the workers; stopping it frees
    them, and waiting for it is what counts its workers' CPU time as this process's
    children's (as a spawned pool's workers are). A fork server that ran before (the
    caller's own) is left running.
    """
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    ours = server is not None and getattr(server, "_forkserver_pid", 0) is None
    try:
        yield
    finally:
        stop = getattr(server, "_stop", None)
        if ours and stop is not None:
            with suppress(Exception):  # a private hook: never let it fail a scan
                stop()


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
) -> list[UnitResult]:
    """Run the units a broken pool left, one at a time in a worker of their own.

    A worker was killed (out of memory, a signal): the unit that kills its worker again
    is marked failed, naming its file; every other unit is analysed as usual.
    """
    results: list[UnitResult] = []
    pool: ProcessPoolExecutor | None = None
    try:
        for unit, known in todo:
            pool = pool or _spawned(1)
            try:
                results += pool.submit(run_batch, [unit], [known], prices, timeout).result()
            except BrokenProcessPool:
                pool.shutdown(wait=False)
                pool = None
                error = (
                    f"{shown(unit.path)}: the worker process reading it died (killed by "
                    "the system, e.g. out of memory); the other files were scanned"
                )
                results.append(UnitResult(shown(unit.path), "failed", "", error=error))
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
