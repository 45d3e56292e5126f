"""CacheShape: per-segment rows, their stability, and Whale's per-call summary."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import polars as pl

from cacheviz.model import Block

TAIL_MESSAGES = 8  # Whale's cacheShapeTailMessages


def _chain_hash(hashes: Sequence[str]) -> str:
    return hashlib.sha256("".join(hashes).encode()).hexdigest()[:16]


def log_hashes(blocks: Sequence[Block]) -> tuple[str, str]:
    """Whale's log head and tail hashes (tail = the last 8 messages)."""
    messages = [b.hash for b in blocks if b.part == "messages"]
    cut = max(0, len(messages) - TAIL_MESSAGES)
    return _chain_hash(messages[:cut]), _chain_hash(messages[cut:])


def segment_status(
    index: int,
    block: Block,
    end_offset: int,
    prefix_tokens: int,
    previous: Sequence[Block] | None,
) -> str:
    """``same`` inside the prefix; ``changed``/``invalidated`` at a position the previous
    call had (other bytes / same bytes past the break); ``new`` beyond it."""
    if end_offset <= prefix_tokens:
        return "same"
    if previous is not None and index < len(previous):
        before = previous[index]
        if before.part == block.part and before.position == block.position:
            return "invalidated" if before.hash == block.hash else "changed"
    return "new"


def with_stability(segments: pl.DataFrame) -> pl.DataFrame:
    """Set ``stability``: immutable when every call of the lineage that reaches a
    (part, position) sends the same hash there, dynamic otherwise."""
    same = pl.col("hash").n_unique().over(["lineage", "part", "position"]) == 1
    return segments.with_columns(
        stability=pl.when(same).then(pl.lit("immutable")).otherwise(pl.lit("dynamic"))
    )
