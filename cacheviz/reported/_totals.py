"""The usage a transcript reports for a whole session: ``summary --json``'s totals.

``reported_totals``: for most formats it is the sum of the calls' reported usage, each
field over the calls that report it (``null`` when none does: not reported is not 0).
A format that reports usage only per session (GitHub Copilot CLI's ``session.shutdown``
model metrics) sets ``Session.reported_totals``: that figure is the session's, never
spread over calls.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from cacheviz.model import Session

FIELDS = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",  # the part of output_tokens the log reports as reasoning (thinking)
)


def reported_totals(session: Session, calls: pl.DataFrame) -> dict[str, Any]:
    """Input (inclusive of cache reads and writes), cache read, cache write and output.

    Parameters
    ----------
    session
        The loaded session (its ``reported_totals``, when the format gives one).
    calls
        The analysis' calls frame (its ``reported_*`` columns).

    Returns
    -------
    dict
        The four sums, ``scope`` (``"calls"`` or ``"session"``) and ``calls_reporting``
        (how many calls report usage).
    """
    reporting = calls.filter(pl.col("usage_provenance").is_not_null()).height
    if session.reported_totals is not None:
        usage = session.reported_totals
        out: dict[str, Any] = {name: getattr(usage, name) for name in FIELDS}
        return {**out, "scope": "session", "calls_reporting": reporting}
    out = {}
    for name in FIELDS:
        column = calls[f"reported_{name}"]
        out[name] = None if column.null_count() == column.len() else int(column.sum())
    return {**out, "scope": "calls", "calls_reporting": reporting}
