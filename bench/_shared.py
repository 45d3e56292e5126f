"""What several benchmarks share: a child process of a checkout, the best of N timings.

The scripts run as ``python bench/<name>.py`` (this folder first on ``sys.path``), so
they import this module by its name: ``from _shared import best_seconds, child_json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def child_json(code: str, args: list[str], root: Path) -> dict[str, Any]:
    """The last line ``python -c code *args`` prints (JSON), in a fresh process of ``root``.

    The checkout ``root`` is first on ``PYTHONPATH`` and the working folder (``python -c``
    puts the working folder first on ``sys.path``): the child imports that cacheviz.
    """
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def best_seconds(
    work: Callable[[], object], repeat: int = 1, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The shortest of ``repeat`` timings of ``work()`` by ``clock`` (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        work()
        best = min(best, clock() - start)
    return best
