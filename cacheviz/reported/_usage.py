"""Normalize reported usage to one shape: inclusive input, cache read, cache write, output.

Providers disagree on what "input" means (providers.md §1.3, §2.2, §3.2, §4.2):

* Anthropic ``input_tokens`` counts only tokens after the last breakpoint; the
  inclusive input is ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``.
* OpenAI ``prompt_tokens`` / ``input_tokens`` already include ``cached_tokens``.
* DeepSeek reports ``prompt_cache_hit_tokens`` + ``prompt_cache_miss_tokens``.
* Gemini ``promptTokenCount`` includes ``cachedContentTokenCount``.

Fields the provider did not report stay ``None``; they are never replaced by 0.

Usage is validated once, here, on the way in (docs/formats.md, "Usage counts must be
sane"): a count that is not a whole number from 0 to :data:`MAX_CALL_TOKENS` - 1, or
counts that contradict each other (a cache read or write above the inclusive input that
counts it), raise :class:`UsageError`; inside :func:`lenient_usage` that call's usage is
``None`` instead, with the reason collected. Readers that build a
:class:`~cacheviz.model.Usage` themselves pass it through :func:`check_usage`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from cacheviz.errors import UsageError as UsageError  # re-exported: readers raise it
from cacheviz.model import Usage

# The plausibility bound of one call's count: the largest context windows hold a few
# million tokens, so a count of 10^8 or more is corrupt, not reported.
MAX_CALL_TOKENS = 10**8
# A session's total (a format that reports usage only per session) adds up its calls.
MAX_SESSION_TOKENS = 10**12
_MAX_COUNT = MAX_CALL_TOKENS
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


def token_count(
    value: Any, field: str, limit: int = MAX_CALL_TOKENS, prefix: str = "usage."
) -> int | None:
    """``value`` as a token count; ``None`` when null; :class:`UsageError` when corrupt.

    A count is a whole number from 0 to ``limit`` - 1: not a bool, a string, negative,
    NaN, infinite or fractional (``1000.0`` is 1000).

    Examples
    --------
    >>> token_count(1000.0, "input_tokens")
    1000
    >>> token_count(10**15, "input_tokens")
    Traceback (most recent call last):
    ...
    cacheviz.errors.UsageError: field `usage.input_tokens` is 1000000000000000; expected a \
whole number of tokens from 0 to 99,999,999
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(field, value, limit, prefix=prefix)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise UsageError(field, value, limit, prefix=prefix)
    count = int(value)
    if not 0 <= count < limit:
        raise UsageError(field, value, limit, prefix=prefix)
    return count


_count = token_count


def check_usage(
    usage: Usage | None,
    fields: dict[str, str] | None = None,
    *,
    limit: int = MAX_CALL_TOKENS,
    prefix: str = "usage.",
) -> Usage | None:
    """``usage`` when its counts are sane and agree; the one check every usage passes.

    Parameters
    ----------
    usage
        A usage a reader built (``None`` passes through).
    fields
        The name the transcript gives each of ``Usage``'s fields, for the message
        (``{"cache_read_tokens": "prompt_tokens_details.cached_tokens"}``); a field not
        named is shown under its ``Usage`` name.
    limit
        The plausibility bound of each count (:data:`MAX_CALL_TOKENS` for one call,
        :data:`MAX_SESSION_TOKENS` for a session's total).
    prefix
        Put before a field's name in the message (``""`` when ``fields`` name the whole
        path, as OTel attributes do).

    Returns
    -------
    Usage or None
        ``usage``; ``None`` inside :func:`lenient_usage` when it is rejected.

    Raises
    ------
    UsageError
        A count beyond 0 to ``limit`` - 1, or a cache read plus cache write above an
        inclusive input that the provider reported (it counts them: a hit ratio above
        100 % would follow).

    Examples
    --------
    >>> check_usage(Usage(input_tokens=100, cache_read_tokens=5000))
    Traceback (most recent call last):
    ...
    cacheviz.errors.UsageError: field `usage.cache_read_tokens` is 5000; more than the \
input of 100 tokens that includes it (the usage contradicts itself: check the transcript)
    """
    if usage is None:
        return None
    problems = _LENIENT.get()
    try:
        return _checked(usage, fields or {}, limit, prefix)
    except UsageError as exc:
        if problems is None:
            raise
        problems.append(str(exc))
        return None


_FIELDS = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
)


def _checked(usage: Usage, fields: dict[str, str], limit: int, prefix: str = "usage.") -> Usage:
    for name in _FIELDS:
        token_count(getattr(usage, name), fields.get(name, name), limit, prefix)
    total = usage.input_tokens
    if total is None or usage.provenance != "reported":
        return usage  # derived: the sum of its parts, which can't exceed it
    for name in ("cache_read_tokens", "cache_write_tokens"):
        part = getattr(usage, name)
        if part is not None and part > total:
            raise UsageError(
                fields.get(name, name),
                part,
                limit,
                prefix=prefix,
                reason=f"more than the input of {total} tokens that includes it "
                "(the usage contradicts itself: check the transcript)",
            )
    read, write = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
    if read + write > total:
        raise UsageError(
            fields.get("cache_read_tokens", "cache_read_tokens"),
            read,
            limit,
            prefix=prefix,
            reason=f"plus the cache write of {write} is more than the input of {total} "
            "tokens that includes both (the usage contradicts itself: check the transcript)",
        )
    return usage


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


def normalize_usage(usage: Any, where: str | None = None) -> Usage | None:
    """Return the normalized :class:`~cacheviz.model.Usage`, or ``None`` if nothing is reported.

    Parameters
    ----------
    usage
        A provider's ``usage`` object (Anthropic, OpenAI Chat/Responses, DeepSeek) or
        Gemini's ``usageMetadata``.
    where
        Where the usage is in a whole-file document or a folder (``part prt_05``), put
        before the message of a :class:`UsageError` (a line-by-line reader names the line).

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
        When a count is present but not a whole number from 0 to 99,999,999 (a string,
        negative, NaN, infinite, fractional, or absurdly large), or when the counts
        contradict each other (:func:`check_usage`): never a derived number from corrupt
        parts. Inside :func:`lenient_usage` the usage is ``None`` instead.
    """
    if not isinstance(usage, dict) or not usage:
        return None
    problems = _LENIENT.get()
    try:
        return _validated(usage)
    except UsageError as exc:
        if where:
            exc.args = (f"{where}: {exc}",)
        if problems is None:
            raise
        problems.append(str(exc))
        return None


def _validated(usage: dict[str, Any]) -> Usage | None:
    found = _normalize(usage)
    return None if found is None else _checked(found, _names(usage), MAX_CALL_TOKENS)


def _names(usage: dict[str, Any]) -> dict[str, str]:
    """The transcript's name of each checked field (for the message)."""
    if "prompt_cache_hit_tokens" in usage or "prompt_cache_miss_tokens" in usage:
        return {"input_tokens": "prompt_tokens", "cache_read_tokens": "prompt_cache_hit_tokens"}
    if "promptTokenCount" in usage or "cachedContentTokenCount" in usage:
        return {"input_tokens": "promptTokenCount", "cache_read_tokens": "cachedContentTokenCount"}
    if "prompt_tokens" in usage and "input_tokens" not in usage:
        if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
            return {
                "input_tokens": "prompt_tokens",
                "cache_read_tokens": "cache_read_input_tokens",
                "cache_write_tokens": "cache_creation_input_tokens",
            }
        return {
            "input_tokens": "prompt_tokens",
            "cache_read_tokens": "prompt_tokens_details.cached_tokens",
            "cache_write_tokens": "prompt_tokens_details.cache_write_tokens",
        }
    return {
        "input_tokens": "input_tokens",
        "cache_read_tokens": "input_tokens_details.cached_tokens",
        "cache_write_tokens": "input_tokens_details.cache_write_tokens",
    }


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
        )
    if "promptTokenCount" in usage or "cachedContentTokenCount" in usage:
        output = _sum(_int(usage, "candidatesTokenCount"), _int(usage, "thoughtsTokenCount"))
        return Usage(
            input_tokens=_int(usage, "promptTokenCount"),
            cache_read_tokens=_int(usage, "cachedContentTokenCount"),
            output_tokens=output,
        )
    if "prompt_tokens" in usage:
        details = "prompt_tokens_details"
        return Usage(
            input_tokens=_int(usage, "prompt_tokens"),
            cache_read_tokens=_int(usage, details, "cached_tokens"),
            cache_write_tokens=_int(usage, details, "cache_write_tokens"),
            output_tokens=_int(usage, "completion_tokens"),
        )
    if "input_tokens" in usage or "output_tokens" in usage:
        details = "input_tokens_details"
        if details in usage:  # OpenAI Responses: input includes cached
            return Usage(
                input_tokens=_int(usage, "input_tokens"),
                cache_read_tokens=_int(usage, details, "cached_tokens"),
                cache_write_tokens=_int(usage, details, "cache_write_tokens"),
                output_tokens=_int(usage, "output_tokens"),
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
