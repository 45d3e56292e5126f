import json
from datetime import UTC, datetime

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect

SONNET = "claude-sonnet-4-5-20250929"


def _usage(read, write, out=5):
    return {
        "input_tokens": 3,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
        "output_tokens": out,
    }


def _user(uuid, parent, content, ts, **extra):
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "timestamp": ts,
        "isSidechain": False,
        "message": {"role": "user", "content": content},
        **extra,
    }


def _assistant(uuid, parent, mid, block, usage, ts, model=SONNET, **extra):
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "timestamp": ts,
        "isSidechain": False,
        "requestId": f"req_{mid}",
        "message": {
            "id": mid,
            "role": "assistant",
            "model": model,
            "content": [block],
            "usage": usage,
        },
        **extra,
    }


def _records():
    tool = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    return [
        {"type": "summary", "summary": "Listing files", "leafUuid": "x"},
        _user("u1", None, "list the files", "2026-01-01T10:00:00Z"),
        _assistant(
            "a1",
            "u1",
            "msg_1",
            {"type": "text", "text": "Sure."},
            _usage(0, 15000, 2),
            "2026-01-01T10:00:03Z",
        ),
        _assistant("a2", "a1", "msg_1", tool, _usage(0, 15000, 40), "2026-01-01T10:00:04Z"),
        _user(
            "u2",
            "a2",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py b.py"}],
            "2026-01-01T10:00:05Z",
        ),
        _user(
            "u2",
            "a2",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py b.py"}],
            "2026-01-01T10:00:05Z",
        ),
        # a Task sub-agent inlined as a sidechain
        {**_user("s1", "u2", "explore the repo", "2026-01-01T10:00:06Z"), "isSidechain": True},
        {
            **_assistant(
                "s2",
                "s1",
                "msg_s",
                {"type": "text", "text": "done"},
                _usage(0, 9000),
                "2026-01-01T10:00:08Z",
            ),
            "isSidechain": True,
        },
        _assistant(
            "a3",
            "u2",
            "msg_2",
            {"type": "text", "text": "Two files."},
            _usage(15000, 60),
            "2026-01-01T10:00:09Z",
            diagnostics={"cache_miss_reason": "none"},
        ),
        _assistant(
            "a4",
            "a3",
            "msg_x",
            {"type": "text", "text": "API Error"},
            _usage(0, 0),
            "2026-01-01T10:00:10Z",
            model="<synthetic>",
        ),
        {"type": "file-history-snapshot", "messageId": "a3", "snapshot": {}},
    ]


@pytest.fixture
def session_file(tmp_path):
    path = tmp_path / "5c0375b4-aaaa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records()) + "\n")
    return path


def test_one_call_per_response_with_its_final_usage(session_file):
    assert detect(session_file) == "claude-code"
    session = cacheviz.load(session_file)
    # request time = the thread's last record before the response
    # an inline sidechain no Task call names: its id (issue 33, item 7)
    assert [c.thread_hint for c in session.calls] == ["main", "main", "sub-agent s1"]
    first, second, _ = session.calls
    assert first.usage.output_tokens == 40  # the last line of msg_1
    assert first.usage.input_tokens == 15003
    assert second.meta == {
        "provider_verdict": "none",
        "response_id": "msg_2",
        "request_id": "req_msg_2",
        "response_ts": datetime(2026, 1, 1, 10, 0, 9, tzinfo=UTC),  # the response's record
        "parent_response": "msg_1",  # the response it follows, by the parentUuid links
    }
    assert all(c.reconstructed for c in session.calls)
    assert [b.label for b in second.blocks] == [
        "unlogged prefix",
        "user#0",
        "assistant#1",
        "user#2",
    ]
    assert session.ignored == {
        "summary record": 1,
        "file-history-snapshot record": 1,
        "repeated record": 1,
        "synthetic assistant message (not an API call)": 1,
    }
    # the split response is one assistant message with both blocks
    assert [p["type"] for p in session.contents[second.blocks[2].hash].value["content"]] == [
        "text",
        "tool_use",
    ]


def test_the_unlogged_prefix_is_sized_from_the_first_reported_usage(session_file):
    analysis = cacheviz.load(session_file).analyze()
    calls = analysis.calls
    assert calls["input_tokens"][0] == 15003  # sized so the first call matches its report
    assert calls["unlogged_tokens"][0] == calls["unlogged_tokens"][1] > 14_000
    assert calls["reconstructed"].all()
    assert calls["provider_verdict"].to_list() == [None, "none", None]
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]
    assert not calls["drift"].any()
    opaque = analysis.segments.filter(pl.col("opaque"))
    assert opaque["label"].unique().to_list() == ["unlogged prefix"]
    assert opaque["hash"].n_unique() == 2  # main thread and sidechain have their own


def test_subagent_files_beside_the_session_are_threads(session_file):
    folder = session_file.parent / session_file.stem / "subagents"
    folder.mkdir(parents=True)
    records = [
        _user("x1", None, "find the cache key", "2026-01-01T10:00:06Z"),
        _assistant(
            "x2",
            "x1",
            "msg_sub",
            {"type": "text", "text": "found"},
            _usage(0, 8000),
            "2026-01-01T10:00:07Z",
        ),
    ]
    (folder / "agent-a1b2.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    session = cacheviz.load(session_file)
    assert [c.thread_hint for c in session.calls] == [
        "main",
        "main",
        "sub-agent s1",
        "sub-agent a1b2",
    ]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            {"type": "user", "uuid": "z", "sessionId": "s", "message": "hi"},
            "field `message` is a string; expected an object",
        ),
        (
            {
                "type": "assistant",
                "uuid": "z",
                "sessionId": "s",
                "message": {"id": "m", "content": []},
            },
            "field `message.model` is null",
        ),
        (
            {
                "type": "user",
                "uuid": "z",
                "sessionId": "s",
                "timestamp": 5,
                "message": {"content": "x"},
            },
            "field `ts` is a number",
        ),
        ([1, 2], "the line is an array; expected a Claude Code record object"),
    ],
)
def test_bad_records_are_one_line(session_file, record, expected):
    with session_file.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    with pytest.raises(TranscriptError, match=r":12: ") as info:
        cacheviz.load(session_file)
    assert expected in str(info.value)


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
            st.just(lines[i].replace('"message"', '"messag"')),
            st.just(lines[i].replace('"content"', '"content": 7, "x"')),
            st.text(max_size=30),
        )
    )
    path = session_file.with_name("fuzz.jsonl")
    path.write_text("\n".join([*lines[:i], mutated, *lines[i + 1 :]]) + "\n")
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="claude-code", errors=e))


def _expected(path):
    """Calls and usage sums computed straight from the raw file."""
    last = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        message = record.get("message")
        if record.get("type") == "assistant" and message.get("model") != "<synthetic>":
            last[message["id"]] = message["usage"]
    fields = (
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
    )
    return len(last), {f: sum(u.get(f) or 0 for u in last.values()) for f in fields}


@pytest.mark.parametrize(
    ("name", "calls", "sidechain_calls"),
    [
        ("chiphuyen__sniffly__ba79134d-b6e9-4867-af0c-6941038c9e4b.jsonl", 24, 0),
        ("d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", 7, 0),
        ("d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", 20, None),
    ],
)
def test_real_sessions(realdata, name, calls, sidechain_calls):
    path = realdata / "claude_code_jsonl" / name
    count, sums = _expected(path)
    session = cacheviz.load(path)
    assert session.format == "claude-code"
    frame = session.analyze().calls
    assert frame.height == count == calls
    assert frame["reported_cache_read_tokens"].sum() == sums["cache_read_input_tokens"]
    assert frame["reported_cache_write_tokens"].sum() == sums["cache_creation_input_tokens"]
    assert frame["reported_output_tokens"].sum() == sums["output_tokens"]
    inclusive = (
        sums["input_tokens"] + sums["cache_read_input_tokens"] + sums["cache_creation_input_tokens"]
    )
    assert frame["reported_input_tokens"].sum() == inclusive
    sidechains = frame.filter(pl.col("thread").str.starts_with("sub-agent")).height
    if sidechain_calls is not None:
        assert sidechains == sidechain_calls
    else:
        assert sidechains > 0
        assert frame.filter(pl.col("thread") == "main").height + sidechains == count


def test_subagent_threads_are_named_by_their_description(session_file):
    folder = session_file.parent / session_file.stem / "subagents"
    folder.mkdir(parents=True)
    records = [
        _user("y1", None, "explore the repo", "2026-01-01T10:00:06Z"),
        _assistant(
            "y2",
            "y1",
            "msg_y",
            {"type": "text", "text": "done"},
            _usage(0, 8000),
            "2026-01-01T10:00:07Z",
        ),
    ]
    for agent in ("a1", "b2", "c3", "d4"):
        lines = [
            json.dumps({**r, "message": {**r["message"], "id": f"{agent}-{r['uuid']}"}})
            if r["type"] == "assistant"
            else json.dumps(r)
            for r in records
        ]
        (folder / f"agent-{agent}.jsonl").write_text("\n".join(lines) + "\n")
    metas = {
        "a1": {"agentType": "Explore", "description": "look around"},
        "b2": {"agentType": "Explore", "description": "look around"},
        "c3": {"agentType": "Plan"},
    }
    for agent, meta in metas.items():
        (folder / f"agent-{agent}.meta.json").write_text(json.dumps(meta))
    # what each was asked to do, else its type, else its id; #2 when a name repeats
    hints = {c.thread_hint for c in cacheviz.load(session_file).calls}
    assert hints - {"main", "sub-agent s1"} == {  # s1: the session's inline sidechain
        "sub-agent: look around",
        "sub-agent: look around #2",
        "sub-agent Plan",
        "sub-agent d4",
    }
    # which file each call came from, beside its line (issue 33, item 13)
    calls = cacheviz.load(session_file).analyze().calls
    sources = dict(calls.select("thread", "source").unique().iter_rows())
    assert sources["main"] == session_file.name
    stem = session_file.stem
    assert sources["sub-agent Plan"] == f"{stem}/subagents/agent-c3.jsonl"
    assert sources["sub-agent d4"] == f"{stem}/subagents/agent-d4.jsonl"
    assert calls.filter(calls["thread"] == "sub-agent d4")["line"].to_list() == [2]


def _replay_call(response_id, thread="main", minute=0):
    from datetime import UTC, datetime

    from cacheviz.model import Call

    meta = {} if response_id is None else {"response_id": response_id}
    ts = datetime(2026, 1, 1, 0, minute, tzinfo=UTC)
    return Call(-1, 0, ts, "anthropic", "messages", "claude-sonnet-4-5", [], None, thread, meta)


def test_drop_replays_without_repeats_keeps_every_call():
    """No response id twice (missing ids never repeat): the calls come back as they are."""
    from cacheviz.formats.claude_code import drop_replays

    calls = [_replay_call("a"), _replay_call(None), _replay_call(None), _replay_call("")]
    kept, dropped = drop_replays(calls)
    assert (kept, dropped) == (calls, 0)


def test_drop_replays_drops_a_repeated_id_even_an_empty_one():
    from cacheviz.formats.claude_code import drop_replays

    calls = [_replay_call(""), _replay_call("x", minute=1), _replay_call("", "fork", minute=2)]
    kept, dropped = drop_replays(calls)
    assert dropped == 1
    assert kept == calls[:2]


def test_a_session_holding_only_its_titles_is_claude_code_with_no_call(tmp_path):
    # Claude Code 2.1 leaves sessions that hold only an `ai-title` and an `agent-name`
    # record (sweep of public sessions): it is a Claude Code file with nothing to read,
    # not a format cacheviz cannot tell
    path = tmp_path / "8a0c7e3e-0000-4000-8000-000000000001.jsonl"
    sid = path.stem
    lines = [
        {"type": "ai-title", "aiTitle": "Speed up the build", "sessionId": sid},
        {"type": "agent-name", "agentName": "Speed up the build", "sessionId": sid},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert detect(path) == "claude-code"
    with pytest.raises(TranscriptError, match="no API call could be read") as caught:
        cacheviz.load(path)
    assert "\n" not in str(caught.value) and "ai-title record" in str(caught.value)
