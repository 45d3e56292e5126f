"""The provider registry (providers/__init__.py) and a profile's rules (providers/_profile.py).

Facts from providers.md: Anthropic's 5-minute and 1-hour TTLs (§1.1), vLLM and SGLang
self-hosted (§5.7, §5.8); the profile methods on hand-made profiles.
"""

from types import MappingProxyType, SimpleNamespace

import pytest

from cacheviz import providers
from cacheviz.errors import SimulationError
from cacheviz.model import Usage
from cacheviz.providers._profile import ProviderProfile


def test_a_name_is_an_id_or_an_alias_in_any_case():
    assert providers.known("anthropic") == "anthropic"
    assert providers.known("Claude") == "anthropic"
    assert providers.known("GEMINI") == "google"
    for nothing in ("", None, 3, "nobody"):
        assert providers.known(nothing) is None


def test_find_and_profile_agree_and_an_unknown_name_lists_the_ids():
    assert providers.find("claude") is providers.profile("anthropic")
    assert providers.find("nobody") is None and providers.find(None) is None
    with pytest.raises(SimulationError, match="unknown provider 'nobody'; expected one of ") as e:
        providers.profile("nobody")
    assert ", ".join(providers.ids()) in str(e.value)


def test_self_hosted_and_priced_split_the_providers():
    assert set(providers.self_hosted()) == {"vllm", "sglang", "llamacpp"}
    assert set(providers.priced()) | set(providers.self_hosted()) == set(providers.ids())
    assert not set(providers.priced()) & set(providers.self_hosted())


def test_a_model_belongs_to_its_vendor():
    assert providers.vendor_of("claude-sonnet-4-5") == "anthropic"
    assert providers.vendor_of("Gemini-2.5-pro") == "google"
    assert providers.vendor_of("qwen3-coder") == "qwen"
    assert providers.vendor_of("kimi-k2.6") == "moonshotai"
    assert providers.vendor_of("grok-4.5-build") == "xai"
    assert providers.vendor_of("llama-3.1-70b") is None


def test_rule_choices_are_the_union_across_providers_without_repeats():
    ttl = providers.rule_choices("ttl")
    assert ttl[:2] == ("5m", "1h")
    assert len(set(ttl)) == len(ttl)
    assert providers.rule_choices("no such rule") == ()


def test_a_directive_ttl_is_named_by_its_provider():
    assert providers.directive_ttl("anthropic", "1h") == 3600
    assert providers.directive_ttl("claude", "5m") == 300
    assert providers.directive_ttl("anthropic", "2h") is None
    assert providers.directive_ttl("nobody", "1h") is None


EXPLICIT = ProviderProfile(
    id="p",
    label="P",
    module="p",
    simulator="S",
    model_prefixes=("pm-",),
    ttls=MappingProxyType({"5m": 300, "1h": 3600}),
    default_ttl_seconds=300.0,
    explicit_breakpoints=True,
)


def writer(*ttls, write_1h=None):
    usage = None if write_1h is None else Usage(cache_write_1h_tokens=write_1h)
    return SimpleNamespace(breakpoints=[(i, t) for i, t in enumerate(ttls)], usage=usage)


def test_a_named_ttl_in_seconds():
    assert EXPLICIT.ttl_seconds("1h") == 3600
    assert EXPLICIT.ttl_seconds(None) is None
    assert EXPLICIT.ttl_seconds("2h") is None


def test_an_entry_lives_the_longest_ttl_its_writer_asked_for():
    assert EXPLICIT.entry_ttl(None) == 300.0
    assert EXPLICIT.entry_ttl(writer(300)) == 300.0
    assert EXPLICIT.entry_ttl(writer(300, 3600)) == 3600.0
    assert EXPLICIT.entry_ttl(writer(write_1h=0)) == 300.0
    assert EXPLICIT.entry_ttl(writer(write_1h=1)) == 3600.0  # reported 1h writes, any


def test_without_explicit_breakpoints_the_default_ttl_rules():
    implicit = ProviderProfile(
        id="q",
        label="Q",
        module="q",
        simulator="S",
        ttls=MappingProxyType({"5m": 300, "1h": 3600}),
        default_ttl_seconds=600.0,
    )
    assert implicit.entry_ttl(writer(3600)) == 600.0
    assert ProviderProfile(id="r", label="R", module="r", simulator="S").entry_ttl(None) is None


def test_a_profile_owns_its_families_in_any_case():
    assert EXPLICIT.owns_model("PM-large")
    assert not EXPLICIT.owns_model("other")
    assert not ProviderProfile(id="r", label="R", module="r", simulator="S").owns_model("")
    assert EXPLICIT.min_tokens("pm-large") == 0
    assert EXPLICIT.only_at_breakpoints(None) is False
