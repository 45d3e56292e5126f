"""Run in a scan pool's worker (tests only): what the worker had loaded when it started."""

from __future__ import annotations

import os
import sys


def probe() -> tuple[str | None, bool, bool, int]:
    """(POLARS_MAX_THREADS, tiktoken's table loaded, genai-prices loaded, pid)."""
    import tiktoken.registry

    from cacheviz.tokens import DEFAULT_ENCODING

    loaded = DEFAULT_ENCODING in getattr(tiktoken.registry, "ENCODINGS", {})
    return (
        os.environ.get("POLARS_MAX_THREADS"),
        loaded,
        "genai_prices.data_snapshot" in sys.modules,
        os.getpid(),
    )
