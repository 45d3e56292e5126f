"""What a scan's worker processes run first, and what their fork server loads once.

On Unix the pool's workers are forked from a fork server (``multiprocessing``'s
``forkserver``: a fresh process, never one that ran polars), which imports
:mod:`cacheviz.scanning._warm` once: tiktoken's table and genai-prices' data are then in
every worker from the start instead of being loaded by each (0.6 CPU-s a worker).
Nothing here imports polars: a fork of a process whose polars thread pool had started
would not have its threads.
"""

from __future__ import annotations

import os


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
