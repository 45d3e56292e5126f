"""Hermes Agent's ``state.db``: session totals billed at the session's scope.

The database is built with the ``sessions`` / ``messages`` schema of Hermes Agent's
``hermes_state.py`` (with the cache, reasoning, cost and ``api_call_count`` columns of
newer versions), in WAL mode as Hermes opens it.
"""

import json
import sqlite3
from pathlib import Path

import pytest

import cacheviz
from cacheviz.formats import detect

SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT,
    system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL,
    end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0, cwd TEXT, billing_provider TEXT,
    estimated_cost_usd REAL, actual_cost_usd REAL, title TEXT,
    api_call_count INTEGER DEFAULT 0
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT
);
"""

# (id, model, parent, input, output, cache read, cache write, api calls)
SESSIONS = [
    ("20260301_101500_ab12cd", "claude-sonnet-4-5", None, 1200, 300, 50000, 9000, 3),
    ("20260301_103000_ef34gh", "claude-sonnet-4-5", "20260301_101500_ab12cd", 400, 90, 8000, 0, 1),
    ("20260302_090000_ij56kl", "gpt-5", None, 0, 0, 0, 0, 0),  # never answered
]


def hermes_db(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "state.db"
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SCHEMA)
    for n, (key, model, parent, inp, out, read, write, api) in enumerate(SESSIONS):
        con.execute(
            "insert into sessions (id, source, model, system_prompt, parent_session_id, "
            "started_at, ended_at, input_tokens, output_tokens, cache_read_tokens, "
            "cache_write_tokens, reasoning_tokens, api_call_count, billing_provider, "
            "estimated_cost_usd) values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (key, "cli", model, "You are Hermes.", parent, 1772360100.0 + n * 900,
             1772360400.0 + n * 900, inp, out, read, write, 12, api, "anthropic", 0.05),
        )  # fmt: skip
    call = [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]
    rows = [
        (SESSIONS[0][0], "user", "fix a.py ✓", None, None, 1772360101.0),
        (SESSIONS[0][0], "assistant", "", json.dumps(call), None, 1772360102.0),
        (SESSIONS[0][0], "tool", "def f(): pass", None, "call_1", 1772360103.0),
        (SESSIONS[0][0], "assistant", "Fixed.", None, None, 1772360104.0),
        (SESSIONS[1][0], "user", "summary: fixed a.py. now b.py", None, None, 1772361001.0),
        (SESSIONS[1][0], "assistant", "Done.", None, None, 1772361002.0),
        (SESSIONS[2][0], "user", "hello", None, None, 1772361801.0),
    ]
    con.executemany(
        "insert into messages (session_id, role, content, tool_calls, tool_call_id, timestamp) "
        "values (?,?,?,?,?,?)",
        rows,
    )
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return path


def independent(path: Path) -> dict[str, int]:
    """The session totals by Hermes's rules, read with sqlite3 alone: inclusive input =
    input + cache read + cache write; calls = assistant messages."""
    con = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
    inp, out, read, write = con.execute(
        "select sum(input_tokens + cache_read_tokens + cache_write_tokens), sum(output_tokens), "
        "sum(cache_read_tokens), sum(cache_write_tokens) from sessions"
    ).fetchone()
    calls = con.execute("select count(*) from messages where role = 'assistant'").fetchone()[0]
    con.close()
    return {"calls": calls, "input": inp, "read": read, "write": write, "output": out}


def test_session_totals_are_billed_at_their_scope(tmp_path):
    path = hermes_db(tmp_path / ".hermes")
    assert detect(path) == "hermes"
    session = cacheviz.load(path)
    by_hand = {
        "calls": 3,
        "input": (1200 + 50000 + 9000) + (400 + 8000),
        "read": 58000,
        "write": 9000,
        "output": 390,
    }
    assert by_hand == independent(path)
    totals = session.reported_totals
    got = {
        "calls": len(session.calls),
        "input": totals.input_tokens,
        "read": totals.cache_read_tokens,
        "write": totals.cache_write_tokens,
        "output": totals.output_tokens,
    }
    assert got == by_hand
    assert all(c.usage is None for c in session.calls)  # no per-call figure is invented
    assert [u.model for u in session.session_usage] == ["claude-sonnet-4-5"] * 2
    first, second, child = session.calls
    assert first.meta["hermes_api_call_count"] == 3
    assert child.thread_hint == f"hermes {SESSIONS[1][0]}"
    assert child.parent_hint == f"hermes {SESSIONS[0][0]}"
    # the logged system prompt is a real message; the second request re-sends the first
    assert session.contents[first.hashes[1]].value["content"] == "You are Hermes."
    assert second.hashes[: len(first.hashes)] == first.hashes
    analysis = session.analyze()
    assert analysis.billed_usd is not None and analysis.billed_usd > 0


def test_reading_leaves_the_folder_as_it_was(tmp_path):
    folder = tmp_path / ".hermes"
    path = hermes_db(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    cacheviz.load(path)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_scan_finds_the_state_db(tmp_path, monkeypatch):
    home = tmp_path / "home"
    path = hermes_db(home / ".hermes")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    result = cacheviz.scan(cache=False)
    found = {str(loc.path) for loc in result.locations if loc.agent == "hermes" and loc.found}
    assert found == {str(path)}
    assert result.files["path"].to_list() == [str(path)]
    assert result.calls.height == 3


def test_an_unknown_database_is_not_taken_for_hermes(tmp_path):
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("create table sessions (id text)")
    con.commit()
    con.close()
    from cacheviz.formats import hermes

    assert not hermes.detect(path, path.read_bytes()[:100])
    with pytest.raises(cacheviz.errors.UnknownFormatError, match="tables: sessions"):
        detect(path)
