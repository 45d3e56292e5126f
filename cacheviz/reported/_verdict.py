"""The provider's own cache verdicts, read as evidence (../shared/reference/verdicts.md).

Four states are kept apart, per call:

============================  ====================================  =====================
state                         logged as                             ``provider_verdict``
============================  ====================================  =====================
not requested                 no ``diagnostics`` field              null
inconclusive                  ``{"cache_miss_reason": null}``       ``inconclusive``
could not compare             ``previous_message_not_found``,       that type
                              ``unavailable``,
                              ``comparison_response_not_found``
a reason                      ``{"type": T, ...missed tokens}``     ``T``
(OpenAI only) a hit           ``{"type": "cache_hit"}``             ``cache_hit``
============================  ====================================  =====================

With a reason, ``provider_missed_tokens`` is the tokens the provider says missed
(Anthropic ``cache_missed_input_tokens``, OpenAI ``cache_missed_tokens``). An inconclusive
verdict is not "no miss": the comparison may still be pending.

Readers call :func:`verdict_meta` (Anthropic shape: Claude Code transcripts, raw Messages
responses, ``message_start`` of a stream) or :func:`openai_verdict_meta` (Responses
``prompt_cache_diagnostics``) and merge the result into ``Call.meta``.
"""

from __future__ import annotations

from typing import Any

INCONCLUSIVE = "inconclusive"
CACHE_HIT = "cache_hit"
NOT_COMPARED = frozenset(
    {"previous_message_not_found", "unavailable", "comparison_response_not_found"}
)
ANTHROPIC_REASONS = frozenset(
    {"model_changed", "system_changed", "tools_changed", "messages_changed"}
)
OPENAI_REASONS = frozenset(
    {
        "model_changed",
        "prompt_cache_key_changed",
        "service_tier_changed",
        "tools_changed",
        "text_format_changed",
        "reasoning_effort_changed",
        "verbosity_changed",
        "context_compacted",
        "input_changed",
    }
)
REASONS = ANTHROPIC_REASONS | OPENAI_REASONS
STATES = ("not_requested", "inconclusive", "not_compared", "hit", "reason")


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def verdict_meta(diagnostics: Any) -> dict[str, Any]:
    """``Call.meta`` entries for an Anthropic ``diagnostics`` object (empty: not requested).

    Examples
    --------
    >>> verdict_meta(None)
    {}
    >>> verdict_meta({"cache_miss_reason": None})
    {'provider_verdict': 'inconclusive'}
    >>> verdict_meta({"cache_miss_reason": {"type": "system_changed",
    ...                                     "cache_missed_input_tokens": 812}})
    {'provider_verdict': 'system_changed', 'provider_missed_tokens': 812}
    """
    if not isinstance(diagnostics, dict) or "cache_miss_reason" not in diagnostics:
        return {}
    reason = diagnostics["cache_miss_reason"]
    if reason is None:
        return {"provider_verdict": INCONCLUSIVE}
    if isinstance(reason, str) and reason:
        return {"provider_verdict": reason}  # a bare type string: read leniently
    if not isinstance(reason, dict) or not isinstance(reason.get("type"), str):
        return {"provider_verdict": "unavailable"}
    out: dict[str, Any] = {"provider_verdict": reason["type"]}
    missed = _count(reason.get("cache_missed_input_tokens"))
    if missed is not None:
        out["provider_missed_tokens"] = missed
    return out


def openai_verdict_meta(diagnostics: Any) -> dict[str, Any]:
    """``Call.meta`` entries for an OpenAI ``prompt_cache_diagnostics`` object.

    Examples
    --------
    >>> openai_verdict_meta({"type": "cache_miss", "reason": "tools_changed",
    ...                      "cache_missed_tokens": 4096})
    {'provider_verdict': 'tools_changed', 'provider_missed_tokens': 4096}
    >>> openai_verdict_meta({"type": "cache_hit"})
    {'provider_verdict': 'cache_hit'}
    """
    if not isinstance(diagnostics, dict) or not isinstance(diagnostics.get("type"), str):
        return {}
    kind = diagnostics["type"]
    if kind != "cache_miss":
        return {"provider_verdict": kind}
    reason = diagnostics.get("reason")
    out: dict[str, Any] = {"provider_verdict": reason if isinstance(reason, str) else "unavailable"}
    missed = _count(diagnostics.get("cache_missed_tokens"))
    if missed is not None:
        out["provider_missed_tokens"] = missed
    return out


def response_verdict_meta(body: Any) -> dict[str, Any]:
    """The verdict of a response body of either provider (Anthropic or OpenAI Responses).

    Looks at ``diagnostics`` (Anthropic, top level), ``message.diagnostics`` (a streamed
    ``message_start`` event) and ``prompt_cache_diagnostics`` (OpenAI, top level or under
    ``response``).
    """
    if not isinstance(body, dict):
        return {}
    if "diagnostics" in body:
        return verdict_meta(body["diagnostics"])
    message = body.get("message")
    if isinstance(message, dict) and "diagnostics" in message:
        return verdict_meta(message["diagnostics"])
    if "prompt_cache_diagnostics" in body:
        return openai_verdict_meta(body["prompt_cache_diagnostics"])
    response = body.get("response")
    if isinstance(response, dict) and "prompt_cache_diagnostics" in response:
        return openai_verdict_meta(response["prompt_cache_diagnostics"])
    return {}


# where each provider reason says the prefix broke: the drift parts or causes that agree
_AGREES = {
    "model_changed": ({"model_switch"}, set()),
    "system_changed": ({"unlogged_prefix_changed"}, {"system"}),
    "tools_changed": ({"unlogged_prefix_changed"}, {"tools"}),
    "messages_changed": (set(), {"messages"}),
}


def agrees(
    verdict: str | None,
    drift_part: str | None,
    drift_cause: str | None,
    own_miss_cause: str | None,
) -> bool | None:
    """Whether cacheviz's own reading of a call agrees with the provider's named reason.

    ``None`` when the provider named no reason this function can place (not requested,
    inconclusive, could not compare, an OpenAI-only reason). The provider compares the
    request with the previous one structurally: a reason agrees when cacheviz saw the
    prefix break there (a drift in that part, the model switched, or the read stopping
    inside the unlogged prefix for a system or tools change); a reason where cacheviz saw
    the bytes identical up to the miss is a disagreement, and news.

    Examples
    --------
    >>> agrees("system_changed", "system", "volatile_value", None)
    True
    >>> agrees("system_changed", None, None, "provider_side")
    False
    >>> agrees("inconclusive", None, None, None) is None
    True
    """
    if verdict not in _AGREES:
        return None
    causes, parts = _AGREES[verdict]
    if drift_cause is not None and (drift_cause in causes or drift_part in parts):
        return True
    return own_miss_cause in causes


def verdict_state(verdict: str | None) -> str:
    """Which of :data:`STATES` a ``provider_verdict`` value is.

    Examples
    --------
    >>> [verdict_state(v) for v in (None, "inconclusive", "unavailable", "tools_changed")]
    ['not_requested', 'inconclusive', 'not_compared', 'reason']
    """
    if verdict is None:
        return "not_requested"
    if verdict == INCONCLUSIVE:
        return "inconclusive"
    if verdict == CACHE_HIT:
        return "hit"
    if verdict in NOT_COMPARED:
        return "not_compared"
    return "reason"


__all__ = [
    "REASONS",
    "STATES",
    "agrees",
    "openai_verdict_meta",
    "response_verdict_meta",
    "verdict_meta",
    "verdict_state",
]
