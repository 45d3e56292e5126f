"""cacheviz check: every rule, positive and negative, on Anthropic and OpenAI sessions.

Sessions are written in the cacheviz request log format with request bodies as each API
takes them. Each case follows the KV-cache layout guide (seeds): the anti-pattern it
names, and the practice it recommends instead, which must give no finding.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import pytest

import cacheviz
from cacheviz.check import RULES, check
from cacheviz.errors import CacheVizWarning
from cacheviz.formats.native import record_line

APIS = ["anthropic", "openai"]
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4o"}
SOUL = "You are a careful coding agent. " + " ".join(
    f"Rule {i}: keep the prefix stable and append whatever changes at the end." for i in range(90)
)
POLICY = "Tool use policy. Read before you write; run the tests after every edit."
TOOLS = [
    (name, f"{name.replace('_', ' ').capitalize()} in the workspace.", {"path": "string"})
    for name in ("read_file", "write_file", "search_code", "run_command", "list_directory")
]


def tool_defs(api: str, specs=TOOLS) -> list[dict[str, Any]]:
    out = []
    for name, description, props in specs:
        schema = {
            "type": "object",
            "properties": {k: {"type": v} for k, v in props.items()},
            "required": list(props),
        }
        if api == "anthropic":
            out.append({"name": name, "description": description, "input_schema": schema})
        else:
            out.append(
                {
                    "type": "function",
                    "function": {"name": name, "description": description, "parameters": schema},
                }
            )
    return out


def render(api: str, history: list[tuple]) -> list[dict[str, Any]]:
    """Neutral turns → the API's messages: ("user", text), ("assistant", text), ("tool", ...)."""
    out: list[dict[str, Any]] = []
    for item in history:
        if item[0] in ("user", "assistant"):
            text = item[1]
            content = [{"type": "text", "text": text}] if api == "anthropic" else text
            out.append({"role": item[0], "content": content})
            continue
        _, name, path, result = item
        call_id = "call_" + path.replace("/", "_").replace(".", "_")
        if api == "anthropic":
            out.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Reading {path}."},
                        {"type": "tool_use", "id": call_id, "name": name, "input": {"path": path}},
                    ],
                }
            )
            out.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
                }
            )
        else:
            out.append(
                {
                    "role": "assistant",
                    "content": f"Reading {path}.",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps({"path": path})},
                        }
                    ],
                }
            )
            out.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return out


def body(api: str, system: list[str], tools: list, messages: list, **params) -> dict[str, Any]:
    model = params.pop("model", MODELS[api])
    if api == "anthropic":
        out = {"model": model, "max_tokens": 2048, **params}
        if system:
            out["system"] = [{"type": "text", "text": s} for s in system]
            out["system"][-1]["cache_control"] = {"type": "ephemeral"}
        out["tools"] = tools
        # breakpoints as Claude Code sets them: end of system, the latest message
        last = messages[-1]
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
        out["messages"] = [*messages[:-1], {**last, "content": blocks}]
        return out
    return {
        "model": model,
        **params,
        "messages": [{"role": "system", "content": s} for s in system] + messages,
        "tools": tools,
    }


class Log:
    """A request log being written: one line per call, with a clock."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.lines: list[str] = []
        self.clock = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def add(self, payload: dict[str, Any], *, gap: float = 30, meta=None, usage=None) -> None:
        self.clock += timedelta(seconds=gap)
        self.lines.append(
            record_line(
                payload,
                provider="anthropic" if self.api == "anthropic" else "openai",
                model=payload["model"],
                api="messages" if self.api == "anthropic" else "chat.completions",
                ts=self.clock.isoformat().replace("+00:00", "Z"),
                meta=meta,
                usage=usage,
            )
        )

    def write(self, path) -> Any:
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path


def agent(
    api: str,
    *,
    turns: int = 3,
    steps: int = 3,
    system: Callable[[int], list[str]] = lambda call: [SOUL, POLICY],
    tools: Callable[[int], list] | None = None,
    messages: Callable[[int, list[tuple]], list[tuple]] = lambda call, h: h,
    params: Callable[[int], dict] = lambda call: {},
    gap: Callable[[int, int], float] = lambda turn, step: 30,
    user: Callable[[int], str] = lambda turn: f"Please fix bug number {turn} in the parser.",
    log: Log | None = None,
    meta: dict | None = None,
) -> Log:
    """A tool-using agent loop: turns of ``steps`` calls over an append-only history."""
    log = log or Log(api)
    history: list[tuple] = []
    call = 0
    for turn in range(turns):
        history.append(("user", user(turn)))
        for step in range(steps):
            sent = render(api, messages(call, list(history)))
            payload = body(
                api, system(call), (tools or (lambda c: tool_defs(api)))(call), sent, **params(call)
            )
            log.add(payload, gap=gap(turn, step), meta=meta)
            call += 1
            if step < steps - 1:
                history.append(
                    ("tool", "read_file", f"src/mod{turn}_{step}.py", f"def f{step}(): pass")
                )
            else:
                history.append(("assistant", f"Done with bug {turn}: the parser is fixed."))
    return log


def run(tmp_path, log: Log, **kwargs):
    return check(log.write(tmp_path / f"{log.api}.jsonl"), **kwargs)


def rules_of(result) -> set[str]:
    return {f.rule for f in result.findings}


# -- rule 1: system prompt and tools never change -------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_dynamic_system_timestamp_in_the_system_prompt(tmp_path, api):
    # guide, pitfall: "Current time: {{now}}" in the system prompt
    log = agent(api, system=lambda c: [SOUL, f"Current time: 2026-03-02T09:{c:02d}:17Z", POLICY])
    result = run(tmp_path, log)
    assert rules_of(result) == {"dynamic_system"}
    (finding,) = result.findings
    assert finding.severity == "error" and finding.calls == list(range(1, 9))
    assert (
        "timestamp" in finding.message and "Current time: 2026-03-02T09:01:17Z" in finding.message
    )
    # the cost is the drifts' own what-if, summed
    drifts = cacheviz.load(tmp_path / f"{api}.jsonl").analyze().drifts
    assert finding.cost_usd == pytest.approx(drifts["cost_usd"].sum()) and finding.cost_usd > 0
    assert result.exit_status == 1


@pytest.mark.parametrize("api", APIS)
def test_time_appended_at_the_end_is_clean(tmp_path, api):
    # guide, fix: "time as a user message appended at the end" (and kept in the history)
    log = agent(api, user=lambda t: f"Current time: 2026-03-02T1{t}:00:00Z. Fix bug {t}.")
    result = run(tmp_path, log)
    assert result.findings == [] and result.exit_status == 0


@pytest.mark.parametrize("api", APIS)
def test_dynamic_system_once_is_a_warning_and_tool_edits_count(tmp_path, api):
    # a tool definition edited once mid-thread: rule 1 covers tools too
    edited = [(n, d + (" Now faster." if n == "search_code" else ""), p) for n, d, p in TOOLS]
    log = agent(api, tools=lambda c: tool_defs(api, edited if c >= 4 else TOOLS))
    result = run(tmp_path, log)
    assert rules_of(result) == {"dynamic_system"}
    assert result.findings[0].severity == "warning" and result.findings[0].calls == [4]


@pytest.mark.parametrize("api", APIS)
def test_dynamic_profile_balance_in_the_system_prompt(tmp_path, api):
    # guide anti-pattern: dynamic user profile (balance / quota) rewrites the prefix
    log = agent(
        api,
        system=lambda c: [
            SOUL,
            f"User profile: balance ${20 - c * 0.5:.2f}, quota {40 - c}",
            POLICY,
        ],
    )
    result = run(tmp_path, log)
    assert rules_of(result) == {"dynamic_profile"}
    assert "balance" in result.findings[0].message


@pytest.mark.parametrize("api", APIS)
def test_dynamic_profile_in_the_first_user_message(tmp_path, api):
    # the same anti-pattern with the profile injected as the first block of the first
    # user message, rewritten before every call (issue 20, item 14): named for what it is
    def messages(call, history):
        profile = f"User profile: plan Pro, balance ${25 - 0.37 * call:.2f}, credits {90 - call}"
        first = history[0]
        return [(first[0], f"{profile}\n{first[1]}"), *history[1:]]

    result = run(tmp_path, agent(api, messages=messages))
    assert rules_of(result) == {"dynamic_profile"}
    finding = result.findings[0]
    assert finding.severity == "error" and finding.calls == list(range(1, 9))
    assert "balance" in finding.message and "history_rewrite" not in finding.message


@pytest.mark.parametrize("api", APIS)
def test_dynamic_profile_by_position_and_recurrence_not_words(tmp_path, api):
    # issue 28: a volatile account block whose keys no word list knows, injected as the
    # first block of the first user message and rewritten before every call
    def messages(call, history):
        account = json.dumps(
            {"monthly_quota_used": 41 + 3 * call, "prepaid_credit_usd": round(12.5 - call, 2)}
        )
        first = history[0]
        return [(first[0], f"{account}\n{first[1]}"), *history[1:]]

    result = run(tmp_path, agent(api, messages=messages))
    assert rules_of(result) == {"dynamic_profile"}
    finding = result.findings[0]
    assert finding.calls == list(range(1, 9)) and "monthly_quota_used" in finding.message


@pytest.mark.parametrize("api", APIS)
def test_profile_words_changed_once_are_not_a_profile(tmp_path, api):
    # the words do not decide: a system block naming a balance, edited once, is a
    # system prompt that changed (dynamic_system, a warning), not volatile state
    def system(call):
        return [SOUL, f"Billing: balance and quota rules v{1 if call < 5 else 2}.", POLICY]

    result = run(tmp_path, agent(api, system=system))
    assert rules_of(result) == {"dynamic_system"}
    assert result.findings[0].calls == [5]


@pytest.mark.parametrize("api", APIS)
def test_profile_fetched_with_a_tool_is_clean(tmp_path, api):
    # guide fix: fetch user state on demand (a tool result appended at the end)
    specs = [*TOOLS, ("get_profile", "Fetch the user's balance and quota.", {"user": "string"})]
    log = agent(api, tools=lambda c: tool_defs(api, specs))
    assert run(tmp_path, log).findings == []


@pytest.mark.parametrize("api", APIS)
def test_shuffled_tools_by_usage_frequency(tmp_path, api):
    orders = [[0, 1, 2, 3, 4], [2, 0, 1, 3, 4], [4, 2, 0, 1, 3], [1, 4, 2, 0, 3]]
    log = agent(api, tools=lambda c: [tool_defs(api)[i] for i in orders[c % 4]])
    result = run(tmp_path, log)
    assert rules_of(result) == {"shuffled_tools"}
    assert result.findings[0].severity == "error"


@pytest.mark.parametrize("api", APIS)
def test_fixed_tool_order_is_clean(tmp_path, api):
    # guide: registration order or sorted by name, never by frequency
    by_name = sorted(tool_defs(api), key=lambda t: json.dumps(t))
    assert run(tmp_path, agent(api, tools=lambda c: by_name)).findings == []


@pytest.mark.parametrize("api", APIS)
def test_key_order_rebuilt_tool_schema(tmp_path, api):
    # guide pitfall: rebuilding the message list each call with another serialization order
    def tools(call):
        defs = tool_defs(api)
        if call % 2:
            defs[0] = dict(reversed(list(defs[0].items())))
        return defs

    result = run(tmp_path, agent(api, tools=tools))
    assert rules_of(result) == {"key_order"}
    assert result.findings[0].severity == "warning"


# -- the trajectory: append only -------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_sliding_window(tmp_path, api):
    result = run(tmp_path, agent(api, turns=4, messages=lambda c, h: h[-5:]))
    assert rules_of(result) == {"sliding_window"}
    assert result.findings[0].severity == "error"


@pytest.mark.parametrize("api", APIS)
def test_compaction_instead_of_a_window_is_only_a_note(tmp_path, api):
    # guide fix for the sliding window: compress between two calls, keep system and tools
    summary = ("user", "Summary of the work so far: bugs 0 and 1 are fixed in the parser.")

    cut = []

    def messages(call, history):
        if call < 6:
            return history
        cut.append(len(history) - 1)  # the history up to call 6 is summarized, once
        return [summary, ("assistant", "Understood."), *history[cut[0] :]]

    result = run(tmp_path, agent(api, turns=4, messages=messages))
    # the summary starts a new thread (or, as a drift, a note): no warning, exit 0
    assert {f.severity for f in result.findings} <= {"info"}
    assert rules_of(result) <= {"history_rewrite"}
    assert result.exit_status == 0


@pytest.mark.parametrize("api", APIS)
def test_text_format_flattened_history(tmp_path, api):
    # rule 3: never splice USER: ... ASSISTANT: ... yourself
    def messages(call, history):
        lines = [f"{'USER' if r[0] == 'user' else 'ASSISTANT'}: {r[-1]}" for r in history]
        return [("user", "\n".join(lines))]

    result = run(tmp_path, agent(api, messages=messages))
    assert rules_of(result) == {"text_format"}
    assert "USER:/ASSISTANT:" in result.findings[0].message


@pytest.mark.parametrize("api", APIS)
def test_text_format_tool_result_as_a_user_message(tmp_path, api):
    def messages(call, history):
        return [("user", f"Tool result: {r[3]}") if r[0] == "tool" else r for r in history]

    result = run(tmp_path, agent(api, messages=messages))
    assert rules_of(result) == {"text_format"}
    assert "tool result sent as a user message" in result.findings[0].message


@pytest.mark.parametrize("api", APIS)
def test_structured_messages_quoting_a_role_are_clean(tmp_path, api):
    # one quoted "User:" line in a normal request is not a flattened transcript
    log = agent(api, user=lambda t: f"The log says\nUser: admin logged in\nfix bug {t}.")
    assert run(tmp_path, log).findings == []


@pytest.mark.parametrize("api", APIS)
def test_history_rewrite_tool_output_replaced_later(tmp_path, api):
    # guide: a replacement string must be frozen at first use; here a tool output already
    # sent is swapped for a preview two calls later
    def messages(call, history):
        if call >= 5:
            return [
                ("tool", r[1], r[2], "[preview: 1 line]") if r[0] == "tool" and i == 1 else r
                for i, r in enumerate(history)
            ]
        return history

    result = run(tmp_path, agent(api, messages=messages))
    assert rules_of(result) == {"history_rewrite"}
    finding = result.findings[0]
    assert finding.severity == "warning" and finding.calls == [5]


@pytest.mark.parametrize("api", APIS)
def test_append_only_is_clean(tmp_path, api):
    result = run(tmp_path, agent(api, turns=4))
    assert result.findings == [] and not result.failed


@pytest.mark.parametrize("api", APIS)
def test_env_details_stripped_next_turn(tmp_path, api):
    # KiloCode: <environment_details> on the latest user message, not persisted
    def details(turn):
        return f"\n<environment_details>\nCurrent time: 2026-03-02T1{turn}:00:00Z\n</environment_details>"

    def messages(call, history):
        last_user = max(i for i, r in enumerate(history) if r[0] == "user")
        turn = sum(r[0] == "user" for r in history) - 1
        return [
            ("user", r[1] + details(turn)) if i == last_user else r for i, r in enumerate(history)
        ]

    result = run(tmp_path, agent(api, turns=4, messages=messages))
    assert rules_of(result) == {"env_details_stripped"}
    assert result.findings[0].calls == [3, 6, 9]


@pytest.mark.parametrize("api", APIS)
def test_env_details_kept_in_the_history_are_clean(tmp_path, api):
    # the details persisted with their user message: bytes never change once sent
    log = agent(
        api,
        turns=4,
        user=lambda t: (
            f"Fix bug {t}.\n<environment_details>\nActive file: src/p{t}.py\n</environment_details>"
        ),
    )
    assert run(tmp_path, log).findings == []


# -- consistency designs ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("api", "before", "after"),
    [
        (
            "anthropic",
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
            {"thinking": {"type": "enabled", "budget_tokens": 8192}},
        ),
        ("openai", {"reasoning_effort": "low"}, {"reasoning_effort": "high"}),
    ],
)
def test_thinking_config_changes_within_a_thread(tmp_path, api, before, after):
    model = {"openai": {"model": "o3"}}.get(api, {})
    log = agent(api, params=lambda c: {**model, **(after if c >= 4 else before)})
    result = run(tmp_path, log)
    assert rules_of(result) == {"thinking_config"}
    assert result.findings[0].calls == [4]


@pytest.mark.parametrize(
    ("api", "params"),
    [
        ("anthropic", {"thinking": {"type": "enabled", "budget_tokens": 2048}}),
        ("openai", {"model": "o3", "reasoning_effort": "low"}),
    ],
)
def test_frozen_thinking_config_is_clean(tmp_path, api, params):
    assert run(tmp_path, agent(api, params=lambda c: dict(params))).findings == []


def _with_subagent(api, child_system, *, child_params=None, child_tools=None):
    """A main thread whose calls 3-5 are interleaved with a sub-agent's calls."""
    log = Log(api)
    main = agent(api, turns=2, steps=4, log=Log(api), meta={"lineage": "main"}).lines
    sub = agent(
        api,
        turns=1,
        steps=3,
        system=lambda c: child_system,
        tools=child_tools,
        params=lambda c: dict(child_params or {}),
        user=lambda t: "Explore: where is the cache key computed?",
        log=Log(api),
        meta={"lineage": "subagent:explore"},
    ).lines
    log.lines = main[:3] + [x for pair in zip(sub, main[3:6], strict=True) for x in pair] + main[6:]
    for i, line in enumerate(log.lines):  # re-time in the interleaved order
        record = json.loads(line)
        record["ts"] = f"2026-03-02T09:{i:02d}:00Z"
        log.lines[i] = json.dumps(record)
    return log


@pytest.mark.parametrize("api", APIS)
def test_subagent_misaligned_one_value_differs(tmp_path, api):
    # guide: the sub-agent's prompt, tools, model and thinking must match byte for byte
    result = run(tmp_path, _with_subagent(api, [SOUL.replace("careful", "fast"), POLICY]))
    assert rules_of(result) == {"subagent_misaligned"}
    finding = result.findings[0]
    assert finding.thread == "subagent:explore" and "careful" in finding.message


@pytest.mark.parametrize("api", APIS)
def test_subagent_misaligned_tools_and_params(tmp_path, api):
    fewer = lambda c: tool_defs(api, TOOLS[:4])  # noqa: E731
    params = {"tool_choice": {"type": "any"} if api == "anthropic" else "required"}
    result = run(
        tmp_path, _with_subagent(api, [SOUL, POLICY], child_tools=fewer, child_params=params)
    )
    assert rules_of(result) == {"subagent_misaligned"}
    message = result.findings[0].message
    assert "tools missing: list_directory" in message and "parameter tool_choice" in message


@pytest.mark.parametrize("api", APIS)
def test_aligned_subagent_is_clean(tmp_path, api):
    assert run(tmp_path, _with_subagent(api, [SOUL, POLICY])).findings == []


@pytest.mark.parametrize("api", APIS)
def test_deliberately_different_subagent_prompt_is_clean(tmp_path, api):
    # guide: when the framework means the child to have another prompt, no alignment needed
    other = ["You are a read-only explorer. Report file paths, never edit anything."]
    assert run(tmp_path, _with_subagent(api, other)).findings == []


def _sessions(api, system_of):
    log = Log(api)
    conditions = [("linux", "code"), ("macos", "code"), ("linux", "ask"), ("macos", "ask")]
    for n, (os_name, mode) in enumerate(conditions):
        agent(
            api,
            turns=1,
            steps=2,
            system=lambda c, o=os_name, m=mode: system_of(o, m),
            user=lambda t, o=os_name, m=mode, k=n: f"[{o}, {m} mode] fix bug {k}",
            log=log,
            meta={"session": f"s{n}"},
        )
    return log


@pytest.mark.parametrize("api", APIS)
def test_prefix_variants_runtime_conditions_before_the_boundary(tmp_path, api):
    # guide: N binary runtime conditions before the boundary give 2^N cache keys
    log = _sessions(api, lambda o, m: [SOUL, f"OS: {o}", f"Mode: {m}", POLICY])
    result = run(tmp_path, log)
    assert rules_of(result) == {"prefix_variants"}
    message = result.findings[0].message
    assert "4 distinct system+tools prefixes across 4 threads" in message
    assert "2^2 = 4" in message and "'OS: linux'" in message and "'Mode: ask'" in message


@pytest.mark.parametrize("api", APIS)
def test_conditions_after_the_boundary_are_clean(tmp_path, api):
    assert run(tmp_path, _sessions(api, lambda o, m: [SOUL, POLICY])).findings == []


# -- TTL -------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_ttl_gaps_long_pauses_between_turns(tmp_path, api):
    log = agent(api, turns=4, gap=lambda turn, step: 900 if turn and step == 0 else 20)
    result = run(tmp_path, log)
    assert rules_of(result) == {"ttl_gaps"}
    finding = result.findings[0]
    assert finding.calls == [3, 6, 9] and "15.0 min" in finding.message
    assert finding.cost_usd is not None and finding.cost_usd > 0
    longer = "cache_control ttl '1h'" if api == "anthropic" else "prompt_cache_retention '24h'"
    assert longer in finding.message
    if api == "anthropic":
        assert "Break-even" in finding.message


@pytest.mark.parametrize("api", APIS)
def test_short_pauses_are_clean(tmp_path, api):
    log = agent(api, turns=4, gap=lambda turn, step: 200 if step == 0 else 20)
    assert run(tmp_path, log).findings == []


@pytest.mark.parametrize("api", APIS)
def test_a_pause_beyond_every_ttl_is_a_note_not_a_warning(tmp_path, api):
    # a person's 46-hour pause outlasts any TTL the provider offers (Anthropic 1 h, OpenAI
    # 30 min): nothing in the layout avoids the re-write, so it is an info note (exit 0)
    log = agent(api, turns=3, gap=lambda turn, step: 46 * 3600 if turn and step == 0 else 20)
    result = run(tmp_path, log)
    assert [(f.rule, f.severity) for f in result.findings] == [("ttl_gaps", "info")]
    assert not result.failed and result.exit_status == 0
    note = result.findings[0]
    assert note.calls == [3, 6] and "46.0 h" in note.message and "A pause" in note.message
    assert "'1h'" not in note.message and "'24h'" not in note.message
    assert "Break-even" not in note.message


def test_pauses_are_told_apart_from_gaps_a_longer_ttl_bridges(tmp_path):
    # a 15-minute gap is the layout's (a 1 h TTL bridges it), a 46-hour one is a pause
    gaps = {1: 900, 2: 46 * 3600}
    log = agent("anthropic", turns=3, gap=lambda turn, step: gaps.get(turn, 20) if not step else 20)
    result = run(tmp_path, log)
    found = {f.severity: f for f in result.findings}
    assert set(found) == {"warning", "info"} and result.exit_status == 1
    assert found["warning"].calls == [3] and "cache_control ttl '1h'" in found["warning"].message
    assert found["info"].calls == [6] and "46.0 h" in found["info"].message


def test_ttl_gaps_never_advise_the_ttl_the_thread_already_uses(tmp_path):
    # the thread's first writes are 1-hour writes (Claude Code's main thread): the 15-minute
    # gaps after 5-minute writes are still re-writes, but 1 h is not the advice
    log = agent("anthropic", turns=3, gap=lambda turn, step: 900 if turn and step == 0 else 20)
    for i, line in enumerate(log.lines):
        record = json.loads(line)
        cold = i in (0, 3, 6)
        written = 1600 if cold else 100
        record["response"] = {
            "usage": {
                "input_tokens": 20,
                "cache_read_input_tokens": 0 if cold else 1500,
                "cache_creation_input_tokens": written,
                "cache_creation": {
                    "ephemeral_1h_input_tokens": written if i == 0 else 0,
                    "ephemeral_5m_input_tokens": 0 if i == 0 else written,
                },
                "output_tokens": 50,
            }
        }
        log.lines[i] = json.dumps(record)
    result = run(tmp_path, log)
    assert rules_of(result) == {"ttl_gaps"}
    (finding,) = result.findings
    assert finding.calls == [3, 6]
    assert "already caches with cache_control ttl '1h'" in finding.message
    assert "Break-even" not in finding.message and "pays off" not in finding.message
    assert "keep the cache warm" in finding.message


# -- costs, allow, the pytest helper ---------------------------------------------------


def test_drift_findings_take_their_cost_from_the_drifts(tmp_path):
    path = agent(
        "anthropic", system=lambda c: [SOUL, f"Current time: 09:{c:02d}:17", POLICY]
    ).write(tmp_path / "log.jsonl")
    analysis = cacheviz.load(path).analyze()
    analysis.drifts = analysis.drifts.with_columns(
        cost_usd=pl.Series([0.01 * (i + 1) for i in range(analysis.drifts.height)]),
        material=pl.lit(True),
    )
    (finding,) = check(analysis).findings
    assert finding.cost_usd == pytest.approx(sum(0.01 * (i + 1) for i in range(8)))
    analysis.drifts = analysis.drifts.with_columns(material=pl.lit(False))
    assert check(analysis).findings[0].severity == "info"
    analysis.drifts = analysis.drifts.with_columns(cost_usd=pl.lit(None, pl.Float64))
    assert check(analysis).findings[0].cost_usd is None


def test_allow_and_rules_select(tmp_path):
    path = agent("openai", system=lambda c: [SOUL, f"Current time: 09:{c:02d}:17", POLICY]).write(
        tmp_path / "log.jsonl"
    )
    assert check(path, allow=["dynamic_system"]).findings == []
    assert check(path, rules=["sliding_window"]).findings == []
    with pytest.raises(ValueError, match="unknown rule"):
        check(path, rules=["no_such_rule"])


def test_assert_cache_friendly(tmp_path):
    from cacheviz.testing import assert_cache_friendly

    good = agent("anthropic").write(tmp_path / "good.jsonl")
    assert assert_cache_friendly(good).findings == []
    bad = agent("anthropic", messages=lambda c, h: h[-3:]).write(tmp_path / "bad.jsonl")
    with pytest.raises(AssertionError, match="sliding_window"):
        assert_cache_friendly(bad)
    assert_cache_friendly(bad, allow=["sliding_window"])


def test_every_rule_is_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "check.md").read_text()
    for rule in RULES:
        assert f"`{rule}`" in doc


@pytest.mark.parametrize("api", APIS)
def test_break_below_any_cacheable_prefix_is_only_a_note(tmp_path, api):
    # nothing under 1,024 tokens is cached by any provider: the break cost nothing
    log = agent(api, turns=1, system=lambda c: [f"Short prompt. Time: 09:{c:02d}:17"])
    result = run(tmp_path, log)
    assert {(f.rule, f.severity) for f in result.findings} == {("dynamic_system", "info")}
    assert not result.failed


def test_real_transcripts_check_cleanly(realdata):
    # every real transcript is checked without error; findings use the contract's ids
    paths = [
        p
        for p in sorted(realdata.rglob("*"))
        if p.is_file()
        and p.suffix in (".jsonl", ".json", ".traj", ".history")
        and "task_metadata" not in p.name
        and "ui_messages" not in p.name
        and not p.name.endswith(".meta.json")  # a Claude Code sub-agent's description
    ]
    assert paths
    for path in paths:
        with warnings.catch_warnings():  # sessions stored apart from their sub-agents say so
            warnings.simplefilter("ignore", CacheVizWarning)
            result = check(path)
        for finding in result.findings:
            assert finding.rule in RULES and finding.calls and finding.message
            assert finding.severity in ("error", "warning", "info")


def test_issue_8_causes_map_to_their_rules(tmp_path):
    # the diagnosis names env_details_stripped / params_changed / model_switch itself
    path = agent(
        "anthropic", system=lambda c: [SOUL, f"Current time: 09:{c:02d}:17", POLICY]
    ).write(tmp_path / "log.jsonl")
    analysis = cacheviz.load(path).analyze()
    drifts = analysis.drifts

    def with_cause(cause, part, detail):
        analysis.drifts = drifts.with_columns(
            cause=pl.lit(cause), part=pl.lit(part), detail=pl.lit(detail)
        )
        return {f.rule for f in check(analysis).findings}

    assert with_cause("env_details_stripped", "messages", "user#0") == {"env_details_stripped"}
    assert with_cause("params_changed", "params", "thinking: on → off") == {"thinking_config"}
    assert with_cause("params_changed", "params", "temperature: 0 → 1") == set()
    assert with_cause("model_switch", "messages", "model changed") == set()


def test_ttl_gaps_confirmed_by_reported_usage(tmp_path):
    # Anthropic reports no cache read after each 15-minute pause: TTL misses, not drifts
    log = agent("anthropic", turns=3, gap=lambda turn, step: 900 if turn and step == 0 else 20)
    for i, line in enumerate(log.lines):
        record = json.loads(line)
        cold = i in (0, 3, 6)
        record["response"] = {
            "usage": {
                "input_tokens": 20,
                "cache_read_input_tokens": 0 if cold else 1500,
                "cache_creation_input_tokens": 1600 if cold else 100,
                "output_tokens": 50,
            }
        }
        log.lines[i] = json.dumps(record)
    result = run(tmp_path, log)
    assert rules_of(result) == {"ttl_gaps"}
    finding = result.findings[0]
    assert finding.calls == [3, 6]
    assert "confirms 2 of them as TTL misses" in finding.message
