"""A stand-in for the scan's per-batch work that dies on files named ``kill*`` (tests only).

It runs in spawned worker processes, so it lives in a module of its own they can import.
"""

from __future__ import annotations

import os
import signal

from cacheviz.scanning._worker import run_batch as real_run_batch


def run_batch(units, known, prices=None, timeout=None, sizes="tokens"):
    """Die like an out-of-memory kill when a unit's file is named ``kill*``."""
    if any(u.path.name.startswith("kill") for u in units):
        os.kill(os.getpid(), signal.SIGKILL)
    return real_run_batch(units, known, prices, timeout, sizes)
