"""Timestamps as transcripts write them: ISO-8601 strings or Unix epochs, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cacheviz.request._jsonspan import json_type


def parse_ts(value: Any, field: str = "ts") -> datetime | None:
    """Parse an ISO-8601 time (naive times are taken as UTC); ``None`` stays ``None``.

    ``field`` names the field in error messages.

    Raises
    ------
    ValueError
        When ``value`` is neither ``None`` nor an ISO-8601 string.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        msg = f"field `{field}` is {json_type(value)}; expected an ISO-8601 string or null"
        raise ValueError(msg)
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        msg = (
            f"field `{field}` {value!r} is not ISO-8601; "
            "expected e.g. '2026-01-15T09:00:00Z' or null"
        )
        raise ValueError(msg) from None
    try:
        return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    except OverflowError:
        msg = f"field `{field}` {value!r} is out of range; expected a time between years 1 and 9999"
        raise ValueError(msg) from None


def parse_epoch(value: Any) -> datetime | None:
    """A Unix time in seconds as a UTC datetime; ``None`` for anything else or out of range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return None
