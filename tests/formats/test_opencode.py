"""OpenCode storage: opencode.db (1.x) and the older storage/ JSON folders."""

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz import cli
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect

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
        "reasoning_tokens": 4,  # the one step that reports reasoning (part of its output)
        "scope": "calls",
        "calls_reporting": 3,
    }


def test_the_opencode_folder_holding_storage_loads_too(tmp_path):
    storage = _write_folders(tmp_path / "opencode", *_records())
    assert cacheviz.load(storage.parent).format == "opencode"
    assert cli.main(["summary", str(storage.parent), "--json"]) == 0


def test_an_unfinished_step_is_not_a_call_and_is_counted_apart(tmp_path):
    sessions, messages, parts = _records()
    parts = [p for p in parts if p[0] != "prt_11"]  # the sub-agent's step never finished
    session = cacheviz.load(_write_db(tmp_path / "opencode.db", sessions, messages, parts))
    assert len(session.calls) == 2 and all(c.usage is not None for c in session.calls)
    assert session.ignored["unfinished step (cut off or still running; not a call)"] == 1


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


@pytest.mark.parametrize("kind", ["db", "folders"])
@pytest.mark.parametrize("stamp", ["2026-01-01", 5, [1]])
def test_a_message_time_that_is_not_an_object_is_one_line(tmp_path, kind, stamp):
    """Issue 29 item 14: ``time`` as a string or a number was a traceback."""
    sessions, messages, parts = _records()
    messages[1] = (*messages[1][:3], {**messages[1][3], "time": stamp})
    if kind == "db":
        path = _write_db(tmp_path / "opencode.db", sessions, messages, parts)
    else:
        path = _write_folders(tmp_path / "opencode", sessions, messages, parts)
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "msg_2" in message and "field `time` is" in message and "\n" not in message
    with pytest.warns(CacheVizWarning, match="skipped"):
        assert len(cacheviz.load(path, errors="skip").calls) == 2


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


# -- a database in OpenCode 1.x's own schema ----------------------------------------------

# The tables as OpenCode 1.x's migrations create them (drizzle, packages/opencode/src/
# session/session.sql.ts and project/project.sql.ts): foreign keys, indexes, the per-session
# token totals OpenCode keeps, and tables the reader never opens.
_SCHEMA_1X = """
create table project (id text primary key, worktree text not null, vcs text, name text,
  icon_url text, icon_color text, time_created integer not null, time_updated integer not null,
  time_initialized integer, sandboxes text not null);
create table session (id text primary key,
  project_id text not null references project(id) on delete cascade, workspace_id text,
  parent_id text, slug text not null, directory text not null, path text,
  title text not null, version text not null, share_url text, summary_additions integer,
  summary_deletions integer, summary_files integer, summary_diffs text,
  cost real not null default 0, tokens_input integer not null default 0,
  tokens_output integer not null default 0, tokens_reasoning integer not null default 0,
  tokens_cache_read integer not null default 0, tokens_cache_write integer not null default 0,
  revert text, permission text, agent text, model text, time_created integer not null,
  time_updated integer not null, time_compacting integer, time_archived integer);
create index session_project_idx on session (project_id);
create index session_parent_idx on session (parent_id);
create table message (id text primary key,
  session_id text not null references session(id) on delete cascade,
  time_created integer not null, time_updated integer not null, data text not null);
create index message_session_time_created_id_idx on message (session_id, time_created, id);
create table part (id text primary key,
  message_id text not null references message(id) on delete cascade,
  session_id text not null, time_created integer not null, time_updated integer not null,
  data text not null);
create index part_message_id_id_idx on part (message_id, id);
create index part_session_idx on part (session_id);
create table todo (session_id text not null references session(id) on delete cascade,
  content text not null, status text not null, priority text not null,
  position integer not null, time_created integer not null, time_updated integer not null,
  primary key (session_id, position));
create table permission (project_id text primary key references project(id) on delete cascade,
  time_created integer not null, time_updated integer not null, data text not null);
"""
MAIN, SUB = "ses_1a2b3c4d5e6fMAIN", "ses_1a2b3c4d5e7gSUB0"


def _finish(inp, out, read, write, reasoning=0, reason="tool-calls"):
    return {
        "type": "step-finish",
        "reason": reason,
        "snapshot": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
        "cost": 0.01,
        "tokens": _tokens(inp, out, read, write, reasoning),
    }


def _tool(call_id, name, status, **state):
    times = {"start": T0, "end": T0 + 5} if status in ("completed", "error") else {"start": T0}
    return {
        "type": "tool",
        "callID": call_id,
        "tool": name,
        "state": {"status": status, "time": times, **state},
    }


def _assistant(model, provider, created, **extra):
    return {
        "role": "assistant",
        "time": {"created": created, "completed": created + 900},
        "parentID": "msg_user",
        "modelID": model,
        "providerID": provider,
        "mode": "build",
        "agent": "build",
        "path": {"cwd": "/home/dev/app", "root": "/home/dev/app"},
        "cost": 0.04,
        "tokens": _tokens(0, 0),
        **extra,
    }


def _user(text, created, session=MAIN):
    model = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
    data = {"role": "user", "time": {"created": created}, "agent": "build", "model": model}
    return session, created, data, [{"type": "text", "text": text}]


def _opencode_1x(path: Path) -> Path:
    """A database as OpenCode 1.x writes it: a session with a sub-agent, a model switch,
    failed and running tools, patches and snapshots, an aborted message and a step cut off.

    Record data omits the ids (they are columns), as OpenCode stores it.
    """
    read = {"filePath": "/home/dev/app/tests/test_a.py"}
    messages = [  # (session, time created, data, parts)
        _user("Fix the failing test in tests/test_a.py ✓", T0),
        (
            MAIN,
            T0 + 1000,
            _assistant("claude-sonnet-4-5", "anthropic", T0 + 1000, finish="stop"),
            [
                {"type": "step-start", "snapshot": "4b825dc6"},
                {"type": "reasoning", "text": "Read the test.", "time": {"start": T0}},
                _tool("toolu_01", "read", "completed", input=read, output="assert a == 'b'"),
                _finish(2, 60, 0, 14000, reasoning=12),
                {"type": "step-start", "snapshot": "4b825dc7"},
                {"type": "text", "text": "Asking a sub-agent where `a` is set."},
                _tool(
                    "toolu_02",
                    "task",
                    "completed",
                    input={"description": "find a", "prompt": "Where is a set?"},
                    output="tests/conftest.py:12",
                    title="find a",
                    metadata={"sessionId": SUB},
                ),
                _finish(3, 45, 14000, 600),
                {"type": "step-start"},
                _tool("toolu_03", "edit", "completed", input={"filePath": "x"}, output=""),
                {"type": "patch", "hash": "9f1e2d", "files": ["/home/dev/app/tests/conftest.py"]},
                _finish(1, 80, 14600, 300),
                {"type": "step-start"},
                {"type": "text", "text": "Fixed."},
                _finish(1, 12, 14900, 20, reason="stop"),
            ],
        ),
        _user("Where is a set?", T0 + 2000, SUB),
        (
            SUB,
            T0 + 2100,
            _assistant("claude-haiku-4-5", "anthropic", T0 + 2100, mode="explore"),
            [
                {"type": "step-start"},
                _tool("toolu_11", "grep", "error", input={"pattern": "a ="}, error="No files"),
                _finish(6, 30, 0, 5040),
                {"type": "step-start"},
                _tool("toolu_12", "glob", "completed", input={"pattern": "**/*.py"}, output="x"),
                _finish(4, 20, 5040, 180),
                {"type": "step-start"},
                {"type": "text", "text": "tests/conftest.py:12", "synthetic": False},
                _finish(3, 25, 5220, 40, reason="stop"),
            ],
        ),
        _user("now run the tests", T0 + 5000),
        (
            MAIN,
            T0 + 5100,
            _assistant(
                "claude-sonnet-4-5",
                "anthropic",
                T0 + 5100,
                error={"name": "MessageAbortedError", "data": {"message": "Aborted"}},
            ),
            [  # aborted while its tool ran: the step never finished
                {"type": "step-start"},
                _tool("toolu_21", "bash", "running", input={"command": "pytest"}, title="pytest"),
            ],
        ),
        _user("continue", T0 + 9000),
        (
            MAIN,
            T0 + 9100,
            _assistant("gpt-5", "openai", T0 + 9100),
            [
                {"type": "step-start"},
                {"type": "reasoning", "text": "Run them.", "time": {"start": T0}},
                _tool("call_31", "bash", "completed", input={"command": "pytest"}, output="ok"),
                _finish(15000, 40, 0, 0, reasoning=200),
                {"type": "step-start"},
                {"type": "text", "text": "All tests pass."},  # the process was killed here
            ],
        ),
    ]
    return _write_1x(path, messages, {MAIN: None, SUB: MAIN})


def _write_1x(path: Path, messages: list, sessions: dict) -> Path:
    """``messages`` ((session, time created, data, parts)) as OpenCode 1.x stores them."""
    con = sqlite3.connect(path)
    con.executescript(_SCHEMA_1X)
    con.execute(
        "insert into project values ('prj_1', '/home/dev/app', 'git', null, null, null, ?, ?,"
        " null, '[]')",
        (T0, T0),
    )
    totals = {sid: [0] * 5 for sid in sessions}  # what OpenCode adds up per session
    for n, (session, created, data, parts) in enumerate(messages):
        mid = f"msg_{n:04d}"
        con.execute(
            "insert into message values (?, ?, ?, ?, ?)",
            (mid, session, created, created, json.dumps(data)),
        )
        for part in parts:
            if part["type"] == "step-finish":
                t = part["tokens"]
                inclusive = t["input"] + t["cache"]["read"] + t["cache"]["write"]
                add = [
                    inclusive,
                    t["output"],
                    t["reasoning"],
                    t["cache"]["read"],
                    t["cache"]["write"],
                ]
                totals[session] = [a + b for a, b in zip(totals[session], add, strict=True)]
        sessions.setdefault(session, None)
        con.executemany(
            "insert into part values (?, ?, ?, ?, ?, ?)",
            [
                (f"prt_{n:04d}{i:03d}", mid, session, created + i, created + i, json.dumps(part))
                for i, part in enumerate(parts)
            ],
        )
    for sid, parent in sessions.items():
        con.execute(
            "insert into session (id, project_id, parent_id, slug, directory, title, version,"
            " tokens_input, tokens_output, tokens_reasoning, tokens_cache_read,"
            " tokens_cache_write, time_created, time_updated)"
            " values (?, 'prj_1', ?, ?, '/home/dev/app', 'Fix test', '1.1.4', ?, ?, ?, ?, ?, ?, ?)",
            (sid, parent, sid[-4:].lower(), *totals[sid], T0, T0),
        )
    con.execute(
        "insert into todo values (?, 'run the tests', 'pending', 'high', 0, ?, ?)", (MAIN, T0, T0)
    )
    con.commit()
    con.close()
    return path


def test_a_database_in_opencode_1x_schema(tmp_path, capsys):
    path = _opencode_1x(tmp_path / "opencode.db")
    # independently of the reader: the steps and their usage, straight from the tables
    con = sqlite3.connect(path)
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
    session_input = con.execute("select sum(tokens_input) from session").fetchone()[0]
    con.close()
    # the same numbers by hand: 4 main steps, 3 sub-agent steps, 1 of 2 GPT-5 steps finished
    main = (2 + 14000) + (3 + 14000 + 600) + (1 + 14600 + 300) + (1 + 14900 + 20)
    sub = (6 + 5040) + (4 + 5040 + 180) + (3 + 5220 + 40)
    assert (starts, finishes) == (10, 8)
    assert sums == {
        "input": main + sub + 15000,
        "read": 14000 + 14600 + 14900 + 5040 + 5220,
        "write": 14000 + 600 + 300 + 20 + 5040 + 180 + 40,
        "output": (60 + 12) + 45 + 80 + 12 + 30 + 20 + 25 + (40 + 200),
    }
    assert session_input == sums["input"] == 88960  # OpenCode's own per-session totals agree
    assert detect(path) == "opencode"
    session = cacheviz.load(path)
    assert session.format == "opencode"
    # a step is a call only if it was answered: the aborted step and the one cut off are not
    assert [c.thread_hint for c in session.calls] == [MAIN] * 4 + [SUB] * 3 + [MAIN]
    assert {c.parent_hint for c in session.calls if c.thread_hint == SUB} == {MAIN}
    assert all(c.usage is not None for c in session.calls)
    assert [c.model for c in session.calls][-2:] == ["claude-haiku-4-5", "gpt-5"]
    assert session.ignored["aborted or failed step (no usage reported; not a call)"] == 1
    assert session.ignored["unfinished step (cut off or still running; not a call)"] == 1
    calls = session.analyze().calls
    assert calls.height == finishes == starts - 2
    assert calls["reported_input_tokens"].sum() == sums["input"]
    assert calls["reported_cache_read_tokens"].sum() == sums["read"]
    assert calls["reported_cache_write_tokens"].sum() == sums["write"]
    assert calls["reported_output_tokens"].sum() == sums["output"] == 524
    assert cli.main(["summary", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["reported_totals"]["input_tokens"] == sums["input"]
    assert doc["reported_totals"]["calls_reporting"] == finishes


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


def _kilo(path: Path) -> tuple[Path, int]:
    """A Kilo CLI database (OpenCode's tables, ``kilo.db``): one step per assistant message,
    as Kilo writes them, with requests retried after provider errors and an aborted one.

    Returns the path and how many steps were started.
    """
    con = sqlite3.connect(path)
    con.executescript(_SCHEMA_1X)
    con.execute(
        "insert into project values ('prj_k', '/w', 'git', null, null, null, ?, ?, null, '[]')",
        (T0, T0),
    )
    con.execute(
        "insert into session (id, project_id, slug, directory, title, version, time_created,"
        " time_updated) values (?, 'prj_k', 'k', '/w', 'Kilo', '7.0.0', ?, ?)",
        (MAIN, T0, T0),
    )
    started = 0
    rows: list[tuple[str, int, dict, list[dict]]] = []
    for n in range(12):
        created = T0 + 1000 * n
        if n % 3 == 0:
            _, _, data, parts = _user(f"task {n}", created)
            rows.append(("user", created, data, parts))
            continue
        parts: list[dict] = []
        extra: dict = {}
        if n in (2, 7):  # a 529 and a dropped stream: retried, then answered
            parts.append({"type": "step-start"})
        if n == 10:  # the user pressed Esc: aborted, no answer
            parts.append({"type": "step-start"})
            extra["error"] = {"name": "MessageAbortedError", "data": {"message": "Aborted"}}
        else:
            parts += [
                {"type": "step-start"},
                {"type": "text", "text": f"done {n}"},
                _finish(3 + n, 20 + n, 1000 * n, 50, reason="stop"),
            ]
        started += sum(p["type"] == "step-start" for p in parts)
        tokens = next((p["tokens"] for p in parts if p["type"] == "step-finish"), _tokens(0, 0))
        data = _assistant("kilo/anthropic/claude-sonnet-4.5", "kilo", created, tokens=tokens)
        rows.append(("assistant", created, {**data, **extra}, parts))
    for n, (_, created, data, parts) in enumerate(rows):
        mid = f"msg_{n:04d}"
        con.execute(
            "insert into message values (?, ?, ?, ?, ?)",
            (mid, MAIN, created, created, json.dumps(data)),
        )
        for i, part in enumerate(parts):
            con.execute(
                "insert into part values (?, ?, ?, ?, ?, ?)",
                (f"prt_{n:04d}{i:03d}", mid, MAIN, created + i, created + i, json.dumps(part)),
            )
    con.commit()
    con.close()
    return path, started


def test_kilo_retried_and_aborted_steps_are_not_calls(tmp_path):
    path, started = _kilo(tmp_path / "kilo.db")
    # independently of the reader: ccusage's reading (assistant messages whose tokens are not
    # all zero) and the parts' (steps a step-finish closes)
    con = sqlite3.connect(path)
    answered = 0
    sums = {"input": 0, "read": 0, "write": 0, "output": 0}
    for (text,) in con.execute("select data from message"):
        data = json.loads(text)
        t = data.get("tokens")
        if data["role"] != "assistant" or not any(
            [t["input"], t["output"], t["cache"]["read"], t["cache"]["write"]]
        ):
            continue
        answered += 1
        sums["input"] += t["input"] + t["cache"]["read"] + t["cache"]["write"]
        sums["read"] += t["cache"]["read"]
        sums["write"] += t["cache"]["write"]
        sums["output"] += t["output"] + t["reasoning"]
    finishes = sum(
        json.loads(text)["type"] == "step-finish"
        for (text,) in con.execute("select data from part")
    )
    con.close()
    # by hand: 8 assistant messages, 7 answered (2, 7 after a retry; 10 aborted)
    assert (started, finishes, answered) == (10, 7, 7)
    assert sums["read"] == 1000 * (1 + 2 + 4 + 5 + 7 + 8 + 11)
    session = cacheviz.load(path)
    assert session.format == "opencode"
    assert len(session.calls) == answered
    assert session.ignored["retried step (started, never answered; not a call)"] == 2
    assert session.ignored["aborted or failed step (no usage reported; not a call)"] == 1
    calls = session.analyze().calls
    assert calls["reported_input_tokens"].sum() == sums["input"]
    assert calls["reported_cache_read_tokens"].sum() == sums["read"]
    assert calls["reported_cache_write_tokens"].sum() == sums["write"]
    assert calls["reported_output_tokens"].sum() == sums["output"]
    assert calls["usage_provenance"].null_count() == 0


def test_scan_finds_kilo_in_its_default_folder(tmp_path, monkeypatch):
    share = tmp_path / "home" / ".local" / "share" / "kilo"
    share.mkdir(parents=True)
    _kilo(share / "kilo.db")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KILO_DATA_DIR", raising=False)
    result = cacheviz.scan(cache=False)
    found = {str(loc.path) for loc in result.locations if loc.agent == "kilo" and loc.found}
    assert found == {str(share / "kilo.db")}
    assert result.calls.height == 7


def test_a_switch_of_agent_is_a_named_miss(tmp_path):
    # OpenCode's plan agent, then the build agent: a new system prompt, so the provider
    # reads nothing past the tools; the miss is agent_switch, not provider_side
    big = "the plan is to " + " ".join(f"step{i}" for i in range(3_000))
    plan = {**_assistant("claude-sonnet-4-5", "anthropic", T0 + 100), "agent": "plan"}
    plan["mode"] = "plan"
    build = _assistant("claude-sonnet-4-5", "anthropic", T0 + 60_100)
    messages = [
        _user("Plan the fix " + big, T0),
        (
            MAIN,
            T0 + 100,
            plan,
            [
                {"type": "step-start"},
                {"type": "text", "text": "Here is the plan."},
                _finish(5, 40, 0, 16_000, reason="stop"),
            ],
        ),
        _user("Go ahead and build it", T0 + 60_000),
        (
            MAIN,
            T0 + 60_100,
            build,
            [
                {"type": "step-start"},
                {"type": "text", "text": "Done."},
                _finish(5, 20, 2_000, 14_100, reason="stop"),
            ],
        ),
    ]
    analysis = cacheviz.load(_write_1x(tmp_path / "opencode.db", messages, {MAIN: None})).analyze()
    calls = analysis.session.calls
    assert [c.meta.get("agent") for c in calls] == ["plan", "build"]
    misses = analysis.misses
    assert misses["cause"].to_list() == ["agent_switch"]
    assert "from plan to build" in misses["detail"][0]
