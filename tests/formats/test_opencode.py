"""OpenCode storage: opencode.db (1.x) and the older storage/ JSON folders."""

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz import cli
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect

EXAMPLES = Path("/work/examples/issue18/opencode_db")  # a real database from a public backup
T0 = 1_781_674_674_000


def _tokens(inp, out, read=0, write=0, reasoning=0):
    total = inp + out + read + write + reasoning
    return {
        "total": total,
        "input": inp,
        "output": out,
        "reasoning": reasoning,
        "cache": {"read": read, "write": write},
    }


def _records():
    """(sessions, messages, parts): a session with a tool step and a sub-agent session."""
    sessions = [("ses_a", None), ("ses_b", "ses_a")]
    messages = [
        ("msg_1", "ses_a", T0, {"role": "user", "time": {"created": T0}}),
        (
            "msg_2",
            "ses_a",
            T0 + 10,
            {
                "role": "assistant",
                "providerID": "anthropic",
                "modelID": "claude-sonnet-4-5",
                "time": {"created": T0 + 10},
                "tokens": _tokens(3, 40, 0, 12000),
            },
        ),
        (
            "msg_3",
            "ses_a",
            T0 + 20,
            {
                "role": "assistant",
                "providerID": "anthropic",
                "modelID": "claude-sonnet-4-5",
                "time": {"created": T0 + 20},
                "tokens": _tokens(5, 9, 12000, 300, reasoning=4),
            },
        ),
        ("msg_4", "ses_b", T0 + 30, {"role": "user", "time": {"created": T0 + 30}}),
        (
            "msg_5",
            "ses_b",
            T0 + 40,
            {
                "role": "assistant",
                "providerID": "opencode",
                "modelID": "kimi-k2",
                "time": {"created": T0 + 40},
                "tokens": _tokens(8000, 5),
            },
        ),
    ]
    tool = {
        "type": "tool",
        "tool": "bash",
        "callID": "call_1",
        "state": {"status": "completed", "input": {"command": "ls"}, "output": "a.py"},
    }
    parts = [
        ("prt_01", "msg_1", "ses_a", {"type": "text", "text": "list the files"}),
        ("prt_02", "msg_2", "ses_a", {"type": "step-start"}),
        ("prt_03", "msg_2", "ses_a", {"type": "reasoning", "text": "ls"}),
        ("prt_04", "msg_2", "ses_a", tool),
        ("prt_05", "msg_2", "ses_a", {"type": "step-finish", "tokens": _tokens(3, 40, 0, 12000)}),
        ("prt_06", "msg_3", "ses_a", {"type": "step-start"}),
        ("prt_07", "msg_3", "ses_a", {"type": "text", "text": "One file."}),
        (
            "prt_08",
            "msg_3",
            "ses_a",
            {"type": "step-finish", "tokens": _tokens(5, 9, 12000, 300, reasoning=4)},
        ),
        ("prt_09", "msg_4", "ses_b", {"type": "text", "text": "explore"}),
        ("prt_10", "msg_5", "ses_b", {"type": "step-start"}),
        ("prt_11", "msg_5", "ses_b", {"type": "step-finish", "tokens": _tokens(8000, 5)}),
    ]
    return sessions, messages, parts


def _write_db(path, sessions, messages, parts):
    con = sqlite3.connect(path)
    con.executescript(
        "create table session (id text primary key, parent_id text, title text);"
        "create table message (id text primary key, session_id text, time_created integer,"
        " time_updated integer, data text);"
        "create table part (id text primary key, message_id text, session_id text,"
        " time_created integer, time_updated integer, data text);"
    )
    con.executemany("insert into session values (?, ?, 't')", sessions)
    con.executemany(
        "insert into message values (?, ?, ?, ?, ?)",
        [(m, s, t, t, json.dumps(d)) for m, s, t, d in messages],
    )
    con.executemany(
        "insert into part values (?, ?, ?, ?, ?, ?)",
        [(p, m, s, T0, T0, json.dumps(d)) for p, m, s, d in parts],
    )
    con.commit()
    con.close()
    return path


def _write_folders(root, sessions, messages, parts):
    storage = root / "storage"
    for sid, parent in sessions:
        path = storage / "session" / "prj_1" / f"{sid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"id": sid, "parentID": parent, "title": "t"}))
    for mid, sid, _, data in messages:
        path = storage / "message" / sid / f"{mid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"id": mid, "sessionID": sid, **data}, indent=2))
    for pid, mid, sid, data in parts:
        path = storage / "part" / mid / f"{pid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"id": pid, "messageID": mid, "sessionID": sid, **data}))
    return storage


@pytest.fixture(params=["db", "folders"])
def store(request, tmp_path):
    if request.param == "db":
        return _write_db(tmp_path / "opencode.db", *_records())
    return _write_folders(tmp_path / "opencode", *_records())


def test_one_call_per_step_with_its_usage(store):
    assert detect(store) == "opencode"
    session = cacheviz.load(store)
    assert [c.thread_hint for c in session.calls] == ["ses_a", "ses_a", "ses_b"]
    first, second, sub = session.calls
    assert first.usage.input_tokens == 12003  # input excludes the cache: added back
    assert second.usage.cache_read_tokens == 12000 and second.usage.output_tokens == 13
    assert sub.parent_hint == "ses_a" and sub.provider == "opencode"
    analysis = session.analyze()
    calls = analysis.calls
    # the second step re-sends the first: user turn, assistant tool call, tool result
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]
    assert not calls["drift"].any()
    totals = analysis.summary()["reported_totals"]
    assert totals == {
        "input_tokens": 12003 + 12305 + 8000,
        "cache_read_tokens": 12000,
        "cache_write_tokens": 12300,
        "output_tokens": 40 + 13 + 5,
        "scope": "calls",
        "calls_reporting": 3,
    }


def test_the_opencode_folder_holding_storage_loads_too(tmp_path):
    storage = _write_folders(tmp_path / "opencode", *_records())
    assert cacheviz.load(storage.parent).format == "opencode"
    assert cli.main(["summary", str(storage.parent), "--json"]) == 0


def test_an_unfinished_step_is_a_call_without_usage(tmp_path):
    sessions, messages, parts = _records()
    parts = [p for p in parts if p[0] != "prt_11"]  # the sub-agent's step never finished
    session = cacheviz.load(_write_db(tmp_path / "opencode.db", sessions, messages, parts))
    assert len(session.calls) == 3 and session.calls[2].usage is None


def test_scan_reads_a_store_as_one_unit(tmp_path):
    storage = _write_folders(tmp_path / "home" / "opencode", *_records())
    _write_db(tmp_path / "home" / "opencode.db", *_records())
    result = cacheviz.scan([tmp_path / "home"], cache=False)
    assert sorted(result.files["path"].to_list()) == sorted(
        [str(storage), str(tmp_path / "home" / "opencode.db")]
    )
    assert result.calls.height == 6


def test_a_bad_record_is_named(tmp_path):
    sessions, messages, parts = _records()
    messages[1] = (*messages[1][:3], {**messages[1][3], "modelID": 7})
    path = _write_db(tmp_path / "opencode.db", sessions, messages, parts)
    with pytest.raises(TranscriptError, match=r"message msg_2: field `modelID` is a number"):
        cacheviz.load(path)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_records_load_or_fail_in_one_line(tmp_path_factory, data, loads_or_fails_cleanly):
    sessions, messages, parts = _records()
    junk = st.one_of(
        st.just("{oops"),
        st.just("[1]"),
        st.just(json.dumps({"type": "step-finish", "tokens": {"input": "x"}})),
        st.just(json.dumps({"role": "assistant", "modelID": "m", "tokens": 5})),
        st.text(max_size=20),
    )
    i = data.draw(st.integers(0, len(parts) - 1))
    j = data.draw(st.integers(0, len(messages) - 1))
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "opencode.db"
    _write_db(path, sessions, messages, parts)
    con = sqlite3.connect(path)
    con.execute("update part set data = ? where id = ?", (data.draw(junk), parts[i][0]))
    con.execute("update message set data = ? where id = ?", (data.draw(junk), messages[j][0]))
    con.commit()
    con.close()
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="opencode", errors=e))


def test_real_database(capsys):
    path = EXAMPLES / "richardaiand" / "opencode.db"
    if not path.is_file():
        pytest.skip(f"{path} is not present (a public example, kept outside the repo)")
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    starts = finishes = 0
    sums = {"input": 0, "read": 0, "write": 0, "output": 0}
    for (text,) in con.execute("select data from part"):
        part = json.loads(text)
        starts += part["type"] == "step-start"
        if part["type"] == "step-finish":
            finishes += 1
            t = part["tokens"]
            sums["read"] += t["cache"]["read"]
            sums["write"] += t["cache"]["write"]
            sums["input"] += t["input"] + t["cache"]["read"] + t["cache"]["write"]
            sums["output"] += t["output"] + t["reasoning"]
    # OpenCode's own per-session totals agree
    session_input = con.execute("select sum(tokens_input) from session").fetchone()[0]
    con.close()
    session = cacheviz.load(path)
    assert session.format == "opencode"
    calls = session.analyze().calls
    assert calls.height == starts == 72 and finishes == 70
    assert calls["reported_input_tokens"].sum() == sums["input"] == session_input
    assert calls["reported_cache_read_tokens"].sum() == sums["read"]
    assert calls["reported_output_tokens"].sum() == sums["output"]
    assert cli.main(["summary", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["reported_totals"]["input_tokens"] == sums["input"]


def test_scan_without_paths_looks_in_the_default_locations(tmp_path, monkeypatch):
    share = tmp_path / "home" / ".local" / "share" / "opencode"
    share.mkdir(parents=True)
    _write_db(share / "opencode.db", *_records())
    _write_folders(share, *_records())
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = cacheviz.scan(cache=False)
    found = {str(loc.path) for loc in result.locations if loc.agent == "opencode" and loc.found}
    assert found == {str(share / "opencode.db"), str(share / "storage")}
    assert result.calls.height == 6
