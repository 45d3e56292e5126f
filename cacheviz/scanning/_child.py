"""What a scan's worker processes run first, and the fork server they are forked from.

On Unix the pool's workers are forked from a fork server (``multiprocessing``'s
``forkserver``: a fresh process, never one that ran polars), which imports
:mod:`cacheviz.scanning._warm` once: tiktoken's table and genai-prices' data are then in
every worker from the start instead of being loaded by each (0.6 CPU-s a worker).
Nothing here imports polars: a fork of a process whose polars thread pool had started
would not have its threads; and :func:`start_early` runs before the scanning process
imports polars and the readers, so that the server's preload (~0.8 CPU-s, ~1 s) overlaps
those imports and the walk instead of the scan waiting for it before its first worker.

The server and multiprocessing's resource tracker it starts are this process's children:
:func:`stopped` stops and waits for the ones a scan started (a process left unwaited
becomes a zombie under PID 1 where PID 1 reaps none).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

POOL_BYTES = 8 << 20
"""Less work than this (or one unit) is analysed in the scanning process: a pool costs
~1 s to start, and can share out nothing of one unit."""
PRELOAD = ["cacheviz.scanning._warm"]

_started: dict[str, int | None] = {"server": None, "tracker": None}  # pids started here
_used: list[bool] = [False]  # a worker was forked from the server started here


def single_threaded() -> None:
    """A worker's initializer: polars on one thread (the pool is the parallelism).

    Runs before the worker's first task imports polars' thread pool, in the worker only
    (the parent's environment, and a fork server's, are left as they are).
    """
    os.environ["POLARS_MAX_THREADS"] = "1"


def warm() -> None:
    """Load what every worker needs and no worker should load again (best effort)."""
    try:
        from cacheviz.request._tokens import DEFAULT_ENCODING, get_encoding

        get_encoding(DEFAULT_ENCODING)
    except Exception:
        pass
    try:
        from genai_prices import data_snapshot

        data_snapshot.get_snapshot()
    except Exception:
        pass


def cold(cache: bool | str | Path, prices: str | Path | None) -> bool:
    """Whether a scan with this ``cache`` setting starts with nothing cached."""
    if cache is False:
        return True
    from cacheviz.scanning._cachedir import CHECKSUMS, default_dir, versioned

    folder = default_dir() if cache is True else Path(cache)
    try:
        kept = versioned(folder, None if prices is None else Path(prices))
    except OSError:  # the price file can't be read: the scan says so, with no pool
        return False
    return not (kept / CHECKSUMS).exists()


def start_early(paths: Sequence[Path] | None, jobs: int | None, cold: bool) -> bool:
    """Start the fork server now when the scan about to run will likely take a pool.

    Likely: more than one worker, nothing cached, and :data:`POOL_BYTES` or more in
    several files (a folder's files are counted until that much is found, or
    :data:`_LOOK` entries were seen). The server spawns without waiting for its preload.
    Returns whether a fork server runs; one that is not used is stopped by
    :func:`stop_unused` (the scan turned out small) or :func:`stopped`.
    """
    if not cold or (jobs or os.cpu_count() or 1) < 2:
        return False
    if paths is not None:
        files = [p for p in paths if p.is_file()]
        if len(files) == len(paths) == 1:
            return False  # one file is one unit: no pool
        if not _at_least(paths, POOL_BYTES):
            return False
    return start_server()


_LOOK = 5000  # entries a folder is looked through for start_early (then: likely big)


def _at_least(paths: Sequence[Path], size: int) -> bool:
    """Whether the files under ``paths`` hold ``size`` bytes or more (links not followed).

    Stops at ``size``, or after :data:`_LOOK` entries (then True): a quick look before
    the walk, never a second one of a big tree.
    """
    total = seen = 0
    folders = []
    for path in paths:
        try:
            if path.is_dir():
                folders.append(str(path))
            else:
                total += path.stat().st_size
        except OSError:
            continue
    while folders and total < size:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
        if seen >= _LOOK:
            return True
    return total >= size


def start_server() -> bool:
    """Make sure the fork server runs (started here if none did); False where there is none.

    Not there on Windows, without a Unix socket, or in a process that is importing its
    main script (a worker of an unguarded script: ``multiprocessing`` refuses).
    """
    try:
        from multiprocessing import forkserver, get_context, resource_tracker

        get_context("forkserver").set_forkserver_preload(PRELOAD)
        server: Any = forkserver._forkserver
        tracker: Any = resource_tracker._resource_tracker
        before = (server._forkserver_pid, tracker._pid)
        forkserver.ensure_running()
    except (ValueError, OSError, RuntimeError, AttributeError):
        return False
    if before[0] is None:
        _started["server"] = server._forkserver_pid
        _used[0] = False
    if before[1] is None:
        _started["tracker"] = tracker._pid
    return True


def used() -> None:
    """Note that workers are forked from the server (it is then stopped, not killed)."""
    _used[0] = True


def stop_unused() -> None:
    """Kill and wait for the fork server started here if no worker came of it.

    Killed (``SIGTERM``, by its pid), not asked to stop: a server still importing its
    preload would finish that first.
    """
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver
    pid = _started["server"]
    if pid is None or _used[0] or getattr(server, "_forkserver_pid", None) != pid:
        return
    with suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    _stop(server)
    _started["server"] = None


@contextmanager
def stopped() -> Iterator[None]:
    """Stop, at the end of the block, the fork server and resource tracker it started.

    Started in the block, or before it by :func:`start_early` in this process (the
    command line starts the server before importing the scan). Stopping the server
    frees tiktoken's table and genai-prices' data, and waiting for it is what counts its
    workers' CPU time as this process's children's (as a spawned pool's workers are). A
    fork server that ran before (the caller's own) is left running, and so is its tracker.
    """
    from multiprocessing import forkserver, resource_tracker

    server: Any = getattr(forkserver, "_forkserver", None)
    tracker: Any = getattr(resource_tracker, "_resource_tracker", None)
    pid = getattr(server, "_forkserver_pid", 0)
    server_ours = pid is None or pid == _started["server"]
    tracker_pid = getattr(tracker, "_pid", 0)
    tracker_ours = tracker_pid is None or tracker_pid == _started["tracker"]
    try:
        yield
    finally:
        if server_ours:
            stop_unused()
            _stop(server)
        if tracker_ours:
            _stop(tracker)
        _started["server"] = _started["tracker"] = None
        _used[0] = False


def _stop(hook: Any) -> None:
    stop = getattr(hook, "_stop", None)
    if stop is not None:
        with suppress(Exception):  # a private hook: never let it fail a scan
            stop()
