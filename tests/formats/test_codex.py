import json
import warnings
from datetime import UTC, datetime

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cacheviz.analysis import analyze
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import claude_code, claude_trace, codex, gemini_cli, native

MODEL = "gpt-5-codex"
ROLLOUT = (
    "codex_rollout/0h-n0__local-voice-assistant-codex__"
    "rollout-2025-12-26T01-48-36-019b5669-8da8-7bc3-bed8-e1c1b805dad5.jsonl"
)
AGENTS = "# AGENTS.md instructions\nRun the tests before answering."


def _rec(second, kind, payload):
    return {"timestamp": f"2026-01-01T10:00:{second:02d}.000Z", "type": kind, "payload": payload}


def _item(second, **payload):
    return _rec(second, "response_item", payload)


def _user(second, text):
    return _item(
        second, type="message", role="user", content=[{"type": "input_text", "text": text}]
    )


def _tokens(second, total_input, last_input, cached, out, reasoning=0):
    usage = {
        "input_tokens": last_input,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": reasoning,
        "total_tokens": last_input + out,
    }
    info = {
        "total_token_usage": {**usage, "input_tokens": total_input},
        "last_token_usage": usage,
        "model_context_window": 272000,
    }
    return _rec(second, "event_msg", {"type": "token_count", "info": info, "rate_limits": {}})


def _records(meta_instructions=AGENTS):
    meta = {"id": "s1", "cwd": "/repo", "cli_version": "0.77.0", "instructions": meta_instructions}
    call = {"type": "function_call", "name": "shell", "arguments": '{"command":"ls"}'}
    return [
        _rec(0, "session_meta", {**meta, "base_instructions": {"text": "You are Codex."}}),
        _user(0, AGENTS),
        _user(1, "list the files"),
        _rec(1, "event_msg", {"type": "user_message", "message": "list the files"}),
        _rec(2, "turn_context", {"cwd": "/repo", "model": MODEL}),
        _item(2, type="ghost_snapshot", ghost_commit={"id": "abc"}),
        _rec(3, "event_msg", {"type": "token_count", "info": None, "rate_limits": {}}),
        _item(5, type="reasoning", summary=[], content=None, encrypted_content="gAAA"),
        _item(6, **call, call_id="call_1"),
        _tokens(6, 5000, 5000, 4096, 80, reasoning=64),
        _item(7, type="function_call_output", call_id="call_1", output="a.py b.py"),
        _rec(7, "turn_context", {"cwd": "/repo", "model": MODEL}),
        _tokens(8, 5000, 5000, 4096, 80, reasoning=64),  # the same report again
        _item(9, type="message", role="assistant", content=[{"type": "output_text", "text": "2"}]),
        _tokens(9, 10120, 5120, 4992, 4),
        # the next turn: a response cut off by the user, then a fresh one
        _user(20, "and the tests?"),
        _rec(21, "turn_context", {"cwd": "/repo", "model": "gpt-5.1-codex-max"}),
        _item(23, type="reasoning", summary=[], content=None, encrypted_content="gBBB"),
        _rec(24, "event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        _user(30, "go on"),
        _item(
            33, type="message", role="assistant", content=[{"type": "output_text", "text": "ok"}]
        ),
        _tokens(33, 15300, 5180, 0, 9),
        {"timestamp": "2026-01-01T10:00:34.000Z", "type": "future_record", "payload": {}},
    ]


def _write(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


@pytest.fixture
def rollout(tmp_path):
    return _write(tmp_path / "rollout-2026-01-01T10-00-00-s1.jsonl", _records())


def _ts(second):
    return datetime(2026, 1, 1, 10, 0, second, tzinfo=UTC)


def test_one_call_per_token_count_with_usage_normalized(rollout):
    session = codex.read(rollout)
    assert session.format == "codex"
    assert [c.line for c in session.calls] == [10, 15, 22]
    first, _, third = session.calls
    assert (first.provider, first.api, first.model) == ("openai", "responses", MODEL)
    assert third.model == "gpt-5.1-codex-max"
    # input includes cached; reasoning is part of the output
    assert first.usage.input_tokens == 5000
    assert first.usage.cache_read_tokens == 4096
    assert first.usage.output_tokens == 80
    assert first.usage.cache_write_tokens is None
    assert first.usage.provenance == "reported"
    assert third.usage.cache_read_tokens == 0  # reported 0 stays 0
    assert session.ignored == {
        "user_message event": 1,
        "ghost_snapshot item (not sent to the model)": 1,
        "token_count event without usage (info: null)": 1,
        "repeated token_count event": 1,
        "turn_aborted event": 1,
        "response without token_count (interrupted)": 1,
        "future_record record": 1,
    }


def test_requests_are_rebuilt_from_the_items_logged_before_the_response(rollout):
    first, second, third = codex.read(rollout).calls
    assert all(c.reconstructed for c in (first, second, third))
    assert first.blocks[0].label == "unlogged prefix"
    assert first.message_start == 1
    # the base instructions lead; AGENTS.md is already the first user message: not added
    assert [b.label for b in first.blocks] == ["unlogged prefix", "system#0", "user#1", "user#2"]
    assert [b.label for b in second.blocks][4:] == [
        "reasoning#3",
        "function_call#4",
        "function_call_output#5",
    ]
    # the cut-off response is sent again with the next request
    assert [b.label for b in third.blocks][8:] == ["user#7", "reasoning#8", "user#9"]
    assert second.hashes[: len(first.hashes)] == first.hashes
    assert third.hashes[: len(second.hashes)] == second.hashes


def test_request_time_is_the_last_record_before_the_response(rollout):
    first, second, third = codex.read(rollout).calls
    # event_msg times (rate limits, usage) come back after the request went out
    assert [first.ts, second.ts, third.ts] == [_ts(2), _ts(7), _ts(30)]


def test_user_instructions_not_logged_as_a_message_are_added(tmp_path):
    records = _records(meta_instructions="Answer in French.")
    session = codex.read(_write(tmp_path / "r.jsonl", records))
    first = session.calls[0]
    assert [b.label for b in first.blocks][:3] == ["unlogged prefix", "system#0", "user#1"]
    assert session.contents[first.blocks[2].hash].value["content"][0]["text"] == (
        "Answer in French."
    )


def test_compaction_replaces_the_history(rollout):
    records = _records()
    summary = _user(40, "Summary: listed files.")["payload"]
    records += [
        _rec(40, "compacted", {"message": "", "replacement_history": [summary]}),
        _user(41, "next"),
        _item(42, type="message", role="assistant", content=[{"type": "output_text", "text": "k"}]),
        _tokens(42, 15400, 100, 0, 1),
    ]
    last = codex.read(_write(rollout, records)).calls[-1]
    assert [b.label for b in last.blocks] == ["unlogged prefix", "system#0", "user#1", "user#2"]
    analysis = analyze(codex.read(rollout))
    assert analysis.calls["drift_cause"][-1] == "history_replaced"


def test_analysis_sizes_the_unlogged_prefix_from_the_first_report(rollout):
    calls = analyze(codex.read(rollout)).calls
    assert calls.height == 3
    assert calls["input_tokens"][0] == 5000
    assert calls["unlogged_tokens"].n_unique() == 1
    assert calls["reported_input_tokens"].to_list() == [5000, 5120, 5180]
    assert calls["reported_cache_read_tokens"].to_list() == [4096, 4992, 0]
    assert calls["reported_output_tokens"].to_list() == [80, 4, 9]
    assert calls["thread"].unique().to_list() == ["main"]
    assert calls["drift"].to_list() == [False, False, True]  # the model changed
    assert calls.filter(pl.col("drift"))["drift_cause"].to_list() == ["model_switch"]


def test_detect(rollout, tmp_path):
    head = rollout.read_bytes()
    assert codex.detect(rollout, head)
    for module in (native, claude_trace, claude_code, gemini_cli):
        assert not module.detect(rollout, head)
    claude = {"type": "user", "uuid": "u", "sessionId": "s", "message": {"content": "x"}}
    for other in (
        {"ts": "2026-01-01T00:00:00Z", "model": "m", "request": {"messages": []}},
        claude,
        {"sessionId": "s", "projectHash": "p", "startTime": "2026-01-01T00:00:00Z"},
    ):
        assert not codex.detect(tmp_path / "x.jsonl", json.dumps(other).encode())
    assert not codex.detect(tmp_path / "x.jsonl", b"\xff\xfe not json")


def test_detect_says_no_to_the_other_real_formats(realdata):
    for path in (p for p in realdata.rglob("*") if p.is_file()):
        if "codex_rollout" not in path.parts:
            assert not codex.detect(path, path.read_bytes()[: 1 << 20]), path.name


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ([1, 2], "the line is an array; expected a Codex rollout record object"),
        ({"type": 3, "payload": {}}, "field `type` is a number; expected one of session_meta"),
        ({"type": "event_msg", "payload": "x"}, "field `payload` is a string; expected an object"),
        (
            {"type": "response_item", "timestamp": "yesterday", "payload": {"type": "message"}},
            "field `timestamp` 'yesterday' is not ISO-8601",
        ),
        (
            {"type": "response_item", "payload": {"type": "message", "content": []}},
            "field `payload.role` is null; expected a string",
        ),
        ({"type": "response_item", "payload": {}}, "field `payload.type` is null"),
        (
            {"type": "event_msg", "payload": {"type": "token_count", "info": []}},
            "field `payload.info` is an array; expected an object or null",
        ),
        (
            {"type": "event_msg", "payload": {"type": "token_count", "info": {}}},
            "field `payload.info.last_token_usage` is null",
        ),
        (
            {
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {"last_token_usage": {"input_tokens": "5"}},
                },
            },
            "field `payload.info.last_token_usage.input_tokens` is a string; expected a whole",
        ),
        (  # the value, not "is a number; expected a whole number"
            {
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {"last_token_usage": {"input_tokens": 1.5}},
                },
            },
            "field `payload.info.last_token_usage.input_tokens` is 1.5; expected a whole number",
        ),
        (
            {
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {"last_token_usage": {"output_tokens": 10**30}},
                },
            },
            "is 1000000000000000000000000000000; expected a token count from 0 to 10,000,000",
        ),
        (
            {
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [{"type": [1]}]},
            },
            "field `payload.content[0].type` is an array; expected a string",
        ),
        (  # chat-style tool calls are rendered as a list: anything else crashed the analysis
            {
                "type": "response_item",
                "payload": {"type": "message", "role": "user", "content": [], "tool_calls": 5},
            },
            "field `payload.tool_calls` is a number; expected a list or null",
        ),
        (
            {"type": "turn_context", "payload": {"model": 5}},
            "field `payload.model` is a number; expected a string",
        ),
        (
            {"type": "compacted", "payload": {"replacement_history": [7]}},
            "field `payload.replacement_history[0]` is a number",
        ),
    ],
)
def test_bad_records_fail_in_one_line(rollout, record, expected):
    with rollout.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    line = len(rollout.read_text().splitlines())
    with pytest.raises(TranscriptError, match=rf":{line}: ") as info:
        codex.read(rollout)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        session = codex.read(rollout, errors="skip")
    assert [s.line for s in session.skipped] == [line]
    assert len(session.calls) == 3


def test_invalid_utf8_and_truncated_lines(rollout):
    lines = rollout.read_bytes().splitlines()
    rollout.write_bytes(b"\n".join([*lines, b'{"type": "event_msg", "pay', b"\xff\xfe"]) + b"\n")
    with pytest.raises(TranscriptError, match=r":24: .*expected one Codex rollout record"):
        codex.read(rollout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        session = codex.read(rollout, errors="skip")
    assert [s.line for s in session.skipped] == [24, 25]
    assert "not valid UTF-8" in session.skipped[1].reason


def test_a_rollout_without_usage_is_an_error(tmp_path):
    path = _write(tmp_path / "r.jsonl", _records()[:8])
    with pytest.raises(TranscriptError, match="no API call could be read"):
        codex.read(path)


def test_out_of_order_times_keep_the_order_written_and_are_named(tmp_path):
    """Issue 29 item 12: a record's clock never reorders the session silently."""
    records = _records()
    records[11] = _rec(59, "turn_context", {"cwd": "/repo", "model": MODEL})
    with pytest.warns(CacheVizWarning, match=r"\(line 15 is 29 s ahead\); kept in the order"):
        session = codex.read(_write(tmp_path / "r.jsonl", records))
    assert [c.line for c in session.calls] == [10, 15, 22]
    assert [c.index for c in session.calls] == [0, 1, 2]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_rollouts_load_or_fail_in_one_line(rollout, data, loads_or_fails_cleanly):
    lines = rollout.read_text().splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    mutated = data.draw(
        st.one_of(
            st.integers(0, len(lines[i])).map(lambda n: lines[i][:n]),
            st.just(lines[i].replace('"payload"', '"payloa"')),
            st.just(lines[i].replace('"info": {', '"info": 7, "x": {')),
            st.just(lines[i].replace('"type": "', '"type": 1, "t": "')),
            st.just(lines[i].replace('"role"', '"role": [], "r"')),
            st.just(lines[i].replace('"content": [', '"content": "x", "c": [')),
            st.just(lines[i].replace("2026-01-01T10", "1999-12-31T23")),
            st.text(max_size=30),
        )
    )
    path = rollout.with_name("fuzz.jsonl")
    path.write_text("\n".join([*lines[:i], mutated, *lines[i + 1 :]]) + "\n")
    loads_or_fails_cleanly(path, lambda p, e: codex.read(p, errors=e))


def _expected(path):
    """Calls and usage sums straight from the raw rollout: one per new token_count info."""
    infos, previous = [], None
    for line in path.read_text().splitlines():
        record = json.loads(line)
        payload = record["payload"]
        if record["type"] == "event_msg" and payload["type"] == "token_count":
            info = payload["info"]
            if info is not None and info != previous:
                infos.append(info["last_token_usage"])
            previous = info if info is not None else previous
    keys = ("input_tokens", "cached_input_tokens", "output_tokens")
    return len(infos), {k: sum(u[k] for u in infos) for k in keys}


def test_real_rollout(realdata):
    path = realdata / ROLLOUT
    assert codex.detect(path, path.read_bytes()[: 1 << 20])
    count, sums = _expected(path)
    session = codex.read(path)
    assert len(session.calls) == count == 5
    assert sums == {"input_tokens": 72638, "cached_input_tokens": 40448, "output_tokens": 2193}
    assert {c.model for c in session.calls} == {"gpt-5.1-codex-max"}
    assert all(c.reconstructed and c.blocks[0].label == "unlogged prefix" for c in session.calls)
    assert session.ignored["repeated token_count event"] == 4
    frame = analyze(session).calls
    assert frame.height == count
    assert frame["reported_input_tokens"].sum() == sums["input_tokens"]
    assert frame["reported_cache_read_tokens"].sum() == sums["cached_input_tokens"]
    assert frame["reported_output_tokens"].sum() == sums["output_tokens"]
    # a pure append-only tool loop: each request extends the one before
    assert not frame["drift"].any()
    assert frame["prefix_tokens"].to_list()[1:] == frame["input_tokens"].to_list()[:-1]
