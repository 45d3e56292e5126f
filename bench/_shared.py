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


CCUSAGE_VARIABLE = "CACHEVIZ_BENCH_CCUSAGE"
"""The environment variable naming a ccusage executable (``--ccusage`` of the scan benches).

ccusage is never a dependency of cacheviz: install it outside the repository, e.g.
``npm install --prefix /work/ccusage ccusage@20.0.24``, and name its native binary
(``node_modules/@ccusage/ccusage-linux-x64/bin/ccusage``, made executable) or its
``node_modules/.bin/ccusage`` script (which starts that binary from node).
"""


def ccusage(path: str | None, claude_config: Path) -> list[str] | None:
    """ccusage's ``claude session --json --offline`` over ``claude_config``, if it runs here.

    ``path`` (else ``$CACHEVIZ_BENCH_CCUSAGE``) is the executable; None when there is none,
    or it fails or reads no session offline (``CLAUDE_CONFIG_DIR=claude_config``, which
    holds ``projects/``). The command must be run with :func:`ccusage_env`.
    """
    path = path or os.environ.get(CCUSAGE_VARIABLE)
    if not path:
        return None
    argv = [path, "claude", "session", "--json", "--offline"]
    try:
        done = subprocess.run(
            argv, env=ccusage_env(claude_config), capture_output=True, timeout=120, check=False
        )
        sessions = json.loads(done.stdout)["sessions"] if done.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError) as exc:
        print(f"ccusage at {path} does not run here ({exc}); the baseline is the usage sum")
        return None
    if not sessions:
        print(f"ccusage at {path} read no session offline; the baseline is the usage sum")
        return None
    return argv


def ccusage_env(claude_config: Path) -> dict[str, str]:
    """The environment ccusage runs in: ``CLAUDE_CONFIG_DIR`` the tree, no colours."""
    return {**os.environ, "CLAUDE_CONFIG_DIR": str(claude_config), "NO_COLOR": "1"}


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
