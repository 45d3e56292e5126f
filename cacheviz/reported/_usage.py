"""Normalize reported usage to one shape: inclusive input, cache read, cache write, output.

Providers disagree on what "input" means (providers.md §1.3, §2.2, §3.2, §4.2):

* Anthropic ``input_tokens`` counts only tokens after the last breakpoint; the
  inclusive input is ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``.
* OpenAI ``prompt_tokens`` / ``input_tokens`` already include ``cached_tokens``.
* DeepSeek reports ``prompt_cache_hit_tokens`` + ``prompt_cache_miss_tokens``.
* Gemini ``promptTokenCount`` includes ``cachedContentTokenCount``.

Fields the provider did not report stay ``None``; they are never replaced by 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from cacheviz.errors import UsageError as UsageError  # re-exported: readers raise it
from cacheviz.model import Usage

# No request has ever held a billion tokens: a count beyond that is corrupt, not reported.
_MAX_COUNT = 10**9
# Set by readers in ``errors="skip"`` mode: corrupt usage is collected here (and the
# call's usage becomes null) instead of raising.
_LENIENT: ContextVar[list[str] | None] = ContextVar("lenient_usage", default=None)


@contextmanager
def lenient_usage() -> Iterator[list[str]]:
    """Collect corrupt usage (one message each) instead of raising; the usage is ``None``.

    Readers use it in ``errors="skip"`` mode so a bad count nulls that call's usage,
    with a warning, rather than dropping the line (which would change later requests).
    """
    problems: list[str] = []
    token = _LENIENT.set(problems)
    try:
        yield problems
    finally:
        _LENIENT.reset(token)


def _count(value: Any, field: str) -> int | None:
    """``value`` as a token count; ``None`` when null; :class:`UsageError` when corrupt."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(field, value, _MAX_COUNT)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise UsageError(field, value, _MAX_COUNT)
    count = int(value)
    if not 0 <= count < _MAX_COUNT:
        raise UsageError(field, value, _MAX_COUNT)
    return count


def _int(mapping: Any, *path: str) -> int | None:
    value = mapping
    for key in path:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise UsageError(".".join(path[: path.index(key)]), value, _MAX_COUNT)
        if key not in value:
            return None
        value = value[key]
    return _count(value, ".".join(path))


def _sum(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def normalize_usage(usage: Any) -> Usage | None:
    """Return the normalized :class:`~cacheviz.model.Usage`, or ``None`` if nothing is reported.

    Parameters
    ----------
    usage
        A provider's ``usage`` object (Anthropic, OpenAI Chat/Responses, DeepSeek) or
        Gemini's ``usageMetadata``.

    Examples
    --------
    >>> normalize_usage({"input_tokens": 10, "cache_read_input_tokens": 900,
    ...                  "cache_creation_input_tokens": 90, "output_tokens": 5}).input_tokens
    1000
    >>> normalize_usage({"prompt_tokens": 1000, "completion_tokens": 5}).cache_read_tokens is None
    True

    Raises
    ------
    UsageError
        When a count is present but not a whole number from 0 to 999,999,999 (a string,
        negative, NaN, infinite, fractional, or absurdly large): never a derived number
        from corrupt parts. Inside :func:`lenient_usage` the usage is ``None`` instead.
    """
    if not isinstance(usage, dict) or not usage:
        return None
    problems = _LENIENT.get()
    if problems is None:
        return _normalize(usage)
    try:
        return _normalize(usage)
    except UsageError as exc:
        problems.append(str(exc))
        return None


def _normalize(usage: dict[str, Any]) -> Usage | None:
    if "cache_creation_input_tokens" in usage or "cache_read_input_tokens" in usage:
        return _anthropic(usage)
    if "prompt_cache_hit_tokens" in usage or "prompt_cache_miss_tokens" in usage:
        hit = _int(usage, "prompt_cache_hit_tokens")
        miss = _int(usage, "prompt_cache_miss_tokens")
        total = _int(usage, "prompt_tokens")
        return Usage(
            input_tokens=total if total is not None else _sum(hit, miss),
            cache_read_tokens=hit,
            cache_write_tokens=None,
            output_tokens=_int(usage, "completion_tokens"),
            provenance="reported" if total is not None else "derived",
            reasoning_tokens=_int(usage, "completion_tokens_details", "reasoning_tokens"),
        )
    if "promptTokenCount" in usage or "cachedContentTokenCount" in usage:
        output = _sum(_int(usage, "candidatesTokenCount"), _int(usage, "thoughtsTokenCount"))
        return Usage(
            input_tokens=_int(usage, "promptTokenCount"),
            cache_read_tokens=_int(usage, "cachedContentTokenCount"),
            output_tokens=output,
            reasoning_tokens=_int(usage, "thoughtsTokenCount"),
        )
    if "prompt_tokens" in usage:
        details = "prompt_tokens_details"
        return Usage(
            input_tokens=_int(usage, "prompt_tokens"),
            cache_read_tokens=_int(usage, details, "cached_tokens"),
            cache_write_tokens=_int(usage, details, "cache_write_tokens"),
            output_tokens=_int(usage, "completion_tokens"),
            reasoning_tokens=_int(usage, "completion_tokens_details", "reasoning_tokens"),
        )
    if "input_tokens" in usage or "output_tokens" in usage:
        details = "input_tokens_details"
        if details in usage:  # OpenAI Responses: input includes cached
            return Usage(
                input_tokens=_int(usage, "input_tokens"),
                cache_read_tokens=_int(usage, details, "cached_tokens"),
                cache_write_tokens=_int(usage, details, "cache_write_tokens"),
                output_tokens=_int(usage, "output_tokens"),
                reasoning_tokens=_int(usage, "output_tokens_details", "reasoning_tokens"),
            )
        return _anthropic(usage)
    return None


def _anthropic(usage: dict[str, Any]) -> Usage:
    if "input_tokens" not in usage and "prompt_tokens" in usage:  # LiteLLM's shape for Claude
        return Usage(
            input_tokens=_int(usage, "prompt_tokens"),
            cache_read_tokens=_int(usage, "cache_read_input_tokens"),
            cache_write_tokens=_int(usage, "cache_creation_input_tokens"),
            output_tokens=_int(usage, "completion_tokens"),
        )
    uncached = _int(usage, "input_tokens")
    read = _int(usage, "cache_read_input_tokens")
    write = _int(usage, "cache_creation_input_tokens")
    write_5m = _int(usage, "cache_creation", "ephemeral_5m_input_tokens")
    write_1h = _int(usage, "cache_creation", "ephemeral_1h_input_tokens")
    if write is None and (write_5m is not None or write_1h is not None):
        write = _sum(write_5m, write_1h)
    inclusive = None if uncached is None else uncached + (read or 0) + (write or 0)
    return Usage(
        input_tokens=inclusive,
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
        output_tokens=_int(usage, "output_tokens"),
        provenance="derived",
    )
