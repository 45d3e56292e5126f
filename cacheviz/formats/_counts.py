"""Token counts as agents log them under their own names (Amp, pi, Hermes, ...).

Agents that keep usage in their own records name the counts their own way
(``inputTokens`` / ``cacheReadInputTokens``, ``input`` / ``cacheRead``, ...) and most
keep the uncached input apart from the cache reads and writes. :func:`split_usage` reads
such a record into a :class:`~cacheviz.model.Usage` whose inclusive input is added up
from the parts (``derived``); a corrupt count raises
:class:`~cacheviz.errors.UsageError` naming the agent's own field, so the line's error
and ``errors="skip"`` (usage set to null) work as for every reader.
"""

from __future__ import annotations

import math
from typing import Any

from cacheviz.errors import UsageError
from cacheviz.model import Usage

LIMIT = 10**9  # a count from 0 to 999,999,999


def count(raw: dict[str, Any], key: str | None, where: str) -> int | None:
    """``raw[key]`` as a token count; ``None`` when absent or null.

    ``where`` is the field's path below ``usage`` for the error message (``usage.<where>``).

    Raises
    ------
    UsageError
        When the value is not a whole number from 0 to 999,999,999.
    """
    if key is None:
        return None
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(where, value, LIMIT)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise UsageError(where, value, LIMIT)
    number = int(value)
    if not 0 <= number < LIMIT:
        raise UsageError(where, value, LIMIT)
    return number


def split_usage(
    raw: dict[str, Any],
    *,
    uncached: str,
    read: str | None,
    write: str | None,
    output: str,
    prefix: str = "",
) -> Usage | None:
    """A usage whose input is logged as uncached input, cache reads and cache writes.

    The inclusive input is their sum (``provenance="derived"``); a part the record does
    not hold stays ``None`` (not reported), and the sum is of the parts present. ``None``
    when the record holds none of the counts, or all of them are zero (no answer was
    billed: the caller says what such a record is).
    """
    counts = {
        name: count(raw, key, f"{prefix}{key}")
        for name, key in (("uncached", uncached), ("read", read), ("write", write), ("out", output))
    }
    if not any(counts.values()):
        return None
    parts = [counts["uncached"], counts["read"], counts["write"]]
    present = [p for p in parts if p is not None]
    return Usage(
        input_tokens=sum(present) if present else None,
        cache_read_tokens=counts["read"],
        cache_write_tokens=counts["write"],
        output_tokens=counts["out"],
        provenance="derived",
    )
