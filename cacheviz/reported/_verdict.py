"""The provider's own cache verdicts, read as evidence and compared with cacheviz's reading.

Providers say themselves why a request missed the cache (../shared/reference/verdicts.md).
Five states are kept apart, per call:

============================  ============================================  ==================
state                         logged as                                     ``provider_verdict``
============================  ============================================  ==================
not requested                 no ``diagnostics`` field                      null
checked                       ``{"cache_miss_reason": null}``; a Claude     ``checked``
                              Code line's ``"diagnostics": null``
a reason                      ``{"type": T, ...missed tokens}``             ``T``
not found                     ``previous_message_not_found``,               that type
                              ``comparison_response_not_found``
unavailable                   ``unavailable``                               ``unavailable``
(OpenAI only) a hit           ``{"type": "cache_hit"}``                     ``cache_hit``
============================  ============================================  ==================

*Checked* is the provider saying it compared and named no reason: no miss, or a first
turn or a comparison still pending (verdicts.md §1), not "not asked". With a reason,
``provider_missed_tokens`` is the tokens the provider says missed (Anthropic
``cache_missed_input_tokens``, OpenAI ``cache_missed_tokens``).

Readers call :func:`verdict_meta` (Anthropic shape: Claude Code transcripts, raw Messages
responses, ``message_start`` of a stream) or :func:`openai_verdict_meta` (Responses
``prompt_cache_diagnostics``) and merge the result into ``Call.meta``.

Every comparable verdict (a reason, a not-found state, an OpenAI hit) is compared with
cacheviz's own reading of the call (:class:`Evidence`, :func:`compare_verdict`); the
equivalences are in docs/analysis.md ("Provider verdicts").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CHECKED = "checked"
CACHE_HIT = "cache_hit"
UNAVAILABLE = "unavailable"
NOT_FOUND = frozenset({"previous_message_not_found", "comparison_response_not_found"})
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
STATES = ("not_requested", "checked", "reason", "not_found", "unavailable", "hit")

# the part of the request each named reason says changed
LAYER_OF = {
    "model_changed": "model",
    "tools_changed": "tools",
    "system_changed": "system",
    "messages_changed": "messages",
    "input_changed": "messages",
    "context_compacted": "messages",
    "prompt_cache_key_changed": "params",
    "service_tier_changed": "params",
    "text_format_changed": "params",
    "reasoning_effort_changed": "params",
    "verbosity_changed": "params",
}
# the request parameters (as a params_changed drift names them) each OpenAI reason covers
_PARAMS_OF = {
    "prompt_cache_key_changed": ("prompt_cache_key",),
    "service_tier_changed": ("service_tier",),
    "text_format_changed": ("response_format", "format"),
    "reasoning_effort_changed": ("reasoning",),
    "verbosity_changed": ("verbosity",),
}


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
    {'provider_verdict': 'checked'}
    >>> verdict_meta({"cache_miss_reason": {"type": "system_changed",
    ...                                     "cache_missed_input_tokens": 812}})
    {'provider_verdict': 'system_changed', 'provider_missed_tokens': 812}
    """
    if not isinstance(diagnostics, dict) or "cache_miss_reason" not in diagnostics:
        return {}
    reason = diagnostics["cache_miss_reason"]
    if reason is None:
        return {"provider_verdict": CHECKED}
    if isinstance(reason, str) and reason:
        return {"provider_verdict": reason}  # a bare type string: read leniently
    if not isinstance(reason, dict) or not isinstance(reason.get("type"), str):
        return {"provider_verdict": UNAVAILABLE}
    out: dict[str, Any] = {"provider_verdict": reason["type"]}
    missed = _count(reason.get("cache_missed_input_tokens"))
    if missed is not None:
        out["provider_missed_tokens"] = missed
    return out


def logged_verdict_meta(*holders: Any) -> dict[str, Any]:
    """The verdict of a log line whose writer puts ``diagnostics`` on every response.

    Claude Code (2.1.2xx) writes ``message.diagnostics`` on every assistant line once it
    asks for them: ``null`` there is the provider's answer (checked, no reason), not
    "not requested"; a line without the key was not asked. The first holder (a dict)
    carrying the key wins.

    Examples
    --------
    >>> logged_verdict_meta({"diagnostics": None})
    {'provider_verdict': 'checked'}
    >>> logged_verdict_meta({"content": []})
    {}
    """
    for holder in holders:
        if isinstance(holder, dict) and "diagnostics" in holder:
            value = holder["diagnostics"]
            if value is None:
                return {"provider_verdict": CHECKED}
            return verdict_meta(value)
    return {}


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
    out: dict[str, Any] = {"provider_verdict": reason if isinstance(reason, str) else UNAVAILABLE}
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


def verdict_state(verdict: str | None) -> str:
    """Which of :data:`STATES` a ``provider_verdict`` value is.

    Examples
    --------
    >>> [verdict_state(v) for v in (None, "checked", "unavailable", "tools_changed")]
    ['not_requested', 'checked', 'unavailable', 'reason']
    >>> verdict_state("previous_message_not_found")
    'not_found'
    """
    if verdict is None:
        return "not_requested"
    if verdict == CHECKED:
        return "checked"
    if verdict == CACHE_HIT:
        return "hit"
    if verdict in NOT_FOUND:
        return "not_found"
    if verdict == UNAVAILABLE:
        return "unavailable"
    return "reason"


def verdict_counts(
    verdicts: Sequence[str | None], agreements: Sequence[bool | None]
) -> dict[str, Any]:
    """A session's verdicts: calls per state, and how often cacheviz agrees.

    ``populated`` counts the verdicts that name something (a reason, not found,
    unavailable, an OpenAI hit), ``comparable`` those cacheviz can compare (all but
    ``unavailable``), ``compared`` those it compared, ``agree_rate`` is ``agree /
    compared`` (``None``: none compared).

    Examples
    --------
    >>> verdict_counts(["checked", "tools_changed", "unavailable", None], [None, True, None, None])
    ... # doctest: +NORMALIZE_WHITESPACE
    {'states': {'checked': 1, 'reason': 1, 'unavailable': 1, 'not_requested': 1},
     'populated': 2, 'comparable': 1, 'compared': 1, 'agree': 1, 'disagree': 0,
     'agree_rate': 1.0}
    """
    states: dict[str, int] = {}
    comparable_ = compared = agree = 0
    for verdict, agrees in zip(verdicts, agreements, strict=True):
        state = verdict_state(verdict)
        states[state] = states.get(state, 0) + 1
        if comparable(verdict):
            comparable_ += 1
            if agrees is not None:
                compared += 1
                agree += agrees
    populated = sum(n for state, n in states.items() if state not in ("not_requested", "checked"))
    return {
        "states": states,
        "populated": populated,
        "comparable": comparable_,
        "compared": compared,
        "agree": agree,
        "disagree": compared - agree,
        "agree_rate": agree / compared if compared else None,
    }


def comparable(verdict: str | None) -> bool:
    """Whether a verdict says something cacheviz's reading can confirm or contradict.

    A named reason, a not-found state (the previous request's fingerprint is gone) and
    an OpenAI hit are; not requested, checked and ``unavailable`` are not.

    Examples
    --------
    >>> [comparable(v) for v in ("tools_changed", "previous_message_not_found", "unavailable")]
    [True, True, False]
    """
    return verdict in LAYER_OF or verdict in NOT_FOUND or verdict == CACHE_HIT


@dataclass(frozen=True, slots=True)
class Evidence:
    """cacheviz's own reading of one call: what a provider's verdict is compared with.

    Token positions are on the call's calibrated axis (provider tokens).
    """

    offered: int
    """What the common-prefix line offered (capped at the reported input)."""
    read: int | None
    """The provider's reported cache read (``None``: not reported)."""
    total: int
    """The request's size."""
    source: int | None = None
    """The call that left the prefix (by the log's links, else the thread's previous)."""
    source_cached: int | None = None
    """What ``source`` left in the cache: its reported read plus write."""
    gap: float | None = None
    """Seconds idle since ``source``'s request (at most)."""
    ttl: float | None = None
    """The TTL of the entries ``source`` left."""
    model_switched: bool = False
    missed: bool = False
    """The read falls materially short of what the line offered (a miss by the amounts)."""
    drift_part: str | None = None
    drift_cause: str | None = None
    drift_detail: str = ""
    rebuild: str | None = None
    """An expected rebuild the log announces (``compaction``)."""
    tools_delta: str | None = None
    """The tools the log shows loaded or removed since ``source`` (Claude Code)."""
    rewritten: str | None = None
    """Edits the client says it made to the history before sending (Claude Code)."""
    agent_switch: str | None = None
    """The client's agent switched since ``source`` (``old → new``; OpenCode agents)."""
    reconstructed: bool = False
    """Rebuilt from a conversation log: the bytes sent are not all logged."""
    spans: Mapping[str, Sequence[tuple[int, int]]] = field(default_factory=dict)
    """Where each part lies: ``tools``, ``system``, ``messages`` (:func:`layer_spans`)."""
    head: int = 0
    """The thread's static head: the first breakpoint other requests keep warm (0: unknown)."""

    @property
    def expired(self) -> bool:
        """Whether the idle time since ``source`` exceeds the TTL of what it left."""
        return self.gap is not None and self.ttl is not None and self.gap > self.ttl

    @property
    def gone(self) -> bool:
        """Whether the read stops short of what ``source`` left in the cache."""
        return (
            self.read is not None
            and self.source_cached is not None
            and self.read < self.source_cached <= self.offered
        )


def layer_spans(
    parts: Sequence[str], opaque: Sequence[bool], offsets: Sequence[int], head: int = 0
) -> dict[str, list[tuple[int, int]]]:
    """Where the tools, the system prompt and the messages lie, in tokens.

    ``parts`` and ``opaque`` are per block (``opaque``: a conversation log's unlogged
    prefix, whose system prompt and tools the log does not hold), ``offsets`` the tokens
    before each block, then the total. An unlogged prefix is both the tools and the
    system prompt; with a known static ``head`` inside it, the tools lie within the head
    (providers render the tools first; Claude Code's first breakpoint follows the static
    part of its system prompt).

    Examples
    --------
    >>> layer_spans(["system", "messages"], [True, False], [0, 900, 1000], 300)
    {'tools': [(0, 300)], 'system': [(0, 900)], 'messages': [(900, 1000)]}
    """
    spans: dict[str, list[tuple[int, int]]] = {}
    for i, (part, hidden) in enumerate(zip(parts, opaque, strict=True)):
        start, end = offsets[i], offsets[i + 1]
        if hidden:
            spans.setdefault("tools", []).append((start, min(end, head) if head else end))
            spans.setdefault("system", []).append((start, end))
        else:
            spans.setdefault(part, []).append((start, end))
    return spans


def _where(ev: Evidence) -> tuple[int, int, str]:
    """Where the change can lie given the provider's read: ``[low, high)`` and why."""
    read = ev.read
    if read is None:
        return 0, ev.total, "no reported read bounds it"
    if not ev.expired:
        if read >= ev.offered > 0:
            why = f"the provider read {read:,} tokens, all the {ev.offered:,} the line offered"
            return ev.offered, ev.offered, why
        if ev.source_cached and read >= ev.source_cached:
            why = (
                f"the provider read {read:,} tokens, all the {ev.source_cached:,} call "
                f"{ev.source} left in the cache"
            )
            return read, read, why
        if ev.head and read < ev.head and (ev.source_cached or 0) >= ev.head:
            why = (
                f"the provider read {read:,} tokens, not even the {ev.head:,}-token static "
                f"head call {ev.source} kept warm: the change lies before token {ev.head:,}"
            )
            return read, ev.head, why
    why = f"the provider read {read:,} tokens: the change lies after token {read:,}"
    if ev.expired:
        why += " (the entries had expired)"
    return read, ev.total, why


def compare_verdict(verdict: str | None, ev: Evidence) -> tuple[bool | None, str]:
    """Whether cacheviz's own reading agrees with a provider's comparable verdict.

    The equivalences (docs/analysis.md, "Provider verdicts"):

    * ``previous_message_not_found`` / ``comparison_response_not_found`` (the previous
      request's fingerprint is gone): the idle time since the call that left the prefix
      exceeds its TTL, or the read stops short of what that call left in the cache
      (evicted);
    * ``model_changed``: the model differs from that call's;
    * ``tools_changed``: a drift in the tools, or tools the log shows loaded or removed
      since then (a ToolSearch ``tool_reference``, a ``deferred_tools_delta``);
    * ``system_changed``: a drift in the system prompt, or that tools delta (Claude Code
      lists deferred tools in its system prompt too); either of the two, an agent
      switch the log shows (OpenCode's build → plan: its own prompt and tools);
    * ``messages_changed`` (OpenAI ``input_changed``, ``context_compacted``): a drift
      in the messages, a compaction, or history edits the client logged;
    * an OpenAI parameter reason: a ``params_changed`` drift of that parameter;
    * ``cache_hit``: no miss.

    Without such evidence, a request rebuilt from a conversation log (whose unlogged
    bytes may have changed) agrees when the part the provider names lies where the read
    places the change: after what the provider read, and before the static head when
    not even the head was read; a byte-exact request disagrees (the bytes sent show that
    part unchanged), and so does a read that reached past the part.

    Returns
    -------
    tuple
        ``(agrees, detail)``; ``(None, "")`` for a verdict that is not comparable.

    Examples
    --------
    >>> ev = Evidence(offered=50_000, read=12_000, total=52_000, reconstructed=True,
    ...               spans={"tools": [(0, 12_000)], "system": [(0, 30_000)],
    ...                      "messages": [(30_000, 52_000)]}, head=12_000,
    ...               source=3, source_cached=50_000)
    >>> compare_verdict("messages_changed", ev)[0], compare_verdict("tools_changed", ev)[0]
    (True, False)
    """
    if not comparable(verdict):
        return None, ""
    assert verdict is not None
    if verdict in NOT_FOUND:
        return _not_found(ev)
    if verdict == CACHE_HIT:
        if ev.missed:
            return False, f"the provider read {ev.read or 0:,} of the {ev.offered:,} tokens offered"
        return True, "no miss"
    layer = LAYER_OF[verdict]
    found = _positive(verdict, layer, ev)
    if found:
        return True, found
    if layer in ("model", "params"):
        since = f"call {ev.source}" if ev.source is not None else "the previous call"
        what = "model" if layer == "model" else "cache-keyed parameters"
        return False, f"the same {what} as {since}"
    if not ev.reconstructed:
        return False, (
            f"the bytes sent are logged and the {layer} did not change since call {ev.source}"
            if ev.source is not None
            else f"the bytes sent are logged and show no earlier {layer} to differ from"
        )
    low, high, why = _where(ev)
    spans = ev.spans.get(layer, ())
    if high > low and any(start < high and end > low for start, end in spans if end > start):
        return True, f"consistent: {why}, a span that holds the {layer}"
    return False, f"{why}, a span that does not hold the {layer}"


def _positive(verdict: str, layer: str, ev: Evidence) -> str:
    """The evidence that names ``layer`` as changed, else ``""``."""
    since = f" since call {ev.source}" if ev.source is not None else ""
    if layer == "model":
        if ev.model_switched or ev.drift_cause == "model_switch":
            return f"the model changed{since}"
        return ""
    if layer == "params":
        names = _PARAMS_OF.get(verdict, ())
        detail = ev.drift_detail
        if ev.drift_cause == "params_changed" and any(name in detail for name in names):
            return f"a params_changed drift: {detail}"
        return ""
    if ev.drift_part == layer and ev.drift_cause not in ("model_switch", "params_changed"):
        return f"the bytes changed in the {layer}{since}: {ev.drift_cause}"
    if layer == "messages":
        if ev.rebuild is not None:
            return f"the log announces a {ev.rebuild}: the history was rebuilt"
        if ev.rewritten:
            return f"the client logged edits to the history before sending: {ev.rewritten}"
    if layer in ("tools", "system") and ev.tools_delta:
        return f"the log shows the tools changed{since}: {ev.tools_delta}"
    if layer in ("tools", "system") and ev.agent_switch:
        return f"the agent switched{since} ({ev.agent_switch}): its own system prompt and tools"
    return ""


def _not_found(ev: Evidence) -> tuple[bool, str]:
    """A not-found verdict (the previous request's fingerprint is gone) against the log."""
    if ev.source is None:
        return False, "the log holds no earlier call of this conversation to measure from"
    if ev.expired:
        assert ev.gap is not None and ev.ttl is not None
        return True, (
            f"{ev.gap:,.0f} s idle since call {ev.source}, beyond the {ev.ttl:,.0f} s TTL of "
            "what it left: expired"
        )
    if ev.gone:
        assert ev.read is not None and ev.source_cached is not None
        return True, (
            f"the read ({ev.read:,}) stops short of the {ev.source_cached:,} tokens call "
            f"{ev.source} left in the cache: its entry is gone (evicted)"
        )
    gap = "" if ev.gap is None else f"{ev.gap:,.0f} s idle, "
    ttl = "" if ev.ttl is None else f"within the {ev.ttl:,.0f} s TTL, "
    return False, f"call {ev.source}'s entry was there: {gap}{ttl}and the read reached it"


__all__ = [
    "REASONS",
    "STATES",
    "Evidence",
    "comparable",
    "compare_verdict",
    "layer_spans",
    "logged_verdict_meta",
    "openai_verdict_meta",
    "response_verdict_meta",
    "verdict_counts",
    "verdict_meta",
    "verdict_state",
]
