"""Diagnosis you can trust: threads, the namespace line, causes, misses and costs.

Each session below is built the way agents really misbehave, and each expectation comes
from the provider docs (reference/providers.md) or the layout guide in the seeds, not
from cacheviz's own generator:

- Anthropic: tools → system → messages; a change invalidates its level and every later
  one; thinking / tool_choice changes invalidate the messages only (§1.2); minimum
  cacheable length 1,024 tokens for Sonnet 4.5 and 4,096 for Haiku 4.5 (§1.1); TTL 5 min
  from the request start; prices for Sonnet 4.5: $3 input, $3.75 5m write, $6 1h write,
  $0.30 read, $15 output per MTok (§1.4).
- KiloCode strips ``<environment_details>`` from the previous user message (seeds).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

import cacheviz

MODEL = "claude-sonnet-4-5"
HAIKU = "claude-haiku-4-5"
T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
WORDS = [
    "cache",
    "prefix",
    "token",
    "segment",
    "drift",
    "thread",
    "namespace",
    "provider",
    "model",
    "session",
]


def _text(n_words: int, seed: int) -> str:
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] + str(i % 13) for i in range(n_words))


def _tool(name: str) -> dict:
    return {
        "name": name,
        "description": f"{name}: " + _text(60, len(name)),
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }


TOOLS = [_tool(n) for n in ("Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "WebFetch")]
BIG_SYSTEM = _text(1500, 1)  # well above every minimum


def _system(first_line: str = "You are a coding agent.") -> list[dict]:
    return [
        {
            "type": "text",
            "text": f"{first_line}\n{BIG_SYSTEM}",
            "cache_control": {"type": "ephemeral"},
        }
    ]


def _turns(n: int, seed: int = 0) -> list[dict]:
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"turn {i}: " + _text(40, seed + i)
        out.append({"role": role, "content": [{"type": "text", "text": text}]})
    return out


def _cached(messages: list[dict]) -> list[dict]:
    """Claude Code's layout: a breakpoint on the last message."""
    last = dict(messages[-1])
    content = last["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    last["content"] = [*content[:-1], {**content[-1], "cache_control": {"type": "ephemeral"}}]
    return [*messages[:-1], last]


def _body(messages, *, model=MODEL, system=None, tools=TOOLS, **params) -> dict:
    body = {"model": model, "max_tokens": 1024, **params}
    if tools:
        body["tools"] = tools
    body["system"] = system if system is not None else _system()
    body["messages"] = _cached(messages)
    return body


def _usage(read: int, write: int, uncached: int, output: int = 50) -> dict:
    return {
        "input_tokens": uncached,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": output,
    }


def _load(tmp_path, calls) -> cacheviz.Analysis:
    """``calls``: (seconds after T0, body, usage or None, meta or None)."""
    lines = []
    for seconds, body, usage, meta in calls:
        record = {
            "ts": (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"),
            "provider": "anthropic",
            "model": body["model"],
            "request": body,
            "response": {"usage": usage} if usage else None,
        }
        if meta:
            record["meta"] = meta
        lines.append(json.dumps(record))
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return cacheviz.load(path).analyze()


def _conversation(n_calls: int) -> list[list[dict]]:
    """Message lists of an append-only conversation: call k sends 2k + 1 messages."""
    history = _turns(2 * n_calls + 1)
    return [history[: 2 * k + 1] for k in range(n_calls)]


def test_a_timestamp_on_the_first_line_of_a_big_system_prompt_is_a_drift_not_a_thread(tmp_path):
    steps = _conversation(4)
    a = _load(
        tmp_path,
        [
            (
                60 * k,
                _body(msgs, system=_system(f"Current time: 2026-05-04 09:0{k}:00")),
                None,
                None,
            )
            for k, msgs in enumerate(steps)
        ],
    )
    assert a.calls["thread"].n_unique() == 1
    drifts = a.drifts
    assert drifts["call"].to_list() == [1, 2, 3]
    assert set(drifts["cause"]) == {"volatile_value"}
    assert set(drifts["label"]) == {"system[0]"}
    assert all("timestamp changed" in d for d in drifts["detail"])
    # the tools are still shared: the line stops inside the system block, on its first line
    tools_tokens = a.segments.filter((a.segments["call"] == 1) & (a.segments["part"] == "system"))[
        "token_offset"
    ][0]
    assert (a.calls["prefix_tokens"][1:] >= tools_tokens).all()
    assert (a.calls["prefix_tokens"][1:] < tools_tokens + 20).all()
    # every break lost the previous call's whole cached prompt past that point: material
    assert drifts["material"].to_list() == [True, True, True]
    assert (drifts["cost_usd"] > 0).all()
    lost = drifts["tokens_lost"].to_list()
    assert lost == [
        a.calls["input_tokens"][k] - a.calls["prev_common_tokens"][k + 1] for k in range(3)
    ]


def test_environment_details_stripped_from_the_previous_user_message(tmp_path):
    task = {"type": "text", "text": "Please fix the parser. " + _text(30, 3)}
    env = {
        "type": "text",
        "text": "<environment_details>\nCurrent time: 09:00\n</environment_details>",
    }
    first = [{"role": "user", "content": [task, env]}]
    second = [
        {"role": "user", "content": [task]},
        {"role": "assistant", "content": "Looking. " + _text(20, 4)},
        {"role": "user", "content": [{"type": "text", "text": "go on"}, env]},
    ]
    a = _load(tmp_path, [(0, _body(first), None, None), (30, _body(second), None, None)])
    assert a.calls["thread"].n_unique() == 1
    (drift,) = a.drifts.iter_rows(named=True)
    assert (drift["cause"], drift["label"]) == ("env_details_stripped", "user#0")
    assert "<environment_details>" in drift["detail"]
    assert drift["material"] is True and drift["cost_usd"] > 0


def test_a_thinking_budget_change_breaks_the_messages_only(tmp_path):
    steps = _conversation(3)
    thinking = [{"type": "enabled", "budget_tokens": b} for b in (2048, 2048, 8192)]
    a = _load(
        tmp_path,
        [
            (30 * k, _body(m, thinking=t), None, None)
            for k, (m, t) in enumerate(zip(steps, thinking, strict=True))
        ],
    )
    assert a.calls["thread"].n_unique() == 1
    (drift,) = a.drifts.iter_rows(named=True)
    assert (drift["call"], drift["cause"], drift["part"]) == (2, "params_changed", "messages")
    assert (
        "budget_tokens" in drift["detail"]
        and "2048" in drift["detail"]
        and "8192" in drift["detail"]
    )
    messages_start = a.segments.filter(
        (a.segments["call"] == 2) & (a.segments["part"] == "messages")
    )["token_offset"][0]
    # tools and system stay cached (§1.2): the line stops where the messages begin
    assert drift["prev_common_tokens"] == messages_start
    assert a.calls["prefix_tokens"][2] == messages_start
    assert drift["material"] is True


def test_a_tool_choice_change_is_a_params_change(tmp_path):
    steps = _conversation(2)
    a = _load(
        tmp_path,
        [
            (0, _body(steps[0]), None, None),
            (30, _body(steps[1], tool_choice={"type": "tool", "name": "Bash"}), None, None),
        ],
    )
    (drift,) = a.drifts.iter_rows(named=True)
    assert drift["cause"] == "params_changed" and "tool_choice" in drift["detail"]


def test_a_model_switch_mid_thread_keeps_the_thread_and_loses_the_cache(tmp_path):
    steps = _conversation(3)
    models = [MODEL, MODEL, "claude-opus-4-5"]
    a = _load(
        tmp_path,
        [
            (30 * k, _body(m, model=mod), None, None)
            for k, (m, mod) in enumerate(zip(steps, models, strict=True))
        ],
    )
    assert a.calls["thread"].n_unique() == 1
    (drift,) = a.drifts.iter_rows(named=True)
    assert (drift["call"], drift["cause"], drift["prev_common_tokens"]) == (2, "model_switch", 0)
    assert drift["tokens_lost"] == a.calls["input_tokens"][1]
    # another model is another cache namespace: nothing to offer
    assert a.calls["namespace"][2] != a.calls["namespace"][1]
    assert a.calls["prefix_tokens"][2] == 0
    assert drift["material"] is True


def test_compaction_with_a_reduced_tool_set_then_a_new_thread(tmp_path):
    steps = _conversation(3)
    instruction = {"role": "user", "content": "Summarize the conversation so far. " + _text(20, 9)}
    compact = _body([*steps[2], instruction], tools=[_tool("Read")])
    summary = [{"role": "user", "content": "This session is continued. Summary: " + _text(80, 5)}]
    a = _load(
        tmp_path,
        [
            *[(30 * k, _body(m), None, None) for k, m in enumerate(steps)],
            (100, compact, None, None),
            (130, _body(summary), None, None),
        ],
    )
    threads = a.calls["thread"].to_list()
    assert threads[:4] == [threads[0]] * 4  # the compaction request continues the thread
    (drift,) = a.drifts.iter_rows(named=True)
    assert (drift["call"], drift["cause"], drift["part"]) == (3, "block_removed", "tools")
    assert drift["detail"].startswith("7 tool(s) removed (Task, Bash, Glob, Grep, …)")
    # the summary starts a new conversation, under the old one
    assert threads[4] != threads[0] and a.calls["parent_thread"][4] == threads[0]
    assert a.calls["drift"][4] is False
    # ...and its tools + system are still the namespace's common prefix
    first_message = a.segments.filter(
        (a.segments["call"] == 4) & (a.segments["part"] == "messages")
    )["token_offset"][0]
    assert a.calls["prefix_tokens"][4] >= first_message


def _anthropic_usage_for(a_calls, k, read):
    total = a_calls["input_tokens"][k]
    return _usage(read=read, write=total - read - 10, uncached=10)


def test_a_ttl_gap_with_reported_usage_is_a_ttl_miss(tmp_path):
    steps = _conversation(3)
    bodies = [_body(m) for m in steps]
    probe = _load(tmp_path, [(0, b, None, None) for b in bodies]).calls
    total = probe["input_tokens"].to_list()
    usage = [
        _usage(read=0, write=total[0] - 10, uncached=10),
        _usage(read=total[0], write=total[1] - total[0] - 10, uncached=10),
        _usage(read=0, write=total[2] - 10, uncached=10),  # after 20 idle minutes
    ]
    a = _load(
        tmp_path,
        [(t, b, u, None) for t, b, u in zip((0, 60, 60 + 1200), bodies, usage, strict=True)],
    )
    assert a.drifts.height == 0  # the bytes kept the prefix: this is not a drift
    (miss,) = a.misses.iter_rows(named=True)
    assert (miss["call"], miss["cause"]) == (2, "ttl_expired")
    assert miss["gap_seconds"] == 1200
    assert miss["shortfall_tokens"] == a.calls["expected_read_tokens"][2] > 1024
    assert miss["cost_usd"] > 0
    assert a.calls["miss_cause"].to_list() == [None, None, "ttl_expired"]


def test_a_read_the_rules_allowed_but_the_provider_did_not_serve_is_provider_side(tmp_path):
    steps = _conversation(3)
    bodies = [_body(m) for m in steps]
    total = _load(tmp_path, [(0, b, None, None) for b in bodies]).calls["input_tokens"].to_list()
    usage = [
        _usage(read=0, write=total[0] - 10, uncached=10),
        _usage(read=total[0], write=total[1] - total[0] - 10, uncached=10),
        _usage(read=0, write=total[2] - 10, uncached=10),  # 30 s later: nothing expired
    ]
    a = _load(
        tmp_path, [(t, b, u, None) for t, b, u in zip((0, 30, 60), bodies, usage, strict=True)]
    )
    (miss,) = a.misses.iter_rows(named=True)
    assert (miss["call"], miss["cause"]) == (2, "provider_side")
    sim = a.simulate("anthropic")
    assert sim.calls["verdict"].to_list() == ["match", "match", "unexplained_miss"]


def test_sub_minimum_side_calls_are_their_own_threads_and_cost_nothing(tmp_path):
    steps = _conversation(4)
    title = [{"role": "user", "content": "Write a 5-word title for: fix the parser"}]
    quota = [{"role": "user", "content": "quota"}]
    side_system = [{"type": "text", "text": "Generate a short title."}]
    calls = []
    for k, msgs in enumerate(steps):
        calls.append((30 * k, _body(msgs), None, None))
        side = title if k % 2 == 0 else quota
        calls.append(
            (30 * k + 5, _body(side, model=HAIKU, system=side_system, tools=None), None, None)
        )
    a = _load(tmp_path, calls)
    main = a.calls.filter(a.calls["model"] == MODEL)
    assert main["thread"].n_unique() == 1
    assert not main["drift"].any()
    side = a.calls.filter(a.calls["model"] == HAIKU)
    assert set(side["thread"]).isdisjoint(set(main["thread"]))
    assert set(side["parent_thread"]) == {main["thread"][0]}
    # whatever drifts the side calls show, they are below Haiku 4.5's 4,096 minimum
    assert not a.drifts["material"].any()
    assert (a.drifts["cost_usd"] == 0).all()


def test_billed_cost_prices_reported_usage_with_5m_and_1h_writes_apart(tmp_path):
    body = _body(_turns(1))
    usage = {
        "input_tokens": 1000,
        "cache_read_input_tokens": 20_000,
        "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
        "output_tokens": 500,
    }
    a = _load(tmp_path, [(0, body, usage, None)])
    # Sonnet 4.5 (§1.4): $3 in, $0.30 read, $3.75 5m write, $6 1h write, $15 out per MTok
    expected = (1000 * 3 + 20_000 * 0.30 + 1000 * 3.75 + 2000 * 6 + 500 * 15) / 1e6
    assert a.calls["billed_usd"][0] == pytest.approx(expected)
    assert a.billed_usd == pytest.approx(expected)
    assert a.summary()["billed_usd"] == pytest.approx(expected)


def test_no_usage_means_no_billed_cost(tmp_path):
    a = _load(tmp_path, [(0, _body(_turns(1)), None, None)])
    assert a.calls["billed_usd"][0] is None and a.billed_usd is None
    assert a.misses.height == 0


def test_an_unpriced_model_is_named(tmp_path):
    body = _body(_turns(1), model="claude-nonexistent-9")
    a = _load(tmp_path, [(0, body, _usage(0, 0, 2000), None)])
    assert a.calls["billed_usd"][0] is None
    assert a.unpriced_models == ["claude-nonexistent-9"]
    assert a.unpriced_reasons == {"claude-nonexistent-9": "no price in genai-prices or the overlay"}


def test_a_model_of_a_provider_without_a_profile_is_named_with_the_reason(tmp_path):
    _load(tmp_path, [(0, _body(_turns(1)), _usage(0, 0, 2000), None)])
    path = tmp_path / "session.jsonl"
    path.write_text(path.read_text().replace('"provider": "anthropic"', '"provider": "acme-ai"'))
    a = cacheviz.load(path).analyze()
    assert a.calls["provider"][0] == "acme-ai"
    assert a.calls["billed_usd"][0] is None  # not silently: listed, with why
    assert a.unpriced_models == [MODEL]
    assert "no caching rules or prices for provider 'acme-ai'" in a.unpriced_reasons[MODEL]
    doc = a.summary()
    assert doc["unpriced_reasons"] == a.unpriced_reasons
    assert doc["reported_totals"]["reasoning_tokens"] is None  # none reported: null, not 0


def test_drift_cost_is_the_what_if_of_the_same_simulator(tmp_path):
    # sample environment_details.jsonl, call 5: the drift cost must account for the whole
    # loss, i.e. match (call cost - its cost had the prefix been kept), not a fraction
    a = cacheviz.load("sample_sessions/environment_details.jsonl").analyze()
    sim = a.simulate("anthropic")
    row = a.drifts.filter(a.drifts["call"] == 5).row(0, named=True)
    cost = sim.calls["cost_usd"][5]
    ideal = sim.calls["ideal_usd"][5]
    assert ideal < cost
    assert row["cost_usd"] > 0.5 * (cost - ideal)  # round 1 reported ~8 % of this gap
    assert row["cost_usd"] <= cost


def test_the_ideal_is_a_lower_bound_under_every_provider(tmp_path):
    a = cacheviz.load("sample_sessions/append_only.jsonl").analyze()
    for provider, model in [
        ("anthropic", None),
        ("openai", "gpt-5"),
        ("deepseek", "deepseek-chat"),
        ("google", "gemini-2.5-pro"),
    ]:
        sim = a.simulate(provider, model)
        assert (sim.calls["ideal_usd"] <= sim.calls["cost_usd"] + 1e-12).all(), provider


@pytest.mark.parametrize(
    ("new_value", "far_edit", "cause"),
    [
        ("2026-05-04T09:07:00Z", False, "volatile_value"),
        ("2026-05-04T09:07:00Z", True, "content_edited"),  # and another edit 5k chars on
    ],
)
def test_a_volatile_value_deep_in_a_long_block(tmp_path, new_value, far_edit, cause):
    before = _text(800, 2) + " stamp 2026-05-04T09:00:00Z " + _text(800, 3)
    after = before.replace("2026-05-04T09:00:00Z", new_value)
    if far_edit:
        after = after[:-200] + "X" + after[-199:]
    steps = _conversation(2)
    a = _load(
        tmp_path,
        [
            (0, _body(steps[0], system=_system(before)), None, None),
            (30, _body(steps[1], system=_system(after)), None, None),
        ],
    )
    (drift,) = a.drifts.iter_rows(named=True)
    assert drift["cause"] == cause


def test_a_mini_swe_agent_call_that_read_next_to_nothing_is_a_miss(tmp_path):
    # mini-swe-agent (OpenAI chat format via LiteLLM): every call re-sends the whole
    # conversation; the last one was served 151 cached tokens of a 14k+ prefix
    system = "You are a helpful assistant that can interact with a computer. " + _text(9000, 4)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Fix the bug."}]
    reads = [0, 0, 0, 151]
    for i, cached in enumerate(reads):
        sent = sum(len(m["content"]) for m in messages) // 4  # a rough prompt size
        content = f"THOUGHT: step {i}\n\n```bash\necho {i}\n```"
        response = {
            "id": f"chatcmpl-{i}",
            "created": 1754500000 + 20 * i,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {
                "prompt_tokens": sent,
                "completion_tokens": 40,
                "prompt_tokens_details": {"cached_tokens": cached if i else 0},
            },
        }
        if 0 < i < 3:  # the provider served the prefix on the middle calls
            response["usage"]["prompt_tokens_details"]["cached_tokens"] = sent - 300
        messages.append({"role": "assistant", "content": content, "extra": {"response": response}})
        messages.append({"role": "user", "content": f"<returncode>0</returncode>\n{i}"})
    document = {
        "info": {"mini_version": "1.9.1", "config": {"model": {"model_name": "gpt-4o-mini"}}},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }
    path = tmp_path / "task.traj.json"
    path.write_text(json.dumps(document))
    a = cacheviz.load(path).analyze()
    assert a.calls["thread"].n_unique() == 1 and a.drifts.height == 0
    (miss,) = a.misses.iter_rows(named=True)
    assert (miss["call"], miss["reported_cache_read_tokens"]) == (3, 151)
    assert miss["cause"] == "provider_side" and miss["expected_read_tokens"] > 10_000


def test_a_messages_level_change_keeps_the_system_level_params_cached(tmp_path):
    # §1.2: `speed` is keyed from the system on, tool_choice from the messages on; with
    # both set, changing tool_choice alone still leaves tools + system cached
    steps = _conversation(2)
    a = _load(
        tmp_path,
        [
            (0, _body(steps[0], speed="fast"), None, None),
            (30, _body(steps[1], speed="fast", tool_choice={"type": "any"}), None, None),
        ],
    )
    messages_start = a.segments.filter(
        (a.segments["call"] == 1) & (a.segments["part"] == "messages")
    )["token_offset"][0]
    assert a.calls["prefix_tokens"][1] == messages_start
    (drift,) = a.drifts.iter_rows(named=True)
    assert drift["cause"] == "params_changed" and drift["prev_common_tokens"] == messages_start
