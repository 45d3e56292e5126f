"""Goose's ``sessions.db``: session totals billed at the session's scope.

Built with the schema of Goose 1.35 (``sessions`` / ``messages``, schema version 13, as a
public capture of a real database shows it, plus ``parent_session_id``) and Goose's
message content (``text``, ``toolRequest``, ``toolResponse``), in WAL mode.
"""

import json
import sqlite3
from pathlib import Path

import cacheviz
from cacheviz.formats import detect

SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER, accumulated_cost REAL, schedule_id TEXT,
    recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT,
    goose_mode TEXT NOT NULL DEFAULT 'auto', archived_at TIMESTAMP, project_id TEXT,
    parent_session_id TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT,
    session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT
);
"""
MAIN, SUB = "20260426_8", "20260426_9"


def _config(model: str) -> str:
    return json.dumps({"model_name": model, "context_limit": None, "toolshim": False})


def goose_db(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sessions.db"
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SCHEMA)
    con.execute(
        "insert into sessions (id, name, session_type, working_dir, created_at, updated_at, "
        "total_tokens, input_tokens, output_tokens, accumulated_total_tokens, "
        "accumulated_input_tokens, accumulated_output_tokens, provider_name, model_config_json) "
        "values (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (MAIN, "Refactor auth", "user", "/home/dev/app", "2026-04-26 14:30:00",
         "2026-04-26 15:12:00", 9100, 9000, 100, 21500, 21000, 400, "anthropic",
         _config("claude-sonnet-4-5")),
    )  # fmt: skip
    con.execute(
        "insert into sessions (id, session_type, working_dir, created_at, input_tokens, "
        "output_tokens, total_tokens, provider_name, model_config_json, parent_session_id) "
        "values (?,?,?,?,?,?,?,?,?,?)",
        (SUB, "sub_agent", "/home/dev/app", "2026-04-26 14:40:00", 3000, 50, 3050,
         "anthropic", _config("claude-haiku-4-5"), MAIN),
    )  # fmt: skip
    tool = {"type": "toolRequest", "id": "toolu_1",
            "toolCall": {"status": "success", "value": {"name": "shell", "arguments": {"command": "ls"}}}}  # fmt: skip
    result = {"type": "toolResponse", "id": "toolu_1",
              "toolResult": {"status": "success", "value": [{"type": "text", "text": "a.ts"}]}}  # fmt: skip
    hidden = json.dumps({"userVisible": True, "agentVisible": False})
    messages = [
        (MAIN, "m1", "user", [{"type": "text", "text": "refactor auth ✓"}], 1777213800, None),
        (MAIN, "m2", "assistant", [tool], 1777213805, None),
        (MAIN, "m3", "user", [result], 1777213806, None),
        (MAIN, "m4", "assistant", [{"type": "text", "text": "Done."}], 1777213810, None),
        (MAIN, "m5", "user", [{"type": "text", "text": "(shown only)"}], 1777213811, hidden),
        (SUB, "s1", "user", [{"type": "text", "text": "list files"}], 1777214400, None),
        (SUB, "s2", "assistant", [{"type": "text", "text": "a.ts"}], 1777214402, None),
    ]
    con.executemany(
        "insert into messages (session_id, message_id, role, content_json, created_timestamp, "
        "metadata_json) values (?,?,?,?,?,?)",
        [(s, m, r, json.dumps(c), t, meta) for s, m, r, c, t, meta in messages],
    )
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return path


def independent(path: Path) -> dict[str, int]:
    """The totals by Goose's rules with sqlite3 alone: accumulated_* when set, else the
    last reply's; calls = assistant messages."""
    con = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
    inp, out = con.execute(
        "select sum(coalesce(accumulated_input_tokens, input_tokens)), "
        "sum(coalesce(accumulated_output_tokens, output_tokens)) from sessions"
    ).fetchone()
    calls = con.execute("select count(*) from messages where role = 'assistant'").fetchone()[0]
    con.close()
    return {"calls": calls, "input": inp, "output": out}


def test_session_totals_billed_at_scope_and_sub_agent_sessions(tmp_path):
    path = goose_db(tmp_path / "goose" / "sessions")
    assert detect(path) == "goose"
    session = cacheviz.load(path)
    by_hand = {"calls": 3, "input": 21000 + 3000, "output": 400 + 50}
    assert by_hand == independent(path)
    totals = session.reported_totals
    got = {
        "calls": len(session.calls),
        "input": totals.input_tokens,
        "output": totals.output_tokens,
    }
    assert got == by_hand
    assert totals.cache_read_tokens is None  # Goose stores no cache split: not reported
    assert all(c.usage is None for c in session.calls)
    main1, main2, sub = session.calls
    assert main1.meta["goose_totals"] == "accumulated_*_tokens"
    assert main1.meta["goose_reasoning_tokens"] == 100
    assert sub.meta["goose_totals"] == "*_tokens" and sub.model == "claude-haiku-4-5"
    assert sub.parent_hint == f"goose {MAIN}" and sub.thread_hint == f"goose {SUB}"
    assert main2.hashes[: len(main1.hashes)] == main1.hashes
    assert session.ignored["message not sent to the model (agentVisible false)"] == 1
    assert session.analyze().billed_usd > 0


def test_scan_finds_the_default_database(tmp_path, monkeypatch):
    home = tmp_path / "home"
    path = goose_db(home / ".local" / "share" / "goose" / "sessions")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GOOSE_PATH_ROOT", raising=False)
    result = cacheviz.scan(cache=False)
    found = {str(loc.path) for loc in result.locations if loc.agent == "goose" and loc.found}
    assert found == {str(path)}
    assert result.calls.height == 3
