"""The provider registry: each vendor's profile and simulator (providers.md §7).

One module per provider holds its caching facts (a :class:`ProviderProfile` named
``PROFILE``) and its simulator. Everything else asks here::

    >>> from cacheviz import providers
    >>> providers.profile("gemini").id
    'google'
    >>> providers.profile("anthropic").ttls["1h"]
    3600
    >>> [p.id for p in providers.profiles() if p.self_hosted]
    ['vllm', 'sglang', 'llamacpp']

Provider modules are imported on first use, so reading a transcript does not load the
simulators.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any

from cacheviz.errors import SimulationError
from cacheviz.providers._profile import LongerTTL, ProviderProfile

if TYPE_CHECKING:
    from collections.abc import Iterable

# the provider modules, in the order users see them (CLI choices, pickers)
MODULES = (
    "anthropic",
    "openai",
    "deepseek",
    "google",
    "moonshot",
    "qwen",
    "xai",
    "vllm",
    "sglang",
    "llamacpp",
)


@cache
def _registry() -> dict[str, ProviderProfile]:
    found: dict[str, ProviderProfile] = {}
    for name in MODULES:
        profile_ = importlib.import_module(f"cacheviz.providers.{name}").PROFILE
        found[profile_.id] = profile_
    return found


@cache
def _names() -> dict[str, str]:
    names = {}
    for profile_ in _registry().values():
        names[profile_.id] = profile_.id
        names.update(dict.fromkeys(profile_.aliases, profile_.id))
    return names


def ids() -> tuple[str, ...]:
    """Every provider id, in display order."""
    return tuple(_registry())


def profiles() -> tuple[ProviderProfile, ...]:
    """Every provider's profile, in display order."""
    return tuple(_registry().values())


def known(name: object) -> str | None:
    """The provider id ``name`` stands for (an id or alias, any case); ``None`` if none."""
    return _names().get(name.lower()) if isinstance(name, str) and name else None


def profile(name: str) -> ProviderProfile:
    """The profile of provider ``name`` (an id or an alias).

    Raises
    ------
    SimulationError
        When no provider has that name; the message lists the ids.
    """
    key = known(name)
    if key is None:
        msg = f"unknown provider {name!r}; expected one of {', '.join(ids())}"
        raise SimulationError(msg)
    return _registry()[key]


def find(name: str | None) -> ProviderProfile | None:
    """The profile of ``name``, or ``None`` for an unknown or missing provider."""
    key = known(name)
    return None if key is None else _registry()[key]


def simulator_class(name: str) -> type[Any]:
    """The simulator class of provider ``name``."""
    chosen = profile(name)
    module = importlib.import_module(f"cacheviz.providers.{chosen.module}")
    cls: type[Any] = getattr(module, chosen.simulator)  # a dataclass with Simulator's run
    return cls


def self_hosted() -> tuple[str, ...]:
    """The ids of self-hosted engines (no prices, nothing billed)."""
    return tuple(p.id for p in profiles() if p.self_hosted)


def priced() -> tuple[str, ...]:
    """The ids of vendors with a price list."""
    return tuple(p.id for p in profiles() if not p.self_hosted)


def reference_targets() -> list[str]:
    """``provider:model`` of each compared vendor's comparable model (the default comparison)."""
    return [f"{p.id}:{p.reference_model}" for p in profiles() if p.reference_model and p.compared]


def comparison_targets(recorded: Iterable[tuple[Any, Any]]) -> list[str]:
    """The session as recorded, each recorded model, then one comparable model per vendor.

    ``recorded`` is a session's distinct ``(provider, model)`` pairs, in order. First the
    row *as recorded* (every call priced as its own model under its provider's rules,
    what ``summary`` calls simulated): ``provider:model`` when the provider's calls used
    one model; else the provider alone (``anthropic``), then each ``provider:model`` (the
    whole session re-priced as that model). A provider with no simulator is left out. Each
    vendor not recorded adds its comparable model (:func:`reference_targets`, the rule of
    :func:`cacheviz.money.pricing.comparable_model`): the default provider comparison.
    """
    pairs = [(known(p), str(m)) for p, m in recorded if known(p) is not None]
    targets: list[str] = []
    for provider in dict.fromkeys(p for p, _ in pairs):
        models = [m for p, m in pairs if p == provider]
        if len(models) > 1:
            targets.append(str(provider))
        targets += [f"{provider}:{m}" for m in models]
    have = {target.split(":", 1)[0] for target in targets}
    return targets + [t for t in reference_targets() if t.split(":", 1)[0] not in have]


def vendor_of(model: str) -> str | None:
    """The id of the vendor whose own family ``model`` belongs to, if any."""
    return next((p.id for p in profiles() if p.owns_model(model)), None)


def rule_choices(rule: str) -> tuple[str, ...]:
    """The choices of simulator rule ``rule`` across providers (``ttl``: ``5m``, ``1h``)."""
    found: list[str] = []
    for profile_ in profiles():
        found += [c for c in profile_.rule_choices.get(rule, ()) if c not in found]
    return tuple(found)


def directive_ttl(provider: str, name: Any) -> int | None:
    """Seconds of a TTL named in a request's cache directive (``"1h"``), by provider."""
    found = find(provider)
    return None if found is None else found.ttl_seconds(name)


__all__ = [
    "MODULES",
    "LongerTTL",
    "ProviderProfile",
    "comparison_targets",
    "directive_ttl",
    "find",
    "ids",
    "known",
    "priced",
    "profile",
    "profiles",
    "reference_targets",
    "rule_choices",
    "self_hosted",
    "simulator_class",
    "vendor_of",
]
