"""Crush's ``.crush/crush.db``: answered assistant messages as calls, Crush's own cost.

Built with the tables of Crush's migrations (``sessions`` with ``prompt_tokens``,
``completion_tokens``, ``cost``; ``messages`` with JSON ``parts``), in WAL mode, with a
response still in the ``-wal`` (Crush running): read through a private snapshot, the
folder left as it was.
"""

import hashlib
import json
import sqlite3
from pathlib import Path

import cacheviz
from cacheviz.formats import detect
from cacheviz.request._blocks import render_text

SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
    updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT
);
CREATE TABLE messages (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
    parts BLOB NOT NULL DEFAULT '[]', model TEXT, created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT
);
"""
T0 = 1772000000


def _text(text: str) -> dict:
    return {"type": "text", "data": {"text": text}}


def _finish(reason: str) -> dict:
    return {"type": "finish", "data": {"reason": reason, "time": T0}}


def crush_db(folder: Path, *, keep_open: bool = False):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "crush.db"
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SCHEMA)
    con.executemany(
        "insert into sessions values (?,?,?,?,?,?,?,?,?,?)",
        [("s1", None, "Fix a.py", 5, 1840, 9130, 0.0421, T0 + 60, T0, None),
         ("s2", "s1", "agent: find x", 2, 900, 40, 0.0031, T0 + 30, T0 + 20, None)],
    )  # fmt: skip
    call = {"type": "tool_call", "data": {"id": "t1", "name": "view", "input": '{"file_path":"a.py"}', "finished": True}}  # fmt: skip
    result = {"type": "tool_result", "data": {"tool_call_id": "t1", "name": "view", "content": "def f(): pass"}}  # fmt: skip
    rows = [
        ("m1", "s1", "user", [_text("fix a.py ✓")], None, None, T0 + 1),
        ("m2", "s1", "assistant", [{"type": "reasoning", "data": {"thinking": "look"}}, call,
                                   _finish("tool_use")], "claude-sonnet-4-5", "anthropic", T0 + 2),
        ("m3", "s1", "tool", [result], None, None, T0 + 3),
        ("m4", "s1", "assistant", [_text("Part"), _finish("canceled")], "claude-sonnet-4-5",
         "anthropic", T0 + 4),
        ("m5", "s1", "user", [_text("go on")], None, None, T0 + 5),
        ("n1", "s2", "user", [_text("find x")], None, None, T0 + 21),
    ]  # fmt: skip
    con.executemany(
        "insert into messages (id, session_id, role, parts, model, provider, created_at, "
        "updated_at) values (?,?,?,?,?,?,?,?)",
        [(i, s, r, json.dumps(p), m, pr, t, t) for i, s, r, p, m, pr, t in rows],
    )
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    late = [  # written while Crush runs: still in the -wal
        ("m6", "s1", "assistant", [_text("Fixed."), _finish("end_turn")], "claude-sonnet-4-5",
         "anthropic", T0 + 6),
        ("n2", "s2", "assistant", [_text("in b.py"), _finish("end_turn")], "claude-haiku-4-5",
         "anthropic", T0 + 22),
    ]  # fmt: skip
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.executemany(
        "insert into messages (id, session_id, role, parts, model, provider, created_at, "
        "updated_at) values (?,?,?,?,?,?,?,?)",
        [(i, s, r, json.dumps(p), m, pr, t, t) for i, s, r, p, m, pr, t in late],
    )
    con.commit()
    if keep_open:
        return path, con
    con.close()
    return path, None


def independent(path: Path) -> dict:
    """Crush's rules with sqlite3 alone (on a copy: the -wal must be read): answered
    assistant messages, and the sum of the sessions' own costs."""
    con = sqlite3.connect(path)
    calls = 0
    for (parts,) in con.execute("select parts from messages where role = 'assistant'"):
        finish = [p for p in json.loads(parts) if p["type"] == "finish"]
        calls += not finish or finish[0]["data"]["reason"] not in ("canceled", "error")
    cost = con.execute("select sum(cost) from sessions").fetchone()[0]
    con.close()
    return {"calls": calls, "cost": round(cost, 6)}


def _listing(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_answered_messages_and_crush_s_own_cost_with_the_wal_read(tmp_path):
    folder = tmp_path / "app" / ".crush"
    path, writer = crush_db(folder, keep_open=True)
    try:
        assert (folder / "crush.db-wal").stat().st_size > 0
        before = _listing(folder)
        assert detect(path) == "crush"
        session = cacheviz.load(path)
        assert _listing(folder) == before  # no -shm touched, nothing created
    finally:
        writer.close()
    by_hand = {"calls": 3, "cost": round(0.0421 + 0.0031, 6)}  # m2, m6, n2; m4 canceled
    got = {
        "calls": len(session.calls),
        "cost": round(sum(c.meta.get("reported_cost_usd") or 0 for c in session.calls), 6),
    }
    assert by_hand == got == independent(path)
    assert all(c.usage is None for c in session.calls)
    assert session.ignored["assistant message canceled (no answer billed)"] == 1
    m2, m6 = [c for c in session.calls if c.thread_hint == "crush s1"]
    assert m6.meta["crush_last_prompt_tokens"] == 1840  # kept as logged, not billed
    sub = next(c for c in session.calls if c.thread_hint == "crush s2")
    assert sub.parent_hint == "crush s1" and sub.model == "claude-haiku-4-5"
    assert m6.hashes[: len(m2.hashes)] == m2.hashes
    analysis = session.analyze()
    assert analysis.simulation_withheld() is not None  # no usage sizes the unlogged prefix


def test_scan_of_a_project_finds_its_crush_folder(tmp_path):
    path, _ = crush_db(tmp_path / "app" / ".crush")
    result = cacheviz.scan([tmp_path / "app"], cache=False)
    assert result.files["path"].to_list() == [str(path)]
    assert result.calls.height == 3


def test_every_part_s_text_reaches_the_tokenizer(tmp_path):
    """Crush's ``{type, data}`` parts are sized by their text (once sized as empty)."""
    path, _ = crush_db(tmp_path / "app" / ".crush")
    session = cacheviz.load(path)
    m6 = [c for c in session.calls if c.thread_hint == "crush s1"][-1]
    joined = "\n".join(render_text(session.contents[h])[1] for h in m6.hashes)
    for sent in ("fix a.py ✓", "view", '{"file_path":"a.py"}', "def f(): pass", "go on"):
        assert sent in joined
    assert "look" not in joined  # the reasoning part is not sent back
