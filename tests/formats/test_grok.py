"""Grok Build CLI sessions: fixtures in the shape of its ``updates.jsonl`` (ACP updates).

The expected calls and usage are read here from the format's own rules (one call per
``turn_completed``; the turn's ``usage`` per model in ``modelUsage``, ``inputTokens``
the full prompt, cache reads and writes inside it, reasoning inside the output), not from
the reader.
"""

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect
from cacheviz.formats._body import provider_for

SESSION = "019f8870-0000-7000-8000-00000000a001"
PROJECT = "%2Fhome%2Fdev%2Fapp"
MODEL = "grok-4.5-build"  # the name Grok Build keys its turn usage by


def _line(ts: int, update: dict, method: str = "session/update", event: int = 0) -> dict:
    return {
        "timestamp": ts,
        "method": method,
        "params": {
            "sessionId": SESSION,
            "update": update,
            "_meta": {"eventId": f"{SESSION}-{event}"},
        },
    }


def _chunk(kind: str, text: str) -> dict:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def _turn(prompt: str, per_model: dict[str, dict], calls: int, ticks: int | None = None) -> dict:
    totals = {
        k: sum(m.get(k, 0) for m in per_model.values())
        for k in (
            "inputTokens",
            "outputTokens",
            "cachedReadTokens",
            "cacheCreationTokens",
            "reasoningTokens",
        )
    }
    totals["totalTokens"] = totals["inputTokens"] + totals["outputTokens"]
    usage = {**totals, "modelCalls": calls, "numTurns": calls, "modelUsage": per_model}
    if ticks is not None:
        usage["costUsdTicks"] = ticks
    return {
        "sessionUpdate": "turn_completed",
        "prompt_id": prompt,
        "stop_reason": "end_turn",
        "usage": usage,
    }


def updates() -> list[dict]:
    """Two turns: the first runs a tool, the second uses two models."""
    t = 1_790_000_000
    return [
        _line(t, {"sessionUpdate": "available_commands_update", "availableCommands": []}),
        _line(t + 1, _chunk("user_message_chunk", "fix the ")),
        _line(t + 1, _chunk("user_message_chunk", "failing test")),
        _line(t + 2, _chunk("agent_thought_chunk", "Let me look.")),
        _line(t + 3, _chunk("agent_message_chunk", "Reading it.")),
        _line(
            t + 3,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call-1",
                "title": "read_file",
                "kind": "read",
                "rawInput": {"target_file": "test_app.py"},
            },
        ),
        _line(t + 4, {"sessionUpdate": "tool_call_update", "toolCallId": "call-1"}),
        _line(
            t + 4,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call-1",
                "status": "completed",
                "rawOutput": "def test(): assert 1 == 2",
            },
        ),
        _line(t + 5, _chunk("agent_message_chunk", "The assertion is wrong; fixed.")),
        _line(
            t + 6,
            _turn(
                "p-1",
                {
                    MODEL: {
                        "inputTokens": 30_000,
                        "cachedReadTokens": 24_000,
                        "cacheCreationTokens": 0,
                        "outputTokens": 900,
                        "reasoningTokens": 300,
                        "modelCalls": 2,
                    }
                },
                calls=2,
                ticks=1_250_000_000,
            ),
            "_x.ai/session/update",
        ),
        _line(t + 60, _chunk("user_message_chunk", "now run it")),
        _line(t + 61, _chunk("agent_message_chunk", "It passes.")),
        _line(
            t + 62,
            _turn(
                "p-2",
                {
                    MODEL: {
                        "inputTokens": 17_000,
                        "cachedReadTokens": 16_000,
                        "outputTokens": 120,
                        "reasoningTokens": 40,
                        "modelCalls": 1,
                    },
                    "grok-code-fast-1": {"inputTokens": 2_000, "outputTokens": 50, "modelCalls": 1},
                },
                calls=2,
            ),
            "_x.ai/session/update",
        ),
    ]


def grok_session(root: Path, records: list[dict] | None = None) -> Path:
    """A Grok Build session folder under ``root`` (its ``sessions`` folder); the updates file."""
    folder = root / PROJECT / SESSION
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "updates.jsonl"
    lines = records if records is not None else updates()
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    summary = {"info": {"id": SESSION, "cwd": "/home/dev/app"}, "current_model_id": "grok-4.5"}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "chat_history.jsonl").write_text('{"role": "user"}\n')
    return path


def _expected(records: list[dict]) -> tuple[int, dict[str, int]]:
    """Turns, and the sums of the per-model rows, from the format's rules."""
    turns = [
        r["params"]["update"]
        for r in records
        if r["params"]["update"]["sessionUpdate"] == "turn_completed"
    ]
    sums = dict.fromkeys(("input", "read", "write", "output", "reasoning"), 0)
    for turn in turns:
        for row in turn["usage"]["modelUsage"].values():
            sums["input"] += row["inputTokens"]
            sums["read"] += row.get("cachedReadTokens", 0)
            sums["write"] += row.get("cacheCreationTokens", 0)
            sums["output"] += row["outputTokens"]
            sums["reasoning"] += row.get("reasoningTokens", 0)
    return len(turns), sums


def test_detected_and_each_turn_a_call_billed_at_the_sessions_scope(tmp_path):
    path = grok_session(tmp_path)
    assert detect(path) == "grok"
    session = cacheviz.load(path)
    turns, sums = _expected(updates())
    assert len(session.calls) == turns
    assert all(c.usage is None for c in session.calls)  # the log has no per-call usage
    got = session.session_usage
    assert sum(u.usage.input_tokens or 0 for u in got) == sums["input"]
    assert sum(u.usage.cache_read_tokens or 0 for u in got) == sums["read"]
    assert sum(u.usage.output_tokens or 0 for u in got) == sums["output"]
    assert sum(u.usage.reasoning_tokens or 0 for u in got) == sums["reasoning"]
    assert {u.model for u in got} == {MODEL, "grok-code-fast-1"}
    assert all(u.usage.provenance == "reported" for u in got)
    first = session.calls[0]
    assert first.meta["grok_model_calls"] == 2
    assert first.meta["reported_cost_usd"] == pytest.approx(0.125)
    assert "reported_cost_usd" not in session.calls[1].meta  # no ticks logged: no cost
    totals = session.reported_totals
    assert totals is not None and totals.input_tokens == sums["input"]


def test_a_cancelled_turn_is_a_call_without_usage_and_times_come_in_milliseconds(tmp_path):
    cancelled = _line(
        1_790_000_100,
        {"sessionUpdate": "turn_completed", "prompt_id": "p-3", "stop_reason": "cancelled"},
        "_x.ai/session/update",
    )
    cancelled["params"]["_meta"]["agentTimestampMs"] = 1_790_000_100_250
    records = [*updates(), _line(1_790_000_090, _chunk("user_message_chunk", "stop")), cancelled]
    session = cacheviz.load(grok_session(tmp_path, records))
    turns, sums = _expected(updates())
    assert len(session.calls) == turns + 1
    last = session.calls[-1]
    assert last.usage is None and last.meta["stop_reason"] == "cancelled"
    assert last.ts is not None and last.ts.timestamp() == 1_790_000_100.25
    assert sum(u.usage.input_tokens or 0 for u in session.session_usage) == sums["input"]


def test_an_envelope_time_in_milliseconds_is_read_as_such(tmp_path):
    records = updates()
    records[-1]["timestamp"] = 1_790_000_062_500
    session = cacheviz.load(grok_session(tmp_path, records))
    assert session.calls[-1].ts is not None and session.calls[-1].ts.timestamp() == 1_790_000_062.5


def test_other_notifications_in_the_log_are_counted_not_refused(tmp_path):
    other = {"timestamp": 1_790_000_001, "method": "_x.ai/queue/changed", "params": {}}
    records = updates()
    records.insert(2, other)
    session = cacheviz.load(grok_session(tmp_path, records))
    assert session.ignored["_x.ai/queue/changed notification"] == 1
    assert len(session.calls) == _expected(updates())[0]


def test_an_acp_capture_on_the_wire_is_not_taken_for_grok(tmp_path):
    wire = [{"jsonrpc": "2.0", **_line(1, _chunk("agent_message_chunk", "hi"))}]
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in wire))
    assert not cacheviz.formats.READERS["grok"].detect(path, path.read_bytes())


def test_grok_build_models_are_priced_and_billed_at_the_sessions_scope(tmp_path):
    summary = cacheviz.load(grok_session(tmp_path)).analyze().summary()
    assert summary["unpriced_models"] == []
    assert summary["billed_scope"] == "session" and summary["billed_usd"] > 0


def billed_at_xais_prices(records: list[dict]) -> float:
    """Every turn's per-model rows at xAI's list prices (Grok Build's names as their models)."""
    from cacheviz.money.pricing import PriceBook

    book, total = PriceBook(), 0.0
    for record in records:
        update = record["params"]["update"]
        if update["sessionUpdate"] != "turn_completed":
            continue
        at = datetime.fromtimestamp(record["timestamp"], UTC)
        for model, row in update["usage"]["modelUsage"].items():
            listed = model.removesuffix("-build")  # no list price names Grok Build's items
            rates = book.rates("xai", listed, at=at, prompt_tokens=row["inputTokens"])
            assert rates.cache_read is not None and rates.output is not None
            read, write = row.get("cachedReadTokens", 0), row.get("cacheCreationTokens", 0)
            total += (
                (row["inputTokens"] - read - write) * rates.input
                + read * rates.cache_read
                + write * rates.input  # no write fee
                + row["outputTokens"] * rates.output
            )
    return total


def test_grok_calls_are_xais_billed_at_its_prices_and_replayed_under_its_rules(tmp_path):
    session = cacheviz.load(grok_session(tmp_path))
    assert {c.provider for c in session.calls} == {"xai"}
    assert {u.provider for u in session.session_usage} == {"xai"}
    analysis = session.analyze()
    assert analysis.billed_usd == pytest.approx(billed_at_xais_prices(updates()))
    replay = analysis.simulate("xai")
    assert replay.provider == "xai"
    details = replay.calls["detail"].to_list()
    assert details and all(d.startswith("automatic: ") for d in details)  # xAI's rule
    assert replay.calls["cache_write_tokens"].sum() == 0  # no write fee
    assert provider_for("grok-code-fast-1") == provider_for("x-ai/grok-4.5") == "xai"


def test_the_conversation_is_rebuilt_up_to_the_last_answer(tmp_path):
    session = cacheviz.load(grok_session(tmp_path))
    first = session.calls[0]
    roles = [b.label for b in first.blocks if b.part == "messages"]
    # user prompt, assistant (text + tool_use), user (tool_result): the final answer is the reply
    assert roles == ["user#0", "assistant#1", "user#2"]
    prompt = session.contents[first.blocks[1].hash].value
    assert prompt["content"][0]["text"] == "fix the failing test"
    second = session.calls[1]
    assert [b.label for b in second.blocks if b.part == "messages"][-1] == "user#4"


def test_a_scan_of_a_home_with_grok_finds_and_bills_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    grok_session(home / ".grok" / "sessions")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GROK_HOME", raising=False)
    result = cacheviz.scan(cache=False)
    files = result.files
    rows = dict(zip(files["format"].to_list(), files["status"].to_list(), strict=True))
    assert rows == {"grok": "ok"}  # summary.json and chat_history.jsonl are not units
    billed = result.calls["billed_usd"].drop_nulls().sum()
    assert billed > 0


def test_a_sub_agents_session_is_read_without_billing_its_parents_usage_again(tmp_path):
    root = tmp_path / "sessions"
    child = grok_session(root)
    parent = root / PROJECT / "019f8870-0000-7000-8000-00000000p000"
    (parent / "subagents" / SESSION).mkdir(parents=True)
    session = cacheviz.load(child)
    assert session.session_usage == []
    assert session.calls[0].meta["grok_subagent_of"] == parent.name


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ('{"timestamp": 1, "method": "session/update", "params": {"update": 3}}', "sessionUpdate"),
        ("not json", "Grok Build update"),
        (
            '{"timestamp": 1, "method": "_x.ai/session/update", "params": {"sessionId": "s", '
            '"update": {"sessionUpdate": "turn_completed", "usage": {"modelUsage": {"m": '
            '{"inputTokens": -5}}}}}}',
            "inputTokens",
        ),
    ],
)
def test_a_bad_line_is_one_error_naming_its_line(tmp_path, bad, where):
    path = grok_session(tmp_path)
    lines = path.read_text().splitlines()
    lines.insert(3, bad)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path, format="grok")
    message = str(info.value)
    assert "\n" not in message and ":4" in message and where in message
    with pytest.warns(CacheVizWarning, match="line 4"):
        skipped = cacheviz.load(path, format="grok", errors="skip")
    assert len(skipped.calls) == 2


REAL = os.environ.get("CACHEVIZ_GROK_EXAMPLES")


@pytest.mark.skipif(not REAL, reason="CACHEVIZ_GROK_EXAMPLES is not set")
def test_real_public_sessions_match_an_independent_reading():
    files = sorted(Path(REAL or ".").rglob("updates.jsonl"))
    assert files, f"no updates.jsonl under {REAL}"
    for path in files:
        records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        turns = [
            r
            for r in records
            if isinstance(r, dict)
            and r.get("params", {}).get("update", {}).get("sessionUpdate") == "turn_completed"
        ]
        session = cacheviz.load(path, format="grok")
        assert len(session.calls) == len(turns), path


JUNK = st.one_of(
    st.just("{oops"),
    st.just("[1]"),
    st.just("null"),
    st.just(json.dumps(_line(1, {"sessionUpdate": "turn_completed", "usage": "lots"}))),
    st.just(
        json.dumps(
            _line(
                1,
                {
                    "sessionUpdate": "turn_completed",
                    "usage": {"modelUsage": {"m": {"outputTokens": 1.5}}},
                },
            )
        )
    ),
    st.just(
        json.dumps(
            _line(1, {"sessionUpdate": "tool_call_update", "toolCallId": 3, "status": "completed"})
        )
    ),
    st.just(json.dumps({"method": "session/update", "params": {"update": {"sessionUpdate": 1}}})),
    st.text(max_size=20),
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_updates_load_or_fail_in_one_line(tmp_path_factory, data, loads_or_fails_cleanly):
    lines = [json.dumps(r) for r in updates()]
    for _ in range(data.draw(st.integers(1, 3))):
        lines[data.draw(st.integers(0, len(lines) - 1))] = data.draw(JUNK)
    path = grok_session(tmp_path_factory.mktemp("grok"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="grok", errors=e))
