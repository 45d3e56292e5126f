"""The segments frame (Whale's CacheShape): one row per (call, segment), and Whale's hashes."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from operator import attrgetter

import polars as pl

from cacheviz import _schema
from cacheviz._util.seq import common_prefix
from cacheviz.model import OPAQUE, PARTS, Block, Call, Session

TAIL_MESSAGES = 8  # Whale's cacheShapeTailMessages
# (call, slot) as one integer: slots (part << 32 | position) stay below 2 ** 34
_CALL_STRIDE = 1 << 34
_BLOCK_ID = attrgetter("id")


def _chain_hash(hashes: Sequence[str]) -> str:
    return hashlib.sha256("".join(hashes).encode()).hexdigest()[:16]


def log_hashes(call: Call) -> tuple[str, str]:
    """Whale's log head and tail hashes (tail = the last 8 messages)."""
    cut = max(call.message_start, len(call.hashes) - TAIL_MESSAGES)
    return _chain_hash(call.hashes[call.message_start : cut]), _chain_hash(call.hashes[cut:])


def prefix_hash(call: Call) -> str:
    """Whale's prefix hash: over the hashes of the tools and system segments."""
    return _chain_hash(call.hashes[: call.message_start])


def previous_codes(keys: pl.Series, wanted: pl.Series, codes: pl.Series) -> pl.Series:
    """``codes`` at the row whose key is each of ``wanted`` (null when none is, or null).

    ``keys`` are distinct; sorted (calls by index, each in slot order: the usual case),
    they are bisected, else joined.
    """
    if keys.len() and keys.is_sorted():
        at = keys.search_sorted(wanted.fill_null(-1)).clip(0, keys.len() - 1)
        found = (keys.gather(at) == wanted).fill_null(value=False)
        missing = pl.Series([None], dtype=codes.dtype)
        return codes.gather(at).zip_with(found, missing).alias("prev_code")
    table = pl.DataFrame({"_key": keys, "prev_code": codes})
    return (
        wanted.alias("_key")
        .to_frame()
        .join(table, on="_key", how="left", maintain_order="left")["prev_code"]
    )


def segments_frame(
    session: Session,
    calls: pl.DataFrame,
    lengths: dict[str, dict[str, int]],
    offsets: Sequence[Sequence[int]] | None = None,
) -> pl.DataFrame:
    """One row per (call, segment), built with joins over the distinct blocks.

    Parameters
    ----------
    session
        The session (its ``blocks`` table gives part, position, label and hash).
    calls
        The calls frame (index, thread, encoding, prefix_tokens, prev_call, n_segments).
    lengths
        Token count of each content hash, per encoding (``local_tokens``).
    offsets
        Per call, the provider-token offsets of its blocks (the calibrated axis,
        :mod:`cacheviz.prefix._calibrate`): ``tokens`` and ``token_offset`` are read from them,
        in the units of the calls' ``prefix_tokens``. Without them, the local counts.

    Returns
    -------
    polars.DataFrame
        With :data:`cacheviz._schema.SEGMENTS` columns. ``status`` is ``same`` when the
        segment lies inside the call's common prefix; else ``changed`` / ``invalidated``
        when the previous call of the thread had other / the same bytes at that
        (part, position); else ``new``. ``stability`` is ``immutable`` when every call
        of the thread that reaches a (part, position) sends the same hash there.
    """
    table = session.blocks
    contents = session.contents
    info = calls.select(
        pl.col("call").alias("call"), "thread", "encoding", "prefix_tokens", "prev_call"
    )
    encodings = info["encoding"].unique().to_list()
    part_codes = {part: code for code, part in enumerate(PARTS)}
    # each distinct hash as a small integer: comparisons and groups on it, not on strings
    hash_codes: dict[str, int] = {}
    blocks = pl.DataFrame(
        {
            "part": [b.part for b in table],
            "position": [b.position for b in table],
            # (part, position) as one integer, for cheap joins and windows
            "slot": [part_codes[b.part] << 32 | b.position for b in table],
            "label": [_schema.clean(b.label) for b in table],
            "hash": [b.hash for b in table],
            "hash_code": [hash_codes.setdefault(b.hash, len(hash_codes)) for b in table],
            "bytes": [len(contents[b.hash].raw) for b in table],
            "opaque": [contents[b.hash].kind == OPAQUE for b in table],
            **{f"tokens:{name}": [lengths[name].get(b.hash) for b in table] for name in encodings},
        },
        schema_overrides={"position": pl.Int64, "slot": pl.Int64, "hash_code": pl.Int64},
    )
    tokens = pl.col(f"tokens:{encodings[0]}") if encodings else pl.lit(None, pl.Int64)
    for name in encodings[1:]:
        tokens = (
            pl.when(pl.col("encoding") == name).then(pl.col(f"tokens:{name}")).otherwise(tokens)
        )
    # per call its block ids; a call re-sends its predecessor's leading blocks (the very
    # objects; equal blocks have equal ids), so those ids are copied, not looked up again
    block_ids, flat = array("q"), array("q")
    indices, counts, firsts = array("q"), array("q"), array("q")
    previous: list[Block] = []
    previous_ids = array("q")
    for call in session.calls:
        sent = call.blocks
        shared = common_prefix(previous, sent)
        ids = previous_ids[:shared]
        ids.extend(map(_BLOCK_ID, sent[shared:]))
        block_ids.extend(ids)
        previous, previous_ids = sent, ids
        indices.append(call.index)
        counts.append(len(sent))
        if offsets is not None:
            firsts.append(len(flat))
            flat.extend(offsets[call.index])
    block = pl.Series("block", block_ids, dtype=pl.Int64)
    row_calls = (
        pl.Series("call", indices, dtype=pl.Int64)
        .repeat_by(pl.Series(counts, dtype=pl.UInt32))
        .explode()
        .drop_nulls()  # a call without blocks has no rows (its empty list explodes to null)
    )
    rows = pl.DataFrame({"call": row_calls, "block": block})
    # a block's attributes by its row in the table (block ids are 0..n-1): a gather
    rows = rows.with_columns(blocks[block])
    if info["call"].to_list() == list(range(info.height)):  # calls by index: a gather too
        rows = rows.with_columns(info.drop("call")[rows["call"]])
    else:
        rows = rows.join(info, on="call", how="left", maintain_order="left")
    # provider tokens per block (the calibrated axis), in the rows' order: the differences
    # of each call's consecutive offsets
    if offsets is not None:
        everything = pl.Series("_mapped", flat, dtype=pl.Int64)
        # every difference but the one across two calls (at each call's first offset)
        within = pl.repeat(value=True, n=len(flat), eager=True)
        within = within.scatter(pl.Series(firsts, dtype=pl.Int64), False)
        mapped = everything.diff().filter(within)
    else:
        mapped = pl.Series("_mapped", [None] * rows.height, dtype=pl.Int64)
    threads = {name: code for code, name in enumerate(info["thread"].unique().to_list())}
    seg = (
        rows.with_columns(mapped)
        .with_columns(local_tokens=tokens)
        .with_columns(tokens=pl.coalesce("_mapped", "local_tokens"))
        .with_columns(
            token_offset=pl.col("tokens").cum_sum().over("call") - pl.col("tokens"),
            thread_code=pl.col("thread").replace_strict(threads, return_dtype=pl.Int64),
        )
    )
    # past the common prefix (a few rows per call), the hash the previous call of the
    # thread had at the same (part, position), found by (call, slot) as one integer key
    inside = (pl.col("token_offset") + pl.col("tokens") <= pl.col("prefix_tokens")).fill_null(
        value=False
    )
    keys = seg.select(pl.col("call") * _CALL_STRIDE + pl.col("slot"))["call"]
    outside = seg.select(
        pl.int_range(pl.len(), dtype=pl.UInt32).alias("_row"),
        inside.alias("_inside"),
        (pl.col("prev_call") * _CALL_STRIDE + pl.col("slot")).alias("_key"),
        "hash_code",
    ).filter(~pl.col("_inside"))
    outside = outside.with_columns(
        prev_code=previous_codes(keys, outside["_key"], seg["hash_code"])
    )
    outside = outside.select(
        "_row",
        status=pl.when(pl.col("prev_code").is_null())
        .then(pl.lit("new"))
        .when(pl.col("prev_code") == pl.col("hash_code"))
        .then(pl.lit("invalidated"))
        .otherwise(pl.lit("changed")),
    )
    status = pl.repeat("same", seg.height, dtype=pl.String, eager=True).scatter(
        outside["_row"], outside["status"]
    )
    same_place = pl.col("hash_code").n_unique().over(["thread_code", "slot"]) == 1
    seg = seg.with_columns(
        status=status,
        stability=pl.when(same_place).then(pl.lit("immutable")).otherwise(pl.lit("dynamic")),
    )
    return seg.select([pl.col(name).cast(dtype) for name, dtype in _schema.SEGMENTS.items()])
