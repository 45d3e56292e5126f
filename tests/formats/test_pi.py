"""pi and OpenClaw sessions: pi's session JSONL (a header, then a tree of entries).

The fixtures follow pi's ``session-manager.ts`` (version 3: ``{type, id, parentId,
timestamp}`` entries, ``compaction`` with ``firstKeptEntryId``) and its ``Usage``
(``input`` uncached, ``cacheRead``, ``cacheWrite``, ``output``, ``cost.total``); the
OpenClaw lines follow ones published from real OpenClaw sessions (``model-snapshot``,
``toolResult`` with ``toolCallId``). Real sessions, when you have some, are read from
``$CACHEVIZ_PI_SESSIONS`` and ``$CACHEVIZ_OPENCLAW_SESSIONS`` (folders searched for
``*.jsonl`` and ``*.jsonl.reset.*``; nothing is copied).
"""

import json
import os
from pathlib import Path

import pytest

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect

MODEL = "claude-sonnet-4-5"


def _usage(uncached: int, out: int, read: int = 0, write: int = 0, cost: float = 0.0) -> dict:
    return {
        "input": uncached,
        "output": out,
        "cacheRead": read,
        "cacheWrite": write,
        "totalTokens": uncached + out + read + write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }


def _entry(key: str, parent: str | None, second: int, kind: str = "message", **rest) -> dict:
    return {
        "type": kind,
        "id": key,
        "parentId": parent,
        "timestamp": f"2026-02-25T05:19:{second:02d}.000Z",
        **rest,
    }


def _user(key: str, parent: str | None, second: int, text: str) -> dict:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}
    return _entry(key, parent, second, message=message)


def _assistant(key, parent, second, content, usage, stop="stop", **extra) -> dict:
    message = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": MODEL,
        "usage": usage,
        "stopReason": stop,
        "timestamp": 1771996700000 + second * 1000,
        **extra,
    }
    return _entry(key, parent, second, message=message)


def _result(key: str, parent: str, second: int, call_id: str, text: str) -> dict:
    message = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": 0,
    }
    return _entry(key, parent, second, message=message)


def pi_session() -> list[dict]:
    """A tool step, an answer, a failed request, a branch back, a compaction, an answer."""
    call = {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "a.py"}}
    return [
        {
            "type": "session",
            "version": 3,
            "id": "5aa69cdb-42d7-48df-9377-3887a4cff539",
            "timestamp": "2026-02-25T05:18:55.852Z",
            "cwd": "/home/dev/app",
        },
        _entry("m0", None, 0, "model_change", provider="anthropic", modelId=MODEL),
        _entry("t0", "m0", 0, "thinking_level_change", thinkingLevel="low"),
        _user("u1", "t0", 1, "fix a.py ✓"),
        _assistant("a1", "u1", 2, [call], _usage(28, 167, 0, 10583, 0.04), stop="toolUse"),
        _result("r1", "a1", 3, "toolu_1", "def f(): pass"),
        _assistant("a2", "r1", 4, [{"type": "text", "text": "Fixed."}], _usage(40, 20, 10583)),
        _user("u2", "a2", 5, "and b.py"),
        _assistant(
            "e1",
            "u2",
            6,
            [],
            _usage(0, 0),
            stop="error",
            errorMessage="529 overloaded_error",
        ),
        # the user goes back to a2 and asks something else: a branch
        _user("u3", "a2", 7, "explain a.py instead"),
        _assistant(
            "a3", "u3", 8, [{"type": "text", "text": "It defines f."}], _usage(9, 30, 10650)
        ),
        _entry(
            "c1",
            "a3",
            9,
            "compaction",
            summary="Fixed a.py; explained it.",
            firstKeptEntryId="u3",
            tokensBefore=10700,
        ),
        _user("u4", "c1", 10, "thanks"),
        _assistant("a4", "u4", 11, [{"type": "text", "text": "You're welcome."}], _usage(300, 8)),
    ]


def openclaw_session() -> list[dict]:
    """OpenClaw: a model snapshot, a message naming no model, a failed request."""
    snapshot = {
        "timestamp": 1771996735854,
        "provider": "opencode",
        "modelApi": "anthropic-messages",
    }
    answer = _assistant("a1", "u1", 2, [{"type": "text", "text": "Hi"}], _usage(2651, 232, 16304))
    del answer["message"]["model"], answer["message"]["provider"]
    return [
        {
            "type": "session",
            "version": 3,
            "id": "ab9b55c4-f540-4587-ab94-72b63b29147c",
            "timestamp": "2026-02-25T05:18:55.852Z",
            "cwd": "/Users/dev/.openclaw/workspace",
        },
        _entry("s1", None, 0, "custom", customType="model-snapshot",
               data={**snapshot, "modelId": "minimax-m2.5-free"}),
        _user("u1", "s1", 1, "hello"),
        answer,
        _user("u2", "a1", 3, "again"),
        _assistant("e1", "u2", 4, [], _usage(0, 0), stop="error", errorMessage="fetch failed"),
    ]  # fmt: skip


def _archived() -> list[dict]:
    """An earlier session of the same agent (a reset archive is a session of its own)."""
    records = pi_session()
    records[0]["id"] = "0d6e2c11-0000-4000-8000-000000000001"
    records[3]["message"]["content"][0]["text"] = "yesterday's task"
    return records


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def independent(path: Path) -> dict[str, int]:
    """Calls and usage by pi's rules, without the reader: each assistant message whose usage
    is not all zero; input = input + cacheRead + cacheWrite."""
    out = {"calls": 0, "input": 0, "read": 0, "write": 0, "output": 0}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        message = record.get("message") if record.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        usage = message.get("usage") or {}
        parts = [usage.get(k) or 0 for k in ("input", "cacheRead", "cacheWrite", "output")]
        if not any(parts):
            continue
        uncached, read, write, output = parts
        out["calls"] += 1
        out["input"] += uncached + read + write
        out["read"] += read
        out["write"] += write
        out["output"] += output
    return out


def _sums(session) -> dict[str, int]:
    calls = session.analyze().calls
    return {
        "calls": calls.height,
        "input": calls["reported_input_tokens"].sum(),
        "read": calls["reported_cache_read_tokens"].sum(),
        "write": calls["reported_cache_write_tokens"].sum(),
        "output": calls["reported_output_tokens"].sum(),
    }


def _texts(session, call) -> str:
    return json.dumps([session.contents[h].value for h in call.hashes[1:]], ensure_ascii=False)


def test_pi_calls_usage_error_turns_branches_and_compaction(tmp_path):
    path = _write(
        tmp_path / "--home-dev-app--" / "2026-02-25T05-18-55_5aa69cdb.jsonl", pi_session()
    )
    assert detect(path) == "pi"
    session = cacheviz.load(path)
    by_hand = {
        "calls": 4,  # a1 a2 a3 a4; the failed request e1 is not a call
        "input": (28 + 10583) + (40 + 10583) + (9 + 10650) + 300,
        "read": 10583 + 10650,
        "write": 10583,
        "output": 167 + 20 + 30 + 8,
    }
    assert by_hand == independent(path) == _sums(session)
    assert session.format == "pi"
    key = "failed request (stopReason error, usage 0: no answer, nothing billed)"
    assert session.ignored[key] == 1
    a1, a2, a3, a4 = session.calls
    assert a1.meta["reported_cost_usd"] == 0.04 and a1.usage.provenance == "derived"
    assert a1.provider == "anthropic" and a1.model == MODEL
    # a2 re-sends a1's request, its answer (tool_use) and the tool result
    assert a2.hashes[: len(a1.hashes)] == a1.hashes and len(a2.hashes) == len(a1.hashes) + 2
    assert '"tool_use_id": "toolu_1"' in _texts(session, a2).replace('":"', '": "')
    # a3 branches from a2: the abandoned question and the failed turn are not in it
    assert "and b.py" not in _texts(session, a3) and "explain a.py" in _texts(session, a3)
    assert a3.hashes[: len(a2.hashes)] == a2.hashes
    # after the compaction: the summary, the kept messages from u3, then u4
    last = _texts(session, a4)
    assert "Fixed a.py; explained it." in last and "explain a.py instead" in last
    assert "fix a.py" not in last


def test_openclaw_reads_the_model_snapshot_and_its_reset_archives(tmp_path):
    sessions = tmp_path / ".openclaw" / "agents" / "main" / "sessions"
    live = _write(sessions / "ab9b55c4-f540-4587-ab94-72b63b29147c.jsonl", openclaw_session())
    archive = _write(
        sessions / "0d6e2c11-0000-4000-8000-000000000001.jsonl.reset.2026-02-24T01-46-27.666Z",
        _archived(),
    )
    assert detect(live) == "openclaw" and detect(archive) == "openclaw"
    session = cacheviz.load(live)
    assert session.format == "openclaw"
    assert [c.model for c in session.calls] == ["minimax-m2.5-free"]  # from the snapshot
    assert session.calls[0].provider == "opencode"  # the model names no vendor: OpenClaw's
    assert independent(live) == _sums(session)
    assert independent(archive) == _sums(cacheviz.load(archive))


def test_a_corrupt_count_is_one_line_and_skip_nulls_the_call(tmp_path):
    records = pi_session()
    records[6]["message"]["usage"]["cacheRead"] = -5
    path = _write(tmp_path / "s.jsonl", records)
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "\n" not in message and f"{path}:7" in message and "usage.cacheRead" in message
    with pytest.warns(CacheVizWarning, match="usage set to null for 1 call"):
        session = cacheviz.load(path, errors="skip")
    assert [c.usage is None for c in session.calls] == [False, True, False, False]


def test_scan_finds_pi_and_openclaw_folders_and_skips_the_index(tmp_path, monkeypatch):
    home = tmp_path / "home"
    pi = _write(home / ".pi" / "agent" / "sessions" / "--app--" / "x_1.jsonl", pi_session())
    sessions = home / ".openclaw" / "agents" / "main" / "sessions"
    claw = _write(sessions / "ab9b55c4.jsonl", openclaw_session())
    reset = _write(sessions / "ab9b55c4.jsonl.reset.2026-02-24T01-46-27.666Z", _archived())
    (sessions / "sessions.json").write_text(
        json.dumps({"agent:main:main": {"sessionId": "ab9b55c4", "sessionFile": str(claw)}})
    )
    monkeypatch.setenv("HOME", str(home))
    for name in ("PI_AGENT_DIR", "OPENCLAW_DIR"):
        monkeypatch.delenv(name, raising=False)
    result = cacheviz.scan(cache=False)
    found = {(loc.agent, loc.path.name) for loc in result.locations if loc.found}
    assert ("pi", "sessions") in found and ("openclaw", "agents") in found
    assert sorted(result.files["path"].to_list()) == sorted(map(str, (pi, claw, reset)))
    assert result.calls.height == 4 + 1 + 4
    assert "sessions.json" not in " ".join(map(str, result.files["path"].to_list()))


_EXAMPLE_FOLDERS = {"CACHEVIZ_PI_SESSIONS": "pi", "CACHEVIZ_OPENCLAW_SESSIONS": "openclaw"}


def _real(variable: str) -> list[Path]:
    folder = os.environ.get(variable)
    examples = os.environ.get("CACHEVIZ_EXAMPLES")  # public examples: <it>/pi/, <it>/openclaw/
    if not folder and examples and (Path(examples) / _EXAMPLE_FOLDERS[variable]).is_dir():
        folder = str(Path(examples) / _EXAMPLE_FOLDERS[variable])
    if not folder:
        return []
    return sorted(p for p in Path(folder).rglob("*.jsonl*") if p.is_file())


@pytest.mark.skipif(
    not (_real("CACHEVIZ_PI_SESSIONS") or _real("CACHEVIZ_OPENCLAW_SESSIONS")),
    reason="CACHEVIZ_PI_SESSIONS and CACHEVIZ_OPENCLAW_SESSIONS are not set",
)
@pytest.mark.parametrize(
    "path",
    _real("CACHEVIZ_PI_SESSIONS") + _real("CACHEVIZ_OPENCLAW_SESSIONS"),
    ids=lambda p: p.name,
)
def test_real_sessions_match_an_independent_reading(path):
    expected = independent(path)
    if expected["calls"] == 0:
        pytest.skip("no answered request")
    assert detect(path) in ("pi", "openclaw")
    assert _sums(cacheviz.load(path)) == expected
