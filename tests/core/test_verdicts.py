"""The provider's own cache verdicts (verdicts.md) and issue 17's new miss causes.

Shapes are the documented ones: Anthropic ``diagnostics.cache_miss_reason`` (top level of
a response, ``message_start.message`` of a stream, ``message`` of a Claude Code line) and
OpenAI Responses ``prompt_cache_diagnostics``. The states stay apart: not requested
(no field), checked (``null``), not found, unavailable, a reason (with the missed
tokens); every comparable verdict is compared with cacheviz's own reading.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

import cacheviz
from cacheviz.formats.native import record_line
from cacheviz.reported._verdict import (
    Evidence,
    compare_verdict,
    openai_verdict_meta,
    response_verdict_meta,
    verdict_meta,
    verdict_state,
)

SONNET = "claude-sonnet-4-5-20250929"


@pytest.mark.parametrize(
    ("diagnostics", "verdict", "missed", "state"),
    [
        (None, None, None, "not_requested"),
        ({}, None, None, "not_requested"),
        ({"cache_miss_reason": None}, "checked", None, "checked"),
        (
            {"cache_miss_reason": {"type": "previous_message_not_found"}},
            "previous_message_not_found",
            None,
            "not_found",
        ),
        ({"cache_miss_reason": {"type": "unavailable"}}, "unavailable", None, "unavailable"),
        *(
            (
                {"cache_miss_reason": {"type": reason, "cache_missed_input_tokens": 4_096}},
                reason,
                4_096,
                "reason",
            )
            for reason in ("model_changed", "system_changed", "tools_changed", "messages_changed")
        ),
    ],
)
def test_anthropic_diagnostics_states(diagnostics, verdict, missed, state):
    meta = verdict_meta(diagnostics)
    assert meta.get("provider_verdict") == verdict
    assert meta.get("provider_missed_tokens") == missed
    assert verdict_state(meta.get("provider_verdict")) == state


@pytest.mark.parametrize(
    ("diagnostics", "verdict", "missed", "state"),
    [
        ({"type": "cache_hit"}, "cache_hit", None, "hit"),
        (
            {"type": "comparison_response_not_found"},
            "comparison_response_not_found",
            None,
            "not_found",
        ),
        ({"type": "unavailable"}, "unavailable", None, "unavailable"),
        (
            {
                "type": "cache_miss",
                "reason": "prompt_cache_key_changed",
                "cache_missed_tokens": 2_048,
                "comparison_reusable_tokens": 1_024,
            },
            "prompt_cache_key_changed",
            2_048,
            "reason",
        ),
        (
            {"type": "cache_miss", "reason": "context_compacted"},
            "context_compacted",
            None,
            "reason",
        ),
    ],
)
def test_openai_prompt_cache_diagnostics_states(diagnostics, verdict, missed, state):
    meta = openai_verdict_meta(diagnostics)
    assert meta.get("provider_verdict") == verdict
    assert meta.get("provider_missed_tokens") == missed
    assert verdict_state(verdict) == state
    assert response_verdict_meta({"prompt_cache_diagnostics": diagnostics}) == meta
    assert response_verdict_meta({"response": {"prompt_cache_diagnostics": diagnostics}}) == meta


def test_a_streamed_message_start_carries_the_verdict():
    event = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "diagnostics": {
                "cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 900}
            },
        },
    }
    assert response_verdict_meta(event) == {
        "provider_verdict": "tools_changed",
        "provider_missed_tokens": 900,
    }


# a Claude Code request rebuilt from its log: a 30k unlogged prefix (tools + system, the
# first 12k the static head other sessions keep warm), then 20k of messages; the thread's
# previous call (3) left 50k in the cache a minute ago, under a 1-hour TTL
_REBUILT = Evidence(
    offered=50_000,
    read=12_000,
    total=52_000,
    source=3,
    source_cached=50_000,
    gap=60.0,
    ttl=3600.0,
    reconstructed=True,
    spans={"tools": [(0, 12_000)], "system": [(0, 30_000)], "messages": [(30_000, 52_000)]},
    head=12_000,
)
# the same request logged byte for byte: tools, system and messages apart
_EXACT = Evidence(
    offered=50_000,
    read=0,
    total=52_000,
    source=3,
    source_cached=50_000,
    gap=60.0,
    ttl=3600.0,
    spans={"tools": [(0, 5_000)], "system": [(5_000, 30_000)], "messages": [(30_000, 52_000)]},
)


def _with(base: Evidence, **changes) -> Evidence:
    import dataclasses

    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize(
    ("verdict", "evidence", "agrees"),
    [
        # model_changed <-> the model differs from the previous request's
        ("model_changed", _with(_EXACT, model_switched=True), True),
        ("model_changed", _EXACT, False),
        # a drift in the part the provider names (the bytes show it)
        ("tools_changed", _with(_EXACT, drift_part="tools", drift_cause="block_added"), True),
        ("system_changed", _with(_EXACT, drift_part="system", drift_cause="volatile_value"), True),
        (
            "messages_changed",
            _with(_EXACT, drift_part="system", drift_cause="volatile_value"),
            False,
        ),
        ("system_changed", _EXACT, False),  # byte-identical in a byte-exact log: news
        # a deferred tool loaded or dropped (ToolSearch tool_reference, deferred_tools_delta)
        ("tools_changed", _with(_EXACT, tools_delta="tool_reference deploy"), True),
        ("system_changed", _with(_REBUILT, read=0, tools_delta="deferred_tools_delta -7"), True),
        # an agent switch the log shows (OpenCode plan -> build): its own prompt and tools
        ("system_changed", _with(_EXACT, agent_switch="plan → build"), True),
        ("tools_changed", _with(_EXACT, agent_switch="plan → build"), True),
        ("messages_changed", _with(_EXACT, agent_switch="plan → build"), False),
        # messages_changed <-> a history edit or a compaction the log announces
        ("messages_changed", _with(_EXACT, rebuild="compaction"), True),
        ("messages_changed", _with(_EXACT, rewritten="thinking_dropped ×1"), True),
        # a rebuilt request: the read places the change; the part named must lie there
        ("messages_changed", _REBUILT, True),  # after the 12k head: system tail or messages
        ("system_changed", _REBUILT, True),
        ("tools_changed", _REBUILT, False),  # the head was read: the tools did not change
        ("tools_changed", _with(_REBUILT, read=0), True),  # not even the head: tools/system
        ("messages_changed", _with(_REBUILT, read=0), False),
        ("system_changed", _with(_REBUILT, read=50_000), False),  # read all it offered
        # previous_message_not_found <-> expiry or eviction, by the idle time and the read
        ("previous_message_not_found", _with(_REBUILT, gap=4_000.0, read=0), True),
        ("previous_message_not_found", _with(_REBUILT, read=48_000), True),  # evicted
        ("previous_message_not_found", _with(_REBUILT, read=50_000), False),
        ("previous_message_not_found", _with(_REBUILT, source=None), False),
        # OpenAI: a parameter reason <-> a params_changed drift of that parameter
        (
            "prompt_cache_key_changed",
            _with(
                _EXACT,
                drift_cause="params_changed",
                drift_detail="cache-keyed request parameters changed (system on): "
                "prompt_cache_key 'a' → 'b'",
            ),
            True,
        ),
        (
            "reasoning_effort_changed",
            _with(_EXACT, drift_cause="params_changed", drift_detail="prompt_cache_key 'a' → 'b'"),
            False,
        ),
        ("cache_hit", _with(_EXACT, read=50_000), True),
        ("cache_hit", _with(_EXACT, missed=True), False),
        # not comparable: not requested, checked, unavailable
        (None, _EXACT, None),
        ("checked", _EXACT, None),
        ("unavailable", _EXACT, None),
    ],
)
def test_agreement_with_cacheviz_own_reading(verdict, evidence, agrees):
    found, detail = compare_verdict(verdict, evidence)
    assert found is agrees
    assert bool(detail) is (agrees is not None)


def _text(n: int) -> str:
    return " ".join(f"word{i % 97}" for i in range(n))


def _anthropic_log(tmp_path, responses, *, provider="anthropic", model=SONNET, gap=10):
    """Three growing calls with one cached system prompt; ``responses[i]`` per call."""
    system = [{"type": "text", "text": _text(3000), "cache_control": {"type": "ephemeral"}}]
    messages: list[dict] = []
    lines = []
    for i, (usage, response) in enumerate(responses):
        messages = [*messages, {"role": "user", "content": f"question {i}: " + _text(300)}]
        body = {"model": model, "max_tokens": 100, "system": system, "messages": messages}
        ts = f"2026-01-01T00:{(i * gap) // 60:02d}:{(i * gap) % 60:02d}Z"
        lines.append(
            record_line(
                body,
                provider=provider,
                model=model,
                api="messages",
                ts=ts,
                usage=usage,
                response=response,
            )
        )
        messages = [*messages, {"role": "assistant", "content": "ok " + _text(50)}]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _usage(total, read, write, out=10):
    return {
        "input_tokens": total - read - write,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": out,
    }


def test_a_native_log_reads_the_response_verdict_and_the_bytes_can_prove_it_wrong(tmp_path):
    diagnosed = {
        "diagnostics": {
            "cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 3_000}
        }
    }
    path = _anthropic_log(
        tmp_path,
        [
            (_usage(3_400, 0, 3_400), {"diagnostics": {"cache_miss_reason": None}}),
            (_usage(3_800, 3_400, 400), {}),
            (_usage(4_200, 0, 4_200), diagnosed),  # the provider read nothing and says why
        ],
    )
    analysis = cacheviz.load(path).analyze()
    calls = analysis.calls
    assert calls["provider_verdict"].to_list() == ["checked", None, "system_changed"]
    assert calls["provider_missed_tokens"].to_list() == [None, None, 3_000]
    miss = analysis.misses.row(0, named=True)
    # the request bodies are logged byte for byte and keep the system prompt: the bytes
    # prove the provider's reason wrong, so cacheviz's own cause stays, the reason beside
    assert miss["call"] == 2 and miss["cause"] == miss["own_cause"] != "system_changed"
    assert miss["provider_verdict"] == "system_changed"
    assert "the provider says system_changed (3,000 tokens missed), but" in miss["detail"]
    assert calls["verdict_agrees"].to_list() == [None, None, False]
    assert "system did not change since call 1" in calls["verdict_detail"][2]
    headline = analysis.summary()["provider_verdicts"]
    assert headline["disagree"] == 1 and headline["compared"] == 1
    assert headline["states"] == {"checked": 1, "not_requested": 1, "reason": 1}


def test_the_cli_shows_the_provider_reason_beside_its_own(tmp_path, capsys):
    from cacheviz import cli

    diagnosed = {
        "diagnostics": {
            "cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 3_000}
        }
    }
    path = _anthropic_log(
        tmp_path,
        [
            (_usage(3_400, 0, 3_400), {}),
            (_usage(3_800, 3_400, 400), {}),
            (_usage(4_200, 0, 4_200), diagnosed),
        ],
    )
    assert cli.main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    # the logged request bodies have the same (no) tools: the bytes prove the reason
    # wrong, so the miss keeps cacheviz's own cause and the disagreement says why
    assert "◌ miss: provider_side" in out
    assert "⚑ provider: tools_changed (cacheviz disagrees: the bytes sent are logged" in out
    assert "provider verdicts: cacheviz agrees on 0 of the 1 compared (0%)" in out
    # 3,400 read of 11,400 input tokens; one call of three read anything
    assert "hit ratio 30% of the reported input, 33% of calls" in out


def test_a_miss_without_caching_rules_is_still_a_miss(tmp_path):
    path = _anthropic_log(
        tmp_path,
        [
            (_usage(3_400, 0, 0), {}),
            (_usage(3_800, 0, 0), {}),  # the whole prefix re-sent, nothing read
            (_usage(4_200, 3_700, 0), {}),
        ],
        provider="openrouter",
        model="some-lab/some-model",
    )
    analysis = cacheviz.load(path).analyze()
    assert analysis.calls["simulated_usd"].is_null().all()  # no rules for this provider
    misses = analysis.misses
    assert misses["call"].to_list() == [1]
    assert misses["cause"].to_list() == ["unknown"]
    assert misses["expected_read_tokens"][0] <= 3_800


def test_a_model_that_never_caches_has_no_expected_read(tmp_path):
    # a free model that reports a cache read and write of 0 on every call does not
    # cache: the line offers nothing to read, so there is no miss (and no "unknown")
    path = _anthropic_log(
        tmp_path,
        [(_usage(3_400, 0, 0), {}), (_usage(3_800, 0, 0), {}), (_usage(4_200, 0, 0), {})],
        provider="openrouter",
        model="some-lab/some-model:free",
    )
    analysis = cacheviz.load(path).analyze()
    assert analysis.misses.is_empty()
    assert analysis.calls["expected_read_tokens"].to_list() == [0, 0, 0]
    assert analysis.calls["prefix_tokens"][2] > 3_000  # the bytes were re-sent all the same


def test_no_caching_is_decided_per_model(tmp_path):
    # the same log with a provider that has rules: one call reads, so the model caches
    # and its all-zero calls are misses; a second model of the session never caches
    cached = _anthropic_log(
        tmp_path,
        [(_usage(3_400, 0, 3_400), {}), (_usage(3_800, 0, 3_800), {}), (_usage(4_200, 0, 0), {})],
    )
    analysis = cacheviz.load(cached).analyze()
    assert analysis.misses["call"].to_list() == [1, 2]
    (tmp_path / "other").mkdir()
    never = _anthropic_log(
        tmp_path / "other",
        [(_usage(3_400, 0, 0), {}), (_usage(3_800, 0, 0), {}), (_usage(4_200, 0, 0), {})],
    )
    assert cacheviz.load(never).analyze().misses.is_empty()


def test_hit_ratio_is_not_reported_as_zero(tmp_path):
    path = _anthropic_log(
        tmp_path,
        [({"input_tokens": 3_400, "output_tokens": 5}, {})] * 2,
    )
    headline = cacheviz.load(path).analyze().summary()["hit_ratio"]
    assert headline == {"tokens": None, "requests": None, "calls": 0}


def _cc_line(kind, uuid, parent, ts, message, **extra):
    return json.dumps(
        {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s1",
            "timestamp": ts,
            "isSidechain": False,
            "message": message,
            **extra,
        }
    )


def _cc_session(tmp_path, reads, *, compaction_after=None):
    """A Claude Code session: call k reports ``reads[k]`` = (input, read, write, 1h?)."""
    lines = []
    parent = None
    for k, (total, read, write, long) in enumerate(reads):
        ts = f"2026-01-01T10:{k:02d}:00Z"
        lines.append(
            _cc_line(
                "user", f"u{k}", parent, ts, {"role": "user", "content": f"step {k} " + _text(400)}
            )
        )
        usage = {
            "input_tokens": total - read - write,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0 if long else write,
                "ephemeral_1h_input_tokens": write if long else 0,
            },
            "output_tokens": 20,
        }
        message = {
            "id": f"msg_{k}",
            "role": "assistant",
            "model": SONNET,
            "content": [{"type": "text", "text": "done " + _text(30)}],
            "usage": usage,
        }
        lines.append(_cc_line("assistant", f"a{k}", f"u{k}", ts.replace(":00Z", ":05Z"), message))
        parent = f"a{k}"
        if compaction_after == k:
            lines.append(
                json.dumps(
                    {
                        "type": "system",
                        "subtype": "compact_boundary",
                        "uuid": "cb",
                        "parentUuid": None,
                        "logicalParentUuid": parent,
                        "sessionId": "s1",
                        "timestamp": ts.replace(":00Z", ":30Z"),
                        "compactMetadata": {"trigger": "auto", "preTokens": total},
                    }
                )
            )
            parent = "cb"
    path = tmp_path / "11111111-2222-3333-4444-555555555555.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_read_stopping_inside_the_unlogged_prefix_names_only_what_it_proves(tmp_path):
    # call 0 reads the 12k static head other sessions warmed and writes the rest;
    # call 2 reads the static head only again, one minute later: something after the head
    # changed (the system prompt's dynamic tail or the messages), nothing says which
    reads = [
        (20_000, 12_000, 8_000, True),
        (20_700, 20_000, 700, True),
        (21_400, 12_000, 9_400, True),
        (22_100, 21_400, 700, True),
    ]
    analysis = cacheviz.load(_cc_session(tmp_path, reads), format="claude-code").analyze()
    calls = analysis.calls
    assert calls["input_tokens"].to_list() == [r[0] for r in reads]  # calibrated
    assert calls["ttl_seconds"].to_list() == [3600] * 4  # every write is a 1-hour write
    misses = analysis.misses
    assert misses["call"].to_list() == [2]
    row = misses.row(0, named=True)
    assert row["cause"] == "unknown"
    assert "the change lies after token 12,000, past the 12,000-token static head" in row["detail"]
    assert "dynamic tail or the messages" in row["detail"]
    assert row["expected_read_tokens"] <= 21_400
    # the simulator replays a new version of the unlogged prefix from call 2
    sim = analysis.own_simulation.calls
    assert sim["cache_read_tokens"].to_list()[:3] == [12_000, 20_000, 12_000]
    billed, simulated = analysis.billed_usd, analysis.own_simulation.total_cost_usd
    assert simulated == pytest.approx(billed, rel=0.05)


def test_a_partial_read_after_a_compaction_is_the_expected_rebuild(tmp_path):
    # the first request after a compact_boundary reads the static head only: a rebuild
    # the log announces, not a miss
    reads = [
        (30_000, 12_000, 18_000, True),
        (30_700, 30_000, 700, True),
        (31_000, 12_000, 19_000, True),  # after the boundary: the summary, head read only
        (31_700, 31_000, 700, True),
    ]
    path = _cc_session(tmp_path, reads, compaction_after=1)
    analysis = cacheviz.load(path, format="claude-code").analyze()
    calls = analysis.calls
    assert calls["rebuild"][2] == "compaction"
    assert calls["expected_read_tokens"][2] > 25_000  # the unlogged prefix, re-sent
    assert calls["own_cause"][2] == "unknown" and calls["miss_cause"][2] is None
    assert analysis.misses.is_empty()


def test_a_compaction_is_an_expected_rebuild_not_a_drift(tmp_path):
    reads = [
        (20_000, 12_000, 8_000, False),
        (20_700, 20_000, 700, False),
        (14_000, 12_000, 2_000, False),  # after the boundary: the summary, not the history
        (14_700, 14_000, 700, False),
    ]
    path = _cc_session(tmp_path, reads, compaction_after=1)
    analysis = cacheviz.load(path, format="claude-code").analyze()
    calls = analysis.calls
    assert calls["rebuild"].to_list() == [None, None, "compaction", None]
    assert analysis.drifts.is_empty()
    assert analysis.misses.is_empty()
    # the rebuilt request holds the summary's messages only, not the history
    assert calls["local_tokens"][2] < calls["local_tokens"][1]
    assert calls["ttl_seconds"].to_list() == [300] * 4
    assert (calls["input_tokens"] == pl.Series(r[0] for r in reads)).all()


def test_a_mid_conversation_system_message_keeps_the_cached_prefix(tmp_path):
    # providers.md §1.2: on Opus 5 (and Fable 5, Mythos 5, Opus 4.8) a {"role": "system"}
    # message added mid-conversation does not invalidate the cache: not a drift, and the
    # simulator reads the whole previous request
    def marked(text):
        return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]

    system = [{"type": "text", "text": _text(2000)}]
    task = {"role": "user", "content": marked("task: " + _text(800))}
    first = [task]
    second = [
        {"role": "user", "content": [{"type": "text", "text": "task: " + _text(800)}]},
        {"role": "assistant", "content": "working " + _text(40)},
        {"role": "system", "content": "Reminder: the build is green."},
        {"role": "user", "content": marked("go on")},
    ]
    lines = [
        record_line(
            {"model": "claude-opus-5", "max_tokens": 10, "system": system, "messages": m},
            provider="anthropic",
            model="claude-opus-5",
            api="messages",
            ts=f"2026-01-01T00:00:0{i}Z",
        )
        for i, m in enumerate([first, second])
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    analysis = cacheviz.load(path).analyze()
    assert analysis.drifts.is_empty()
    calls = analysis.calls
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]
    sim = analysis.simulate("anthropic").calls
    assert sim["cache_read_tokens"].to_list() == [0, calls["input_tokens"][0]]


def _cc_gaps(tmp_path, minutes, *, long):
    """A Claude Code session whose calls are ``minutes`` apart, every write 1h or 5m."""
    session = _cc_session(
        tmp_path,
        [
            (20_000 + 700 * k, 0 if k == 0 else 20_000 + 700 * (k - 1), 700 if k else 20_000, long)
            for k in range(4)
        ],
    )
    lines = session.read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        record = json.loads(line)
        k = int(record["uuid"][1:])
        stamp = 10 * 60 + k * minutes + (5 / 60 if record["type"] == "assistant" else 0)
        record["timestamp"] = (
            f"2026-01-01T{int(stamp // 60):02d}:{int(stamp % 60):02d}:{round(stamp % 1 * 60):02d}Z"
        )
        out.append(json.dumps(record))
    session.write_text("\n".join(out) + "\n", encoding="utf-8")
    return cacheviz.load(session, format="claude-code").analyze()


def test_check_never_recommends_the_ttl_the_thread_already_uses(tmp_path):
    from cacheviz.check import check

    # 1-hour writes, 29-minute gaps: within the TTL the session uses, no finding at all
    calm = _cc_gaps(tmp_path, 29, long=True)
    assert calm.calls["ttl_seconds"].to_list() == [3600] * 4
    assert not [f for f in check(calm).findings if f.rule == "ttl_gaps"]
    # the same gaps with 5-minute writes are TTL gaps, and the 1h advice is given
    short = (
        _cc_gaps(tmp_path / "short", 29, long=False)
        if (tmp_path / "short").mkdir() is None
        else None
    )
    found = [f for f in check(short).findings if f.rule == "ttl_gaps"]
    assert found and "ttl '1h'" in found[0].message
    # gaps beyond the hour with 1-hour writes: beyond every TTL Anthropic offers, a pause
    # (an info note, exit 0), and no advice to use 1 hour
    (tmp_path / "long").mkdir()
    late = _cc_gaps(tmp_path / "long", 70, long=True)
    found = [f for f in check(late).findings if f.rule == "ttl_gaps"]
    # (issue 33: a pause beyond every TTL the provider offers is an info note)
    assert found and found[0].severity == "info"
    assert "no TTL outlasts it" in found[0].message
    assert "With cache_control ttl" not in found[0].message


def test_tools_loaded_by_tool_search_keep_the_cached_prefix(tmp_path):
    # providers.md §1.2: with tool search, deferred tools (`defer_loading`) stay in the
    # tools list as sent and the tools a search finds arrive as `tool_reference` blocks in
    # the messages, so the prefix is kept: not a drift, and the simulator reads it
    def marked(text):
        return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]

    tools = [
        {"name": "tool_search", "description": _text(300), "input_schema": {"type": "object"}},
        {
            "name": "deploy",
            "description": _text(300),
            "input_schema": {"type": "object"},
            "defer_loading": True,
        },
    ]
    system = [{"type": "text", "text": _text(2000)}]
    task = {"role": "user", "content": [{"type": "text", "text": "task: " + _text(800)}]}
    search = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "tool_search", "input": {"q": "deploy"}}
        ],
    }
    found = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [{"type": "tool_reference", "tool_name": "deploy"}],
            },
            *marked("now deploy"),
        ],
    }
    bodies = [
        [{**task, "content": marked("task: " + _text(800))}],
        [task, search, found],
    ]
    lines = [
        record_line(
            {
                "model": "claude-opus-5",
                "max_tokens": 10,
                "tools": tools,
                "system": system,
                "messages": m,
            },
            provider="anthropic",
            model="claude-opus-5",
            api="messages",
            ts=f"2026-01-01T00:00:0{i}Z",
        )
        for i, m in enumerate(bodies)
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    analysis = cacheviz.load(path).analyze()
    assert analysis.drifts.is_empty()
    calls = analysis.calls
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]
    sim = analysis.simulate("anthropic").calls
    assert sim["cache_read_tokens"].to_list() == [0, calls["input_tokens"][0]]


def _responses_capture(tmp_path, *, stream: bool):
    """An HTTP capture of three OpenAI Responses calls; the third changes its tools."""
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    lines = []
    text = " ".join(f"token{i}" for i in range(3_000))
    for k in range(3):
        body = {
            "model": "gpt-5.6",
            "instructions": "You are terse. " + text,
            "tools": tools if k < 2 else [*tools, {**tools[0], "name": "fetch"}],
            "input": [
                {"role": "user", "content": f"turn {j} " + text[:2_000]} for j in range(k + 1)
            ],
            "prompt_cache_options": {"comparison_response_id": f"resp_{k - 1}"},
        }
        total = 5_000 + 800 * k
        cached = 0 if k != 1 else 4_864
        usage = {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": 10,
        }
        diagnostics = (
            {"type": "cache_miss", "reason": "tools_changed", "cache_missed_tokens": 5_600}
            if k == 2
            else {"type": "cache_hit"}
            if k == 1
            else {"type": "comparison_response_not_found"}
        )
        response = {"id": f"resp_{k}", "object": "response", "model": "gpt-5.6", "usage": usage}
        response["prompt_cache_diagnostics"] = diagnostics
        if stream:
            events = [
                {"type": "response.created", "response": {"id": f"resp_{k}"}},
                {"type": "response.completed", "response": response},
            ]
            answer = {"status_code": 200, "body": None}
            answer["body_raw"] = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
        else:
            answer = {"status_code": 200, "body": response}
        ts = f"2026-11-02T10:00:{10 * k:02d}Z"
        request = {"url": "https://api.openai.com/v1/responses", "timestamp": ts, "body": body}
        lines.append(json.dumps({"request": request, "response": answer}))
    path = tmp_path / f"capture{'-sse' if stream else ''}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("stream", [False, True])
def test_openai_prompt_cache_diagnostics_in_a_capture_are_compared(tmp_path, stream):
    # OpenAI's verdict is read like Anthropic's: from the body, or the completed stream
    analysis = cacheviz.load(_responses_capture(tmp_path, stream=stream)).analyze()
    calls = analysis.calls
    assert calls["provider_verdict"].to_list() == [
        "comparison_response_not_found",
        "cache_hit",
        "tools_changed",
    ]
    assert calls["provider_missed_tokens"][2] == 5_600
    # the bytes show the tools changed: cacheviz agrees on the reason
    assert calls["verdict_agrees"][2] is True
    assert calls["verdict_agrees"][1] is not None
    counts = analysis.summary()["provider_verdicts"]
    assert counts["compared"] == counts["comparable"]
