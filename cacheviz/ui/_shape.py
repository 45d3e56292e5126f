"""The shape map's data: each call's runs of one segment status on the token axis.

``widgets/src/views/shape.js`` draws it: one horizontal bar per call made of its status
runs, the common-prefix line through the bars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from cacheviz.ui import _segment_rows as segment_rows

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.ui._segment_rows import SegmentRows


def shape_runs(analysis: Analysis, rows: SegmentRows | None = None) -> pl.DataFrame:
    """Runs of consecutive segments with the same status, per call, on the token axis.

    From ``rows`` (:func:`cacheviz.ui._segment_rows.segment_rows`) when given, else from
    the segments frame when it is built, else from
    :func:`~cacheviz.ui._segment_rows.report_rows` (which does not build it: millions of
    rows for a long session).
    """
    if rows is None and getattr(analysis, "_segments", None) is None:
        rows = segment_rows.report_rows(analysis)
    if rows is not None:
        return rows.shape
    segments = analysis.segments
    status = (
        pl.when(pl.col("opaque"))
        .then(pl.lit(segment_rows.UNLOGGED_STATUS))
        .otherwise(pl.col("status").replace_strict(segment_rows.STATUS, return_dtype=pl.Int8))
        .cast(pl.Int8)
    )
    # a run: consecutive rows of one call with one status (a call's rows are together)
    return segment_rows.runs(
        segments.select("call", "token_offset", "tokens", status.alias("status"))
    )
