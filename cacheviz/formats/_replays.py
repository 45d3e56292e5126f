"""One API response logged twice is one call: the rule for finding the repeats.

A forked sub-agent (Claude Code's ``agent-acompact-*`` compaction agent, its
``agent-aside_question-*`` side question) starts by replaying its parent's responses,
with the same provider response id; a resumed session repeats the responses of the one
it resumes. Both the session loaders (:mod:`cacheviz.formats.claude_code`) and
``cacheviz scan`` (:mod:`cacheviz.scanning._scanner`) keep one call per response id with
:func:`flag_replays`, so a session and a scan of it count the same calls.
"""

from __future__ import annotations

import polars as pl

REPLAY_KEY = ("provider", "response_id", "ts", "path", "parent_thread", "call")
"""The columns :func:`flag_replays` reads."""

REPEAT = "_repeat"
REPLAYED = "response replayed by a forked sub-agent"
"""The ``Session.ignored`` kind of the repeats a loader dropped."""


def flag_replays(calls: pl.DataFrame) -> pl.DataFrame:
    """Order ``calls`` and flag (column ``_repeat``) every repeat of an earlier response.

    The copy kept of each ``provider:response_id`` is a parent thread's (``parent_thread``
    null) before a sub-agent's, then the earliest by request time, then by path, then the
    reader's order (``index``). Calls without a response id are never repeats.

    Parameters
    ----------
    calls
        A frame with the columns of :data:`REPLAY_KEY` (and any others).

    Returns
    -------
    polars.DataFrame
        ``calls`` in that order, with a boolean ``_repeat`` column.
    """
    ordered = calls.sort(
        [pl.col("parent_thread").is_not_null(), pl.col("ts"), pl.col("path"), pl.col("call")],
        nulls_last=True,
        maintain_order=True,
    )
    key = pl.concat_str(["provider", "response_id"], separator=":")
    repeat = pl.when(pl.col("response_id").is_not_null()).then(pl.int_range(pl.len()).over(key) > 0)
    return ordered.with_columns(repeat.fill_null(value=False).alias(REPEAT))
