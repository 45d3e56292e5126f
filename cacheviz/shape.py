"""CacheShape: per-segment rows, their stability, and Whale's per-call summary."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence

import polars as pl

from cacheviz import _schema
from cacheviz.model import Block, Session

TAIL_MESSAGES = 8  # Whale's cacheShapeTailMessages


def _chain_hash(hashes: Sequence[str]) -> str:
    return hashlib.sha256("".join(hashes).encode()).hexdigest()[:16]


def log_hashes(blocks: Sequence[Block]) -> tuple[str, str]:
    """Whale's log head and tail hashes (tail = the last 8 messages)."""
    messages = [b.hash for b in blocks if b.part == "messages"]
    cut = max(0, len(messages) - TAIL_MESSAGES)
    return _chain_hash(messages[:cut]), _chain_hash(messages[cut:])


def segments_frame(
    session: Session,
    calls: pl.DataFrame,
    row_calls: array,
    block_ids: array,
    lengths: dict[str, dict[str, int]],
) -> pl.DataFrame:
    """One row per (call, segment), built with joins over the distinct blocks.

    Parameters
    ----------
    session
        The session (its ``blocks`` table gives part, position, label and hash).
    calls
        The calls frame (index, lineage, encoding, prefix_tokens, prev_call, n_segments).
    row_calls, block_ids
        One entry per (call, segment), in call order: the call index and the block id.
    lengths
        Token count of each content hash, per encoding.

    Returns
    -------
    polars.DataFrame
        With :data:`cacheviz._schema.SEGMENTS` columns. ``status`` is ``same`` when the
        segment lies inside the call's common prefix; else ``changed`` / ``invalidated``
        when the previous call of the lineage had other / the same bytes at that
        (part, position); else ``new``. ``stability`` is ``immutable`` when every call
        of the lineage that reaches a (part, position) sends the same hash there.
    """
    table = session.blocks
    blocks = pl.DataFrame(
        {
            "block": pl.int_range(len(table), eager=True),
            "part": [b.part for b in table],
            "position": [b.position for b in table],
            "label": [b.label for b in table],
            "hash": [b.hash for b in table],
        },
        schema_overrides={"block": pl.Int64, "position": pl.Int64},
    )
    sizes = pl.DataFrame(
        {"hash": list(session.contents), "bytes": [len(c.raw) for c in session.contents.values()]},
        schema={"hash": pl.String, "bytes": pl.Int64},
    )
    tokens = pl.concat(
        [
            pl.DataFrame(
                {"encoding": name, "hash": list(counts), "tokens": list(counts.values())},
                schema={"encoding": pl.String, "hash": pl.String, "tokens": pl.Int64},
            )
            for name, counts in lengths.items()
        ]
        or [pl.DataFrame(schema={"encoding": pl.String, "hash": pl.String, "tokens": pl.Int64})]
    )
    info = calls.select(
        pl.col("index").alias("call"), "lineage", "encoding", "prefix_tokens", "prev_call"
    )
    rows = pl.DataFrame(
        {"call": pl.Series(row_calls, dtype=pl.Int64), "block": pl.Series(block_ids, dtype=pl.Int64)}
    )
    seg = (
        rows.join(blocks, on="block", how="left", maintain_order="left")
        .join(info, on="call", how="left", maintain_order="left")
        .join(tokens, on=["encoding", "hash"], how="left", maintain_order="left")
        .join(sizes, on="hash", how="left", maintain_order="left")
        .with_columns(token_offset=pl.col("tokens").cum_sum().over("call") - pl.col("tokens"))
    )
    before = seg.select(
        pl.col("call").alias("prev_call"), "part", "position", pl.col("hash").alias("prev_hash")
    )
    seg = seg.join(before, on=["prev_call", "part", "position"], how="left", maintain_order="left")
    inside = pl.col("token_offset") + pl.col("tokens") <= pl.col("prefix_tokens")
    same_place = pl.col("hash").n_unique().over(["lineage", "part", "position"]) == 1
    seg = seg.with_columns(
        status=pl.when(inside)
        .then(pl.lit("same"))
        .when(pl.col("prev_hash").is_null())
        .then(pl.lit("new"))
        .when(pl.col("prev_hash") == pl.col("hash"))
        .then(pl.lit("invalidated"))
        .otherwise(pl.lit("changed")),
        stability=pl.when(same_place).then(pl.lit("immutable")).otherwise(pl.lit("dynamic")),
    )
    return seg.select([pl.col(name).cast(dtype) for name, dtype in _schema.SEGMENTS.items()])
