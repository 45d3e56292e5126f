"""Cache namespaces (cacheviz.prefix._namespace): what a provider keys its cache on."""

from __future__ import annotations

import cacheviz
from cacheviz import providers
from cacheviz.model import Call
from cacheviz.prefix._namespace import keyed_params, namespace_of

SYSTEM = [{"type": "text", "text": "You are a careful engineer. " * 200}]


def _call(provider, params):
    return Call(0, 1, None, provider, "messages", "some-model", [], params=params)


def test_anthropic_keys_thinking_on_the_messages_and_speed_on_the_system():
    keyed = keyed_params(_call("anthropic", {"thinking": {"type": "enabled"}, "speed": "fast"}))
    levels = dict(keyed.by_level)
    assert [name for name, _ in levels["messages"]] == ["thinking"]
    assert [name for name, _ in levels["system"]] == ["speed"]


def test_openai_keys_the_whole_prompt():
    keyed = keyed_params(_call("openai", {"reasoning": {"effort": "high"}, "temperature": 0.2}))
    assert keyed.by_level == (("tools", (("reasoning.effort", '"high"'),)),)


def test_the_levels_come_from_the_profiles():
    for profile in providers.profiles():
        params = {}
        for _level, paths in profile.keyed_params:
            for path in paths:
                head, _, tail = path.partition(".")
                params[head] = {tail: "x"} if tail else "x"
        keyed = keyed_params(_call(profile.id, params))
        assert {level for level, _ in keyed.by_level} == {
            level for level, _ in profile.keyed_params
        }


def test_an_unknown_provider_keys_on_the_model_only():
    assert keyed_params(_call("acme", {"thinking": {"type": "enabled"}})).by_level == ()
    assert namespace_of(_call("acme", {})) == "acme/some-model"


def test_a_params_change_breaks_the_line_where_its_level_starts(write_log, anthropic_body):
    history = [{"role": "user", "content": "hello " * 50}]
    plain = anthropic_body(history, system=SYSTEM)
    thinking = {**plain, "thinking": {"type": "enabled", "budget_tokens": 2048}}
    calls = cacheviz.load(write_log([plain, thinking])).analyze().calls
    # the system prompt stays cached: the line stops at the messages, not at 0
    assert 0 < calls["prefix_tokens"][1] < calls["input_tokens"][0]
    first_diff = keyed_params_first_difference(plain, thinking)
    assert first_diff[0] == "messages"


def keyed_params_first_difference(a, b):
    params = {k: v for k, v in b.items() if k not in {"model", "messages", "system"}}
    before = keyed_params(_call("anthropic", {}))
    after = keyed_params(_call("anthropic", params))
    return after.first_difference(before)
