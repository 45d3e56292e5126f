"""The timeline view's data: one row per call, and the TTL behind its idle marks.

``widgets/src/views/timeline.js`` draws it: stacked prefix/new bars per call, the
common-prefix line per thread, the reported cache read, drift, miss and idle-gap markers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from cacheviz import providers
from cacheviz._schema import CAUSES, MISS_CAUSES
from cacheviz.ui._shared import clean_label, thread_names

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis


def session_ttl(analysis: Analysis) -> float | None:
    """The TTL the session's evidence shows for its busiest thread (``None``: no evidence).

    Per thread, :mod:`cacheviz.prefix._ttl` reads it from the requests' ``cache_control`` or the
    reported writes (Claude Code's main thread writes 1 h, its sub-agents 5 m).
    """
    known = analysis.calls.filter(pl.col("ttl_seconds").is_not_null())
    if known.is_empty():
        return None
    busiest = known.group_by("thread").agg(pl.len(), pl.col("ttl_seconds").first())
    return float(busiest.sort(["len", "thread"], descending=[True, False])["ttl_seconds"][0])


def default_ttl_seconds(analysis: Analysis, provider: str | None = None) -> float | None:
    """The default cache lifetime of ``provider`` (else of the recorded provider).

    For the recorded provider, the TTL the session's own evidence shows wins
    (:func:`session_ttl`). A provider without a time limit (self-hosted) or an unknown
    one falls back to the default comparison's first vendor, so idle marks stay
    meaningful.
    """
    recorded = analysis.calls["provider"].unique().to_list()
    own = providers.find(recorded[0] if len(recorded) == 1 else None)
    found = providers.find(provider) or own
    if found is not None and (own is None or found.id == own.id):
        evidence = session_ttl(analysis)
        if evidence is not None:
            return evidence
    if found is None or found.default_ttl_seconds is None:
        found = providers.profile(providers.reference_targets()[0].partition(":")[0])
    return found.default_ttl_seconds


def timeline(analysis: Analysis, ttl_seconds: float | str | None = "recorded") -> pl.DataFrame:
    """One row per call: tokens, prefix line, drift, idle gaps, reported read, misses.

    A gap longer than ``ttl_seconds`` is idle (``None``: the cache has no time limit;
    ``"recorded"``: the TTL each call's thread shows, :mod:`cacheviz.prefix._ttl`, else the
    recorded provider's default, :func:`default_ttl_seconds`).
    """
    per_thread = isinstance(ttl_seconds, str)
    if isinstance(ttl_seconds, str):
        ttl_seconds = default_ttl_seconds(analysis)
    calls = analysis.calls
    thread = "thread"
    threads = thread_names(analysis)
    drift_frame = analysis.drifts
    material = (
        pl.col("material") if "material" in drift_frame.columns else pl.col("tokens_lost") > 0
    )
    drifts = drift_frame.select(
        pl.col("call"),
        pl.col("label").alias("drift_label"),
        pl.col("cause"),
        pl.col("tokens_lost"),
        material.alias("material"),
    )
    frame = calls.join(drifts, left_on="call", right_on="call", how="left", maintain_order="left")
    gap = pl.col("ts").diff().over(thread).dt.total_seconds()
    fallback = float("inf") if ttl_seconds is None else float(ttl_seconds)
    ttl = (
        pl.col("ttl_seconds").cast(pl.Float64).fill_null(fallback)
        if per_thread
        else pl.lit(fallback)
    )
    miss_cause = (
        pl.col("miss_cause") if "miss_cause" in calls.columns else pl.lit(None, dtype=pl.String)
    )
    miss_tokens = (
        pl.col("shortfall_tokens")
        if "shortfall_tokens" in calls.columns
        else pl.lit(None, dtype=pl.Int64)
    )
    return frame.select(
        pl.col("call").cast(pl.Int32).alias("call"),
        (pl.col("ts").dt.epoch("ms").cast(pl.Float64)).alias("ts_ms"),
        pl.col(thread)
        .replace_strict(threads, range(len(threads)), return_dtype=pl.Int32)
        .alias("thread"),
        pl.col("input_tokens").cast(pl.Int32),
        pl.col("prefix_tokens").cast(pl.Int32),
        pl.col("new_tokens").cast(pl.Int32),
        pl.col("drift"),
        pl.col("cause")
        .replace_strict(list(CAUSES), range(len(CAUSES)), default=-1, return_dtype=pl.Int32)
        .fill_null(-1),
        pl.col("drift_label").map_elements(clean_label, return_dtype=pl.String).alias("label"),
        pl.col("tokens_lost").fill_null(0).cast(pl.Int32),
        (gap > ttl).fill_null(value=False).alias("idle_gap"),
        pl.col("reported_cache_read_tokens").cast(pl.Int32).alias("reported_read"),
        # reported cache read / reported inclusive input; null (n/a) when not reported
        pl.col("hit_ratio").cast(pl.Float64),
        miss_cause.is_not_null().alias("miss"),
        miss_cause.replace_strict(
            list(MISS_CAUSES), range(len(MISS_CAUSES)), default=-1, return_dtype=pl.Int32
        )
        .fill_null(-1)
        .alias("miss_cause"),
        miss_tokens.cast(pl.Int32).alias("shortfall_tokens"),
        pl.col("material").fill_null(value=False),
    )
