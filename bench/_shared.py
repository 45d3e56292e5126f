"""What several benchmarks share: a child process of a checkout, the best of N timings,
the generated Anthropic conversation's system prompt and sliding window.

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

REFERENCE_VARIABLE = "CACHEVIZ_BENCH_REFERENCE"
"""The environment variable naming the checkout a benchmark compares this one with."""


def reference_root() -> Path | None:
    """The other checkout to compare with: ``$CACHEVIZ_BENCH_REFERENCE``, else None."""
    value = os.environ.get(REFERENCE_VARIABLE)
    return Path(value) if value else None


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


#: The generated sessions' system prompt: one text block with a breakpoint.
SYSTEM = [
    {
        "type": "text",
        "text": "You are a careful engineer. " * 300,
        "cache_control": {"type": "ephemeral"},
    }
]


def sliding_window(history: list[dict[str, Any]], i: int) -> list[dict[str, Any]]:
    """The messages call ``i`` sends: the last 40 of ``history``, from a user turn on.

    Every 50th call (``i % 50 == 49``) rewrites the oldest message it sends: a drift.
    """
    window = history[-40:]
    if window[0]["role"] != "user":
        window = window[1:]
    if i % 50 == 49:  # a drift: an old message rewritten
        window = [
            {"role": "user", "content": [{"type": "text", "text": f"rewritten {i}"}]},
            *window[1:],
        ]
    return window
