"""What cacheviz knows about one vendor's caching, written down once: its profile.

Each provider module (``providers/anthropic.py``, ``openai.py``, …) ends with a
``PROFILE``; :mod:`cacheviz.providers` collects them. Every other module asks the
registry (``profile("anthropic").default_ttl_seconds``) instead of restating a number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cacheviz.model import Call


def _no_minimum(model: str) -> int:
    return 0


def _not_only_breakpoints(call: Call) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class LongerTTL:
    """A longer cache lifetime a request can ask for, and what it changes."""

    rules: Mapping[str, Any]
    """The simulator rules that replay the session with it (``{"ttl": "1h"}``)."""
    advice: str
    """How a user asks for it, in the provider's words (``cache_control ttl '1h'``)."""


@dataclass(frozen=True, slots=True)
class HistoryFix:
    """The what-if that caches a growing history (``cacheviz check``'s ``uncached_history``)."""

    rules: Mapping[str, Any]
    """The simulator rules that put a breakpoint on the latest message."""
    advice: str
    """What the fix is, in the provider's words."""


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """One vendor's caching facts (providers.md), and the simulator that applies them.

    Attributes
    ----------
    id
        The provider id used in frames, the CLI and the price data (``"google"``).
    label
        A human name (``"Google Gemini"``).
    module, simulator
        Where the simulator class lives: ``cacheviz.providers.<module>.<simulator>``.
    aliases
        Other names users type for it (``"gemini"``).
    model_prefixes
        The vendor's own model families, by name prefix (its price list may hold others').
    ttls
        Named cache lifetimes a request can set, in seconds (``{"5m": 300, "1h": 3600}``).
    default_ttl_seconds
        Idle seconds after which an entry is gone when nothing longer was asked for
        (``None``: no time limit; a self-hosted cache lives until evicted).
    longer_ttl
        The longer lifetime worth suggesting, if the provider has one.
    explicit_breakpoints
        The request decides what is written (Anthropic's ``cache_control``): a read that
        fell short can be for want of a breakpoint, and recorded breakpoint TTLs rule.
    keyed_params
        ``(level, parameter paths)``: request parameters that are part of the cache key,
        and the level (``tools``/``system``/``messages``) whose prefix they invalidate.
    min_tokens
        The smallest prefix the provider caches for a model (0: no minimum).
    self_hosted
        A self-hosted engine (vLLM, SGLang): no price list, nothing billed.
    reference_model
        The model priced for this provider when a session is compared across providers.
    compared
        Whether the default comparison (:func:`cacheviz.providers.reference_targets`)
        includes this provider's reference model (False: it is compared when asked for).
    api
        The request API its own clients speak when a body does not say (``messages``).
    rule_choices
        The choices of the simulator rules a user can pick in a control (``ttl``,
        ``breakpoints``), first the default.
    only_at_breakpoints
        Whether the provider writes a call's cache only at the breakpoints its request
        set (Anthropic always; OpenAI GPT-5.6+ in explicit mode).
    history_fix
        The simulated fix when no breakpoint covers the growing history.
    """

    id: str
    label: str
    module: str
    simulator: str
    aliases: tuple[str, ...] = ()
    model_prefixes: tuple[str, ...] = ()
    ttls: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    default_ttl_seconds: float | None = None
    longer_ttl: LongerTTL | None = None
    explicit_breakpoints: bool = False
    keyed_params: tuple[tuple[str, tuple[str, ...]], ...] = ()
    min_tokens: Callable[[str], int] = _no_minimum
    self_hosted: bool = False
    reference_model: str | None = None
    compared: bool = True
    api: str | None = None
    rule_choices: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    only_at_breakpoints: Callable[[Call], bool] = _not_only_breakpoints
    history_fix: HistoryFix | None = None

    def ttl_seconds(self, name: str | None) -> int | None:
        """Seconds of a named TTL (``"1h"``); ``None`` when the provider has no such TTL."""
        return None if name is None else self.ttls.get(str(name))

    def entry_ttl(self, writer: Call | None) -> float | None:
        """Idle seconds an entry written by ``writer`` lives (``writer``: the call before).

        With explicit breakpoints, a breakpoint the writer set with a longer TTL, or
        reported one-hour writes, give the longest named TTL; else the default.
        """
        ttl = self.default_ttl_seconds
        if not (self.explicit_breakpoints and self.ttls and writer is not None):
            return ttl
        longest = max(self.ttls.values())
        asked = any(seconds >= longest for _, seconds in writer.breakpoints)
        usage = writer.usage
        if asked or (usage is not None and (usage.cache_write_1h_tokens or 0) > 0):
            return float(longest)
        return ttl

    def owns_model(self, model: str) -> bool:
        """Whether ``model`` is one of the vendor's own families."""
        return bool(self.model_prefixes) and model.lower().startswith(self.model_prefixes)
