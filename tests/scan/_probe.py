"""Run in a scan pool's worker (tests only): what the worker had loaded when it started."""

from __future__ import annotations

import os
import sys


def probe() -> tuple[str | None, bool, bool, int]:
    """(POLARS_MAX_THREADS, tiktoken's table loaded, genai-prices loaded, pid)."""
    from cacheviz.request import _tokens as tokens

    loaded = tokens.DEFAULT_ENCODING in tokens._loaded  # built by get_encoding
    return (
        os.environ.get("POLARS_MAX_THREADS"),
        loaded,
        "genai_prices.data_snapshot" in sys.modules,
        os.getpid(),
    )
