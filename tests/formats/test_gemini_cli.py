import json
import warnings
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cacheviz.analysis import analyze
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import claude_code, claude_trace, codex, gemini_cli, native

PRO = "gemini-2.5-pro"
FLASH = "gemini-2.5-flash"
SESSION = (
    "gemini_cli/wingorithm__Vibe-Coding-Comparison-Project__session-2026-04-25T08-23-e435870b.jsonl"
)


def _t(second):
    return f"2026-01-01T10:00:{second:02d}.000Z"


def _ts(second):
    return datetime(2026, 1, 1, 10, 0, second, tzinfo=UTC)


def _msg(record_id, second, kind, content, **extra):
    return {"id": record_id, "timestamp": _t(second), "type": kind, "content": content, **extra}


def _tokens(prompt, cached, out, thoughts):
    total = prompt + out + thoughts
    return {
        "input": prompt,
        "output": out,
        "cached": cached,
        "thoughts": thoughts,
        "tool": 0,
        "total": total,
    }


def _gemini(record_id, second, content, tokens, model, **extra):
    thoughts = [{"subject": "Plan", "description": "List first.", "timestamp": _t(second - 1)}]
    return _msg(
        record_id, second, "gemini", content, thoughts=thoughts, tokens=tokens, model=model, **extra
    )


LS = {
    "id": "c1",
    "name": "run_shell_command",
    "args": {"command": "ls"},
    "result": [
        {
            "functionResponse": {
                "id": "c1",
                "name": "run_shell_command",
                "response": {"output": "a.py b.py"},
            }
        }
    ],
    "status": "success",
    "timestamp": _t(8),
    "resultDisplay": "a.py b.py",
}


def _records():
    first = _gemini("g1", 5, "", _tokens(9000, 0, 10, 100), PRO)
    return [
        {"sessionId": "s1", "projectHash": "p1", "startTime": _t(0), "lastUpdated": _t(0)},
        _msg("i1", 1, "info", "MCP issues detected."),
        {"$set": {"lastUpdated": _t(1)}},
        _msg("u1", 2, "user", [{"text": "list the files"}]),
        first,
        {"$set": {"lastUpdated": _t(5)}},
        {**first, "tokens": _tokens(9000, 0, 20, 100), "toolCalls": [LS]},  # the same, updated
        _gemini("g2", 10, "Two files.", _tokens(9100, 8000, 5, 20), FLASH),
        _msg("u2", 20, "user", "delete them"),
        _gemini("g3", 22, "Deleting.", _tokens(9150, 8960, 3, 0), FLASH),
        {"$rewindTo": "u2"},
        _msg("u3", 30, "user", [{"text": "never mind, count them"}]),
        _gemini("g4", 33, "2", _tokens(9200, 8960, 1, 0), PRO),
        _msg("i2", 34, "info", "Request cancelled."),
    ]


def _write(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


@pytest.fixture
def session_file(tmp_path):
    return _write(tmp_path / "session-2026-01-01T10-00-s1.jsonl", _records())


def test_one_call_per_gemini_message_with_its_last_usage(session_file):
    session = gemini_cli.read(session_file)
    assert session.format == "gemini-cli"
    assert [c.line for c in session.calls] == [5, 8, 10, 13]
    assert [c.model for c in session.calls] == [PRO, FLASH, FLASH, PRO]
    first, second, _, _ = session.calls
    assert (first.provider, first.api) == ("google", "messages")
    # input includes cached; thoughts are output; the last copy of g1 wins
    assert first.usage.input_tokens == 9000
    assert first.usage.cache_read_tokens == 0
    assert first.usage.output_tokens == 120
    assert second.usage.input_tokens == 9100
    assert second.usage.cache_read_tokens == 8000
    assert second.usage.output_tokens == 25
    assert session.ignored == {
        "session header": 1,
        "info message": 2,
        "metadata update": 2,
        "repeated gemini message": 1,
        "rewind record": 1,
    }


def test_requests_are_rebuilt_with_tool_turns_and_rewinds(session_file):
    session = gemini_cli.read(session_file)
    g1, _, g3, g4 = session.calls
    assert all(c.reconstructed and c.blocks[0].label == "unlogged prefix" for c in session.calls)
    assert [b.label for b in g1.blocks] == ["unlogged prefix", "user#0"]
    assert [b.label for b in g3.blocks] == [
        "unlogged prefix",
        "user#0",
        "model#1",
        "user#2",
        "model#3",
        "user#4",
    ]
    # u2 and g3 were rewound: g4 is sent u3 in their place
    assert [b.label for b in g4.blocks][4:] == ["model#3", "user#4"]
    assert g4.hashes[1:5] == g3.hashes[1:5]
    assert g4.hashes[5] != g3.hashes[5]
    model, results = (session.contents[h].value for h in g4.hashes[2:4])
    assert model == {
        "role": "model",
        "content": [
            {
                "type": "function_call",
                "id": "c1",
                "name": "run_shell_command",
                "arguments": '{"command":"ls"}',
            }
        ],
    }
    assert results["content"] == [
        {
            "type": "function_call_output",
            "id": "c1",
            "name": "run_shell_command",
            "output": "a.py b.py",
        }
    ]
    assert session.contents[g4.hashes[5]].value == {
        "role": "user",
        "content": [{"type": "text", "text": "never mind, count them"}],
    }


def test_each_model_is_a_thread_with_its_own_unlogged_prefix(session_file):
    session = gemini_cli.read(session_file)
    g1, g2, g3, g4 = session.calls
    assert [c.thread_hint for c in session.calls] == [PRO, FLASH, FLASH, PRO]
    assert g1.hashes[0] == g4.hashes[0] != g2.hashes[0] == g3.hashes[0]
    calls = analyze(session).calls
    assert calls.height == 4
    assert calls["thread"].to_list() == [PRO, FLASH, FLASH, PRO]
    assert not calls["drift"].any()
    assert calls["prev_call"].to_list() == [None, None, 1, 0]
    assert calls["input_tokens"].to_list()[:2] == [9000, 9100]  # sized from each first report
    assert calls["reported_input_tokens"].to_list() == [9000, 9100, 9150, 9200]
    assert calls["reported_cache_read_tokens"].to_list() == [0, 8000, 8960, 8960]
    assert calls["reported_output_tokens"].to_list() == [120, 25, 3, 1]


def test_request_time_is_the_end_of_the_message_before(session_file):
    session = gemini_cli.read(session_file)
    # g2 follows g1's tool call, which finished at 10:00:08
    assert [c.ts for c in session.calls] == [_ts(2), _ts(8), _ts(20), _ts(30)]


def _synced(output):
    call = {"functionCall": {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}}}
    response = {"id": "c1", "name": "run_shell_command", "response": {"output": output}}
    return [
        _msg("u1", 2, "user", [{"text": "list the files"}]),
        {**_msg("g1", 5, "gemini", [call]), "toolCalls": [LS], "model": PRO},
        _msg("r1", 8, "user", [{"functionResponse": response}]),
        _msg("g2", 10, "gemini", [{"text": "Two files."}]),
        _msg("u3", 30, "user", [{"text": "never mind, count them"}]),
        _msg("g4", 33, "gemini", [{"text": "2"}]),
    ]


@pytest.mark.parametrize(("output", "drift"), [("a.py b.py", False), ("[masked: 9 bytes]", True)])
def test_a_history_sync_replaces_the_conversation(session_file, output, drift):
    records = [
        *_records(),
        {"$set": {"messages": _synced(output), "lastUpdated": _t(40)}},
        _msg("u5", 41, "user", "thanks"),
        _gemini("g5", 42, "You're welcome.", _tokens(9300, 9000, 4, 0), PRO),
    ]
    session = gemini_cli.read(_write(session_file, records))
    assert session.ignored["history sync"] == 1
    calls = analyze(session).calls
    assert calls["drift"].to_list() == [False, False, False, False, drift]
    if drift:
        assert calls["drift_cause"][-1] == "content_edited"


def test_a_gemini_message_without_a_model_is_not_a_call(session_file):
    records = [*_records(), _msg("sum", 40, "gemini", "A summary.")]
    session = gemini_cli.read(_write(session_file, records))
    assert len(session.calls) == 4
    assert session.ignored["gemini message without a model (not an API call)"] == 1


def test_detect(session_file, tmp_path):
    head = session_file.read_bytes()
    assert gemini_cli.detect(session_file, head)
    for module in (native, claude_trace, claude_code, codex):
        assert not module.detect(session_file, head)
    others = [
        {"ts": "2026-01-01T00:00:00Z", "model": "m", "request": {"messages": []}},
        {"type": "user", "uuid": "u", "sessionId": "s", "message": {"content": "x"}},
        {"timestamp": _t(0), "type": "session_meta", "payload": {"id": "s"}},
    ]
    for other in others:
        assert not gemini_cli.detect(tmp_path / "x.jsonl", json.dumps(other).encode())
    assert not gemini_cli.detect(tmp_path / "x.jsonl", b"\xff\xfe not json")
    assert not gemini_cli.detect(tmp_path / "x.json", b'{\n  "sessionId": "s",\n')


def test_detect_says_no_to_the_other_real_formats(realdata):
    for path in (p for p in realdata.rglob("*") if p.is_file()):
        if "gemini_cli" not in path.parts:
            assert not gemini_cli.detect(path, path.read_bytes()[: 1 << 20]), path.name


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ([1, 2], "the line is an array; expected a Gemini CLI record object"),
        ({"id": 5, "type": "user"}, "field `id` is a number; expected a string"),
        ({"id": "x", "type": None}, "field `type` is null; expected a string"),
        (
            {"id": "x", "type": "user", "timestamp": 5},
            "field `timestamp` is a number; expected an ISO-8601 string or null",
        ),
        (
            {"id": "x", "type": "gemini", "model": 3},
            "field `model` is a number; expected the model name",
        ),
        (
            {"id": "x", "type": "gemini", "model": "m", "tokens": {"input": "9"}},
            "field `tokens.input` is a string; expected a whole number",
        ),
        (  # the value, not "is a number; expected a whole number"
            {"id": "x", "type": "gemini", "model": "m", "tokens": {"input": 1.5}},
            "field `tokens.input` is 1.5; expected a whole number",
        ),
        (
            {"id": "x", "type": "gemini", "model": "m", "tokens": {"cached": -1}},
            "field `tokens.cached` is -1; expected a token count from 0 to 10,000,000",
        ),
        (
            {"id": "x", "type": "gemini", "model": "m", "tokens": [9]},
            "field `tokens` is an array; expected an object or null",
        ),
        (
            {"id": "x", "type": "user", "content": 5},
            "field `content` is a number; expected text, a part or a list of parts",
        ),
        (
            {"id": "x", "type": "user", "content": ["ok", 5]},
            "field `content[1]` is a number; expected a part object or text",
        ),
        (
            {"id": "x", "type": "gemini", "toolCalls": {}},
            "field `toolCalls` is an object; expected a list of tool call objects",
        ),
        (
            {"id": "x", "type": "gemini", "toolCalls": [{"args": {}}]},
            "field `toolCalls[0].name` is null; expected the tool name",
        ),
        (
            {"id": "x", "type": "gemini", "toolCalls": [{"name": "ls", "timestamp": "soon"}]},
            "field `toolCalls[0].timestamp` 'soon' is not ISO-8601",
        ),
        ({"$rewindTo": 5}, "field `$rewindTo` is a number; expected a message id"),
        ({"$set": []}, "field `$set` is an array; expected an object"),
        ({"$set": {"messages": {}}}, "field `$set.messages` is an object; expected a list"),
        ({"$set": {"messages": [1]}}, "field `$set.messages[0]` is a number"),
        ({"$set": {"messages": [{"id": "x"}]}}, "field `$set.messages[0].type` is null"),
        (  # the field path of a synced message, not of a message line
            {"$set": {"messages": [{"id": "x", "type": "user", "content": ["ok", 5]}]}},
            "field `$set.messages[0].content[1]` is a number; expected a part object or text",
        ),
        ({"foo": 1}, "no `id`, `$set` or `$rewindTo`; expected a Gemini CLI message or patch"),
    ],
)
def test_bad_records_fail_in_one_line(session_file, record, expected):
    with session_file.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    with pytest.raises(TranscriptError, match=r":15: ") as info:
        gemini_cli.read(session_file)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        session = gemini_cli.read(session_file, errors="skip")
    assert [s.line for s in session.skipped] == [15]
    assert len(session.calls) == 4


def test_invalid_utf8_and_truncated_lines(session_file):
    lines = session_file.read_bytes().splitlines()
    session_file.write_bytes(b"\n".join([*lines, b'{"id": "g9", "typ', b"\xc3("]) + b"\n")
    with pytest.raises(TranscriptError, match=r":15: .*expected one Gemini CLI record per line"):
        gemini_cli.read(session_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        session = gemini_cli.read(session_file, errors="skip")
    assert [s.line for s in session.skipped] == [15, 16]
    assert "not valid UTF-8" in session.skipped[1].reason


def test_duplicate_ids_and_out_of_order_times(session_file):
    records = _records()
    records[7] = {**records[7], "timestamp": _t(59)}  # g2 logged late: its own time is not used
    records[8] = {**records[8], "timestamp": _t(50)}  # u2 late: g3 is asked after g4
    records.append(_msg("u1", 35, "user", "list the files, again"))  # an id seen before
    with pytest.warns(CacheVizWarning, match=r"out of step .*\(line 10 is 20 s ahead\)"):
        session = gemini_cli.read(_write(session_file, records))
    assert [c.line for c in session.calls] == [5, 8, 10, 13]  # the order written (issue 29)
    assert [c.index for c in session.calls] == [0, 1, 2, 3]
    assert analyze(session).calls.height == 4


def test_a_session_without_responses_is_an_error(session_file):
    path = _write(session_file, _records()[:4])
    with pytest.raises(TranscriptError, match="no API call could be read"):
        gemini_cli.read(path)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_sessions_load_or_fail_in_one_line(session_file, data, loads_or_fails_cleanly):
    lines = session_file.read_text().splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    mutated = data.draw(
        st.one_of(
            st.integers(0, len(lines[i])).map(lambda n: lines[i][:n]),
            st.just(lines[i].replace('"id"', '"i"')),
            st.just(lines[i].replace('"tokens": {', '"tokens": 7, "x": {')),
            st.just(lines[i].replace('"content": ', '"content": {"a": [1]}, "c": ')),
            st.just(lines[i].replace('"toolCalls": [', '"toolCalls": [3, ')),
            st.just(lines[i].replace('"$rewindTo": "u2"', '"$rewindTo": "nowhere"')),
            st.just(lines[i].replace('"model": "', '"model": ["')),
            st.just(lines[i].replace("2026-01-01T10", "1999-12-31T23")),
            st.text(max_size=30),
        )
    )
    path = session_file.with_name("fuzz.jsonl")
    path.write_text("\n".join([*lines[:i], mutated, *lines[i + 1 :]]) + "\n")
    loads_or_fails_cleanly(path, lambda p, e: gemini_cli.read(p, errors=e))


def _expected(path):
    """Calls and usage sums straight from the raw file: the last copy of each response."""
    last = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "gemini" and record.get("model"):
            last[record["id"]] = record["tokens"]
    return len(last), {
        "input": sum(t["input"] for t in last.values()),
        "cached": sum(t["cached"] for t in last.values()),
        "output": sum(t["output"] + t["thoughts"] for t in last.values()),
    }


def test_real_session(realdata):
    path = realdata / SESSION
    assert gemini_cli.detect(path, path.read_bytes()[: 1 << 20])
    count, sums = _expected(path)
    session = gemini_cli.read(path)
    assert len(session.calls) == count == 8
    assert sums == {"input": 95407, "cached": 48247, "output": 348 + 2048}
    assert [c.model for c in session.calls] == ["gemini-3.1-pro-preview-customtools"] * 2 + [
        "gemini-3-flash-preview"
    ] * 6
    assert all(c.reconstructed and c.blocks[0].label == "unlogged prefix" for c in session.calls)
    assert session.ignored["repeated gemini message"] == 7
    frame = analyze(session).calls
    assert frame.height == count
    assert frame["reported_input_tokens"].sum() == sums["input"]
    assert frame["reported_cache_read_tokens"].sum() == sums["cached"]
    assert frame["reported_output_tokens"].sum() == sums["output"]
    assert frame["thread"].n_unique() == 2
    assert not frame["drift"].any()
