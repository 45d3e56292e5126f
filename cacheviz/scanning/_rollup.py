"""Roll a scan's calls up: per session, per period, per project; the cache busters.

Sums follow the "not reported is null" rule: a sum over calls none of which reported a
figure is null, not 0. Costs are summed over the calls that have one; ``unpriced_calls``
counts the calls with usage but no price, so a partial sum is never mistaken for a
whole one.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time
from typing import Any

import polars as pl

from cacheviz import _schema

BY = ("day", "week", "month", "session", "project", "model")
_TOKENS = {
    "input_tokens": "reported_input_tokens",  # inclusive: uncached + cache read + write
    "cache_read_tokens": "reported_cache_read_tokens",
    "cache_write_tokens": "reported_cache_write_tokens",
    "cache_write_5m_tokens": "reported_cache_write_5m_tokens",
    "cache_write_1h_tokens": "reported_cache_write_1h_tokens",
    "output_tokens": "reported_output_tokens",
    "reasoning_tokens": "reported_reasoning_tokens",  # part of output_tokens, when reported
}
VERDICT_COLUMNS = ("verdicts_compared", "verdicts_agree", "verdict_agree_rate")
_MESSAGE_LABEL = re.compile(r"#\d+$")


def _sum(column: str, alias: str | None = None) -> pl.Expr:
    """Sum, null when every value is null."""
    col = pl.col(column)
    return pl.when(col.is_not_null().any()).then(col.sum()).alias(alias or column)


def _money() -> list[pl.Expr]:
    return [
        _sum("billed_usd"),
        _sum("ideal_usd"),
        _sum("waste_usd"),
        (pl.col("reported_input_tokens").is_not_null() & pl.col("billed_usd").is_null())
        .sum()
        .alias("unpriced_calls"),
        _sum("reported_cost_usd"),
    ]


def _amounts() -> list[pl.Expr]:
    return [
        pl.col("session").n_unique().alias("sessions"),
        pl.len().alias("calls"),
        *(_sum(source, name) for name, source in _TOKENS.items()),
        _schema.hit_ratio_expr("reported_cache_read_tokens", "reported_input_tokens"),
        *_money(),
        *_verdicts(),
    ]


def _verdicts() -> list[pl.Expr]:
    """How often cacheviz's reading agrees with the provider's own verdicts.

    ``verdicts_compared`` counts the comparable verdicts compared, ``verdicts_agree``
    those cacheviz agrees with (both null when no call asked the provider for one:
    not requested is not 0), ``verdict_agree_rate`` their ratio (null: none compared).
    """
    requested = pl.col("provider_verdict").is_not_null().any()
    compared = pl.col("verdict_agrees").is_not_null().sum().cast(pl.Int64)
    agree = pl.col("verdict_agrees").fill_null(value=False).sum().cast(pl.Int64)
    return [
        pl.when(requested).then(compared).alias("verdicts_compared"),
        pl.when(requested).then(agree).alias("verdicts_agree"),
        pl.when(compared > 0).then(agree / compared).alias("verdict_agree_rate"),
    ]


def _by_use(column: str) -> pl.Expr:
    """A group's distinct values, most calls first (then by name), joined with ``, ``."""
    counts = pl.col(column).drop_nulls().value_counts(sort=True, name="_n")
    return counts.struct.field(column).str.join(", ")


def _waste(frame: pl.DataFrame) -> pl.DataFrame:
    """The waste column, summed per call (metrics.py: billed - ideal, never negative)."""
    return frame


def sessions(calls: pl.DataFrame, drifts: pl.DataFrame) -> pl.DataFrame:
    """One row per session, ranked by waste, then billed cost (largest first)."""
    counts = drifts.group_by("session").agg(pl.len().alias("drifts"))
    frame = calls.group_by("session").agg(
        pl.col("path").first(),
        pl.col("format").first(),
        pl.col("project").first(),
        pl.col("usage_only").first(),
        pl.col("ts").min().alias("first_ts"),
        pl.col("ts").max().alias("last_ts"),
        _by_use("model").alias("models"),
        pl.col("title").drop_nulls().first().alias("title"),
        *_amounts(),
    )
    frame = _waste(frame.drop("sessions")).join(counts, on="session", how="left")
    frame = frame.with_columns(pl.col("drifts").fill_null(0).cast(pl.Int64))
    return frame.sort(
        ["waste_usd", "billed_usd", "session"], descending=[True, True, False], nulls_last=True
    )


def busters(drifts: pl.DataFrame, misses: pl.DataFrame) -> pl.DataFrame:
    """Drifts and misses grouped by (kind, cause, part, label), costliest first.

    ``drifts`` counts every event, ``material`` those that cost something (a drift whose
    kept prefix would not have been read anyway is not material). A message's label
    loses its position (``user#12`` → ``user``): the same edit at
    different depths of different sessions is one buster.
    """
    drift_rows = drifts.select(
        pl.lit("drift").alias("kind"),
        "cause",
        "part",
        pl.col("label").str.replace(_MESSAGE_LABEL.pattern, ""),
        "session",
        pl.col("tokens_lost").alias("tokens"),
        "cost_usd",
        pl.col("material"),
    )
    miss_rows = misses.select(
        pl.lit("miss").alias("kind"),
        "cause",
        pl.lit(None, pl.String).alias("part"),
        pl.lit(None, pl.String).alias("label"),
        "session",
        pl.col("shortfall_tokens").alias("tokens"),
        "cost_usd",
        pl.lit(True).alias("material"),  # a miss is a read the provider did not serve
    )
    rows = pl.concat([drift_rows, miss_rows])
    grouped = rows.group_by(["kind", "cause", "part", "label"]).agg(
        pl.len().alias("drifts"),
        pl.col("material").fill_null(value=True).sum().alias("material"),
        pl.col("session").n_unique().alias("sessions"),
        _sum("tokens"),
        _sum("cost_usd"),
    )
    return grouped.sort(
        ["cost_usd", "tokens", "drifts", "cause"],
        descending=[True, True, True, False],
        nulls_last=True,
    )


def projects(calls: pl.DataFrame) -> pl.DataFrame:
    """Per project: sessions, calls, costs and the distinct system+tools prefixes sent.

    ``prefixes`` counts distinct ``prefix_hash`` values (null when no call of the
    project logged its system prompt and tools, e.g. conversation-only logs).
    """
    frame = calls.group_by("project").agg(
        *_amounts(),
        pl.when(pl.col("prefix_hash").is_not_null().any())
        .then(pl.col("prefix_hash").drop_nulls().n_unique())
        .alias("prefixes"),
    )
    return _waste(frame).sort(["billed_usd", "project"], descending=[True, False], nulls_last=True)


def _day(text: str, option: str) -> date:
    cleaned = text.replace("-", "")
    try:
        if len(cleaned) != 8 or not cleaned.isdigit():
            raise ValueError(text)
        return date(int(cleaned[:4]), int(cleaned[4:6]), int(cleaned[6:8]))
    except ValueError:
        msg = (
            f"{option} {text!r}: expected a date as YYYY-MM-DD or YYYYMMDD, "
            "or a time as YYYY-MM-DDTHH:MM"
        )
        raise ValueError(msg) from None


def _bound(text: str, option: str) -> date | datetime:
    """A ``--since`` / ``--until`` value: a day, or a time of day (``T`` or a space)."""
    for sep in ("T", " "):
        if sep in text.strip():
            day, _, clock = text.strip().partition(sep)
            try:
                moment = datetime.fromisoformat(f"{_day(day, option).isoformat()}T{clock}")
            except ValueError:
                moment = None
            if moment is None or moment.tzinfo is not None:
                msg = f"{option} {text!r}: expected a time as YYYY-MM-DDTHH:MM[:SS] (in --tz)"
                raise ValueError(msg) from None
            return moment
    return _day(text, option)


def _localized(calls: pl.DataFrame, tz: str) -> pl.DataFrame:
    if not tz.strip():
        msg = "--tz '': expected an IANA time zone name such as UTC or Europe/Paris"
        raise ValueError(msg)
    try:
        local = pl.col("ts").dt.convert_time_zone(tz)
        return calls.with_columns(local.dt.date().alias("_date"), local.alias("_local"))
    except pl.exceptions.PolarsError:
        msg = f"--tz {tz!r}: not a time zone; expected an IANA name such as Europe/Paris"
        raise ValueError(msg) from None


def between(
    calls: pl.DataFrame, *, tz: str = "UTC", since: str | None = None, until: str | None = None
) -> pl.DataFrame:
    """The calls made from ``since`` to ``until`` (inclusive, in ``tz``).

    Each bound is a day (the whole day counts) or a time of day. Calls without a time
    are kept only when neither bound is given.

    Raises
    ------
    ValueError
        For a bound that is not a day or time, ``since`` after ``until``, or an unknown
        time zone.
    """
    frame = _localized(calls, tz)
    low = None if since is None else _bound(since, "--since")
    high = None if until is None else _bound(until, "--until")
    if low is not None and high is not None:
        start = low if isinstance(low, datetime) else datetime.combine(low, time.min)
        end = high if isinstance(high, datetime) else datetime.combine(high, time.max)
        if start > end:
            msg = f"--since {since!r} is after --until {until!r}; swap them"
            raise ValueError(msg)
    for bound, after in ((low, True), (high, False)):
        if bound is None:
            continue
        if isinstance(bound, datetime):
            moment = pl.lit(bound).dt.replace_time_zone(tz)
            column = pl.col("_local")
        else:
            moment, column = pl.lit(bound), pl.col("_date")
        frame = frame.filter(column >= moment if after else column <= moment)
    return frame.drop("_date", "_local")


def rollup(
    calls: pl.DataFrame,
    by: str = "day",
    *,
    tz: str = "UTC",
    since: str | None = None,
    until: str | None = None,
) -> pl.DataFrame:
    """Totals per ``by`` (day, week, month, session, project, model).

    Days, weeks (ISO, from Monday) and months are calendar periods in ``tz`` (an IANA
    name, UTC by default); ``since`` / ``until`` are inclusive dates in ``tz``. Calls
    without a time fall in a null period (and outside any ``since``/``until``).
    """
    if by not in BY:
        msg = f"--by {by!r}: expected one of {', '.join(BY)}"
        raise ValueError(msg)
    frame = _localized(between(calls, tz=tz, since=since, until=until), tz)
    key = {
        "day": pl.col("_date").cast(pl.String),
        "week": pl.col("_local").dt.truncate("1w").dt.date().cast(pl.String),
        "month": pl.col("_local").dt.strftime("%Y-%m"),
        "session": pl.col("session"),
        "project": pl.col("project"),
        "model": pl.col("model"),
    }[by]
    context = []
    if by == "session":  # what each session was: when, with which models, about what
        context = [
            pl.col("ts").max().alias("last_ts"),
            _by_use("model").alias("models"),
            pl.col("title").drop_nulls().first().alias("title"),
            pl.col("project").first().alias("project"),
        ]
    grouped = frame.with_columns(key.alias(by)).group_by(by).agg(*context, *_amounts())
    grouped = _waste(grouped)
    if by in ("day", "week", "month"):
        return grouped.sort(by, nulls_last=True)
    return grouped.sort(["billed_usd", by], descending=[True, False], nulls_last=True)


def totals(calls: pl.DataFrame, files: pl.DataFrame, failed: pl.DataFrame) -> dict[str, Any]:
    """Whole-scan totals (the ``totals`` object of ``--json``) of a scan's frames."""
    ok = files.filter(pl.col("status") == "ok")
    row = calls.select(*_amounts()).row(0, named=True) if calls.height else {}
    billed, ideal = row.get("billed_usd"), row.get("ideal_usd")
    return {
        "files": ok.height,
        "sessions": calls["session"].n_unique() if calls.height else 0,
        "calls": calls.height,
        **{name: row.get(name) for name in _TOKENS},
        "hit_ratio": row.get("hit_ratio"),
        "billed_usd": billed,
        "ideal_usd": ideal,
        "waste_usd": row.get("waste_usd"),
        "unpriced_calls": row.get("unpriced_calls", 0),
        "reported_cost_usd": row.get("reported_cost_usd"),
        **{name: row.get(name) for name in VERDICT_COLUMNS},
        "failed_files": failed.height,
        "empty_files": files.filter(pl.col("status") == "empty").height,
        "unknown_files": files.filter(pl.col("status") == "unknown").height,
    }
