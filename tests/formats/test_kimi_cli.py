"""Kimi CLI wire logs (``~/.kimi/sessions/<hash>/<session>/wire.jsonl``), protocols 1.3 and 1.9.

The fixtures are written here in Kimi CLI's structure (read from its source: ``wire/file.py``
writes ``{"timestamp", "message": {"type", "payload"}}`` after a metadata line;
``soul/kimisoul.py`` sends one ``StatusUpdate`` per step after the answer; sub-agent events
are wrapped in ``SubagentEvent``). Real sessions, when you have some, are read from
``$CACHEVIZ_KIMI_SESSIONS`` (a folder searched for ``wire.jsonl``; nothing is copied).
"""

import hashlib
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect, kimi_cli

T = 1_770_983_400.0
WORK_DIR = "/home/dev/app"


def _rec(t: float, kind: str, payload: dict) -> dict:
    return {"timestamp": T + t, "message": {"type": kind, "payload": payload}}


def _usage(other: int, out: int, read: int, create: int = 0) -> dict:
    return {
        "input_other": other,
        "output": out,
        "input_cache_read": read,
        "input_cache_creation": create,
    }


def _status(t: float, usage: dict | None, message_id: str | None, **extra) -> dict:
    payload = {"context_usage": 0.024, "token_usage": usage, "message_id": message_id, **extra}
    return _rec(t, "StatusUpdate", {k: v for k, v in payload.items() if v is not None})


def _sub(t: float, inner: dict, **ids) -> dict:
    return _rec(t, "SubagentEvent", {**ids, "event": inner["message"]})


def _tool_call(t: float, call_id: str, name: str, args: dict) -> dict:
    function = {"name": name, "arguments": json.dumps(args)}
    return _rec(t, "ToolCall", {"type": "function", "id": call_id, "function": function})


def _tool_result(t: float, call_id: str, output: str) -> dict:
    value = {"is_error": False, "output": output, "message": "", "display": []}
    return _rec(t, "ToolResult", {"tool_call_id": call_id, "return_value": value})


def session_13() -> list[dict]:
    """Protocol 1.3: a tool step, a Task sub-agent (``task_tool_call_id``), a usage report
    repeated, a status update without usage."""
    task = {"task_tool_call_id": "tc2"}
    return [
        {"type": "metadata", "protocol_version": "1.3"},
        _rec(0, "TurnBegin", {"user_input": "hello ✓"}),
        _rec(1, "StepBegin", {"n": 1}),
        _rec(2, "ContentPart", {"type": "think", "think": "Let me look."}),
        _rec(3, "ContentPart", {"type": "text", "text": "Reading "}),
        _rec(3.1, "ContentPart", {"type": "text", "text": "a.py."}),
        _tool_call(4, "tc1", "ReadFile", {"path": "a.py"}),
        _status(5, _usage(1508, 205, 4864), "chatcmpl-A1"),
        _tool_result(6, "tc1", "print(1)"),
        _rec(7, "StepBegin", {"n": 2}),
        _tool_call(8, "tc2", "Task", {"description": "find x", "prompt": "Where is x?"}),
        _status(9, _usage(120, 40, 6400), "chatcmpl-A2"),
        _sub(10, _rec(10, "TurnBegin", {"user_input": "Where is x?"}), **task),
        _sub(11, _rec(11, "StepBegin", {"n": 1}), **task),
        _sub(12, _rec(12, "ContentPart", {"type": "text", "text": "x is in b.py"}), **task),
        _sub(13, _status(13, _usage(900, 30, 2048), "chatcmpl-S1"), **task),
        _sub(14, _rec(14, "TurnEnd", {}), **task),
        _tool_result(15, "tc2", "x is in b.py"),
        _rec(16, "StepBegin", {"n": 3}),
        _rec(17, "ContentPart", {"type": "text", "text": "Done."}),
        _status(18, _usage(60, 12, 6528), "chatcmpl-A3"),
        _status(18.5, _usage(60, 12, 6528), "chatcmpl-A3"),  # the same response, again
        _rec(19, "StatusUpdate", {"plan_mode": False}),
        _rec(20, "TurnEnd", {}),
    ]


def session_19() -> list[dict]:
    """Protocol 1.9: an interrupted step, an Agent sub-agent (``agent_id``), an all-zero
    usage report, a compaction, a cache write."""
    agent = {"parent_tool_call_id": "tc9", "agent_id": "a1b2c3d4", "subagent_type": "coder"}
    return [
        {"type": "metadata", "protocol_version": "1.9"},
        _rec(0, "TurnBegin", {"user_input": [{"type": "text", "text": "refactor"}]}),
        _rec(1, "StepBegin", {"n": 1}),
        _rec(2, "ContentPart", {"type": "text", "text": "partial"}),
        _rec(3, "StepInterrupted", {}),
        _rec(10, "TurnBegin", {"user_input": "try again"}),
        _rec(11, "StepBegin", {"n": 1}),
        _rec(12, "ContentPart", {"type": "text", "text": "ok"}),
        _tool_call(13, "tc9", "Agent", {"description": "split", "prompt": "Split a.py"}),
        _status(
            14,
            _usage(3000, 100, 0),
            "chatcmpl-B1",
            context_tokens=3000,
            max_context_tokens=262144,
            plan_mode=False,
        ),
        _sub(15, _rec(15, "TurnBegin", {"user_input": "Split a.py"}), **agent),
        _sub(16, _rec(16, "StepBegin", {"n": 1}), **agent),
        _sub(17, _status(17, _usage(500, 25, 1024), "chatcmpl-BS1"), **agent),
        _sub(18, _status(18, _usage(0, 0, 0), None), **agent),
        _tool_result(19, "tc9", "split into b.py"),
        _rec(20, "CompactionBegin", {}),
        _rec(21, "CompactionEnd", {}),
        _rec(22, "StepBegin", {"n": 2}),
        _rec(23, "ContentPart", {"type": "text", "text": "Refactored."}),
        _status(24, _usage(800, 50, 2304, 64), "chatcmpl-B2"),
        _rec(25, "TurnEnd", {}),
    ]


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    path.write_text(text, encoding="utf-8")
    return path


def kimi_home(root: Path, *, config: bool = True) -> tuple[Path, Path, Path]:
    """A ``~/.kimi`` with two sessions as Kimi CLI lays them out; returns it and both wires."""
    home = root / ".kimi"
    if config:
        (home).mkdir(parents=True)
        (home / "config.toml").write_text(
            'default_model = "k2"\n\n'
            '[providers.moonshot]\ntype = "kimi"\nbase_url = "https://api.moonshot.ai/v1"\n'
            'api_key = "sk-not-a-real-key"\n\n'
            '[models.k2]\nprovider = "moonshot"\nmodel = "kimi-k2-turbo-preview"\n'
            "max_context_size = 262144\n"
        )
    group = home / "sessions" / hashlib.md5(WORK_DIR.encode()).hexdigest()
    old = _write(group / "6f1c0e4e-0000-4000-8000-000000000013" / "wire.jsonl", session_13())
    (old.parent / "context.jsonl").write_text('{"role": "_usage", "token_count": 6372}\n')
    (old.parent / "context_sub_1.jsonl").write_text('{"role": "user", "content": "Where is x?"}\n')
    new = _write(group / "6f1c0e4e-0000-4000-8000-000000000019" / "wire.jsonl", session_19())
    (new.parent / "context.jsonl").write_text('{"role": "_system_prompt", "content": "You"}\n')
    (new.parent / "state.json").write_text('{"title": "refactor"}')
    sub = new.parent / "subagents" / "a1b2c3d4"
    inner = [  # the sub-agent's own log: the same events, unwrapped
        {"timestamp": r["timestamp"], "message": r["message"]["payload"]["event"]}
        for r in session_19()
        if r.get("message", {}).get("type") == "SubagentEvent"
    ]
    _write(sub / "wire.jsonl", [{"type": "metadata", "protocol_version": "1.9"}, *inner])
    (sub / "meta.json").write_text('{"status": "done", "subagent_type": "coder"}')
    (sub / "context.jsonl").write_text('{"role": "user", "content": "Split a.py"}\n')
    (sub / "prompt.txt").write_text("Split a.py")
    (sub / "output").write_text("split into b.py")
    return home, old, new


def independent(path: Path) -> dict[str, int]:
    """The calls and usage of a wire log by the format's rules, without the reader:
    each StatusUpdate (a sub-agent's too) with non-zero token_usage, once per message_id."""
    seen: set[str] = set()
    out = {"calls": 0, "input": 0, "read": 0, "write": 0, "output": 0}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        if message["type"] == "SubagentEvent":
            message = message["payload"]["event"]
        if message["type"] != "StatusUpdate":
            continue
        usage = message["payload"].get("token_usage") or {}
        parts = [usage.get(k) or 0 for k in kimi_cli._USAGE_KEYS]
        if not any(parts):
            continue
        mid = message["payload"].get("message_id")
        if mid in seen:
            continue
        seen.add(mid)
        other, output, read, write = parts
        out["calls"] += 1
        out["input"] += other + read + write
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


def test_protocol_13_calls_usage_and_sub_agent(tmp_path):
    _, old, _ = kimi_home(tmp_path)
    assert detect(old) == "kimi-cli"
    session = cacheviz.load(old)
    # by hand: A1, A2, the sub-agent's S1, A3 (A3 reported twice, counted once)
    by_hand = {
        "calls": 4,
        "input": (1508 + 4864) + (120 + 6400) + (900 + 2048) + (60 + 6528),
        "read": 4864 + 6400 + 2048 + 6528,
        "write": 0,
        "output": 205 + 40 + 30 + 12,
    }
    assert by_hand == independent(old) == _sums(session)
    assert [c.meta["message_id"] for c in session.calls] == [
        "chatcmpl-A1",
        "chatcmpl-A2",
        "chatcmpl-S1",
        "chatcmpl-A3",
    ]
    assert [c.thread_hint for c in session.calls] == ["main", "main", "sub-agent tc2", "main"]
    assert session.calls[2].parent_hint == "main"
    assert {c.model for c in session.calls} == {"kimi-k2-turbo-preview"}  # config.toml's
    assert session.calls[0].usage.provenance == "derived"
    assert session.ignored["repeated usage report (same message_id)"] == 1
    assert session.ignored["status update without token usage"] == 1
    first, second = session.calls[0], session.calls[1]
    # the second request re-sends the first: user turn, answer with its tool call, result
    assert second.hashes[: len(first.hashes)] == first.hashes
    assert len(second.hashes) == len(first.hashes) + 2
    assert first.ts.timestamp() == T + 1  # the step's start, not the status update's time


def test_protocol_19_interrupt_compaction_and_agent_id(tmp_path):
    _, _, new = kimi_home(tmp_path)
    session = cacheviz.load(new)
    by_hand = {
        "calls": 3,
        "input": 3000 + (500 + 1024) + (800 + 2304 + 64),
        "read": 1024 + 2304,
        "write": 64,
        "output": 100 + 25 + 50,
    }
    assert by_hand == independent(new) == _sums(session)
    assert [c.thread_hint for c in session.calls] == ["main", "sub-agent a1b2c3d4", "main"]
    assert session.calls[0].meta["wire_protocol"] == "1.9"
    assert session.ignored["StepInterrupted (the step got no answer; not a call)"] == 1
    # the interrupted step's partial answer is not in the next request
    first = session.calls[0]
    texts = [session.contents[h].value for h in first.hashes[1:]]
    assert "partial" not in json.dumps(texts) and "try again" in json.dumps(texts)
    # after the compaction the request holds only what followed it
    last = session.calls[-1]
    assert len(last.hashes) == 1  # the unlogged prefix (with the summary, not logged)


def test_without_a_config_the_model_is_assumed_and_said(tmp_path):
    _, old, _ = kimi_home(tmp_path, config=False)
    session = cacheviz.load(old)
    assert {c.model for c in session.calls} == {"kimi-for-coding"}
    assert session.calls[0].meta["model_source"].startswith("assumed")


def test_scan_finds_the_sessions_and_reads_sub_agents_once(tmp_path, monkeypatch):
    home, old, new = kimi_home(tmp_path / "home")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KIMI_SHARE_DIR", raising=False)
    result = cacheviz.scan(cache=False)
    found = {str(loc.path) for loc in result.locations if loc.agent == "kimi-cli" and loc.found}
    assert found == {str(home / "sessions")}
    assert sorted(result.files["path"].to_list()) == sorted([str(old), str(new)])
    assert result.calls.height == 4 + 3


def test_a_corrupt_count_is_one_line_naming_the_field(tmp_path):
    records = session_13()
    records[7]["message"]["payload"]["token_usage"]["input_cache_read"] = "4864"
    path = _write(tmp_path / "wire.jsonl", records)
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "\n" not in message and f"{path}:8" in message
    assert "`message.payload.token_usage.input_cache_read` is a string" in message
    with pytest.warns(CacheVizWarning, match=r"usage set to null for 1 call.*line 8"):
        session = cacheviz.load(path, errors="skip")
    assert [c.usage is None for c in session.calls] == [True, False, False, False]


def test_a_log_of_another_agent_with_a_wire_envelope_is_not_claimed(tmp_path):
    # Kimi Code (the TypeScript rewrite) keeps a metadata line but dotted event types
    path = _write(
        tmp_path / "wire.jsonl",
        [
            {"type": "metadata", "protocol_version": "1.4", "created_at": 1784110800000},
            {"type": "context.append_message", "time": 1784110801000, "message": {"role": "user"}},
        ],
    )
    assert not kimi_cli.detect(path, path.read_bytes())


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_lines_load_or_fail_in_one_line(tmp_path_factory, data, loads_or_fails_cleanly):
    lines = [json.dumps(r) for r in session_13()]
    junk = st.one_of(
        st.just("{oops"),
        st.just("[1]"),
        st.just(json.dumps({"timestamp": "x", "message": {"type": "StatusUpdate", "payload": 3}})),
        st.just(json.dumps(_status(1, {"input_other": -1, "output": 2}, "m"))),
        st.just(json.dumps(_sub(1, {"message": 7}))),
        st.just(json.dumps(_rec(1, "TurnBegin", {"user_input": 5}))),
        st.text(max_size=20),
    )
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(lines) - 1))
        lines[at] = data.draw(junk)
    path = tmp_path_factory.mktemp("kimi") / "wire.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="kimi-cli", errors=e))


def _real_wires() -> list[Path]:
    folder = os.environ.get("CACHEVIZ_KIMI_SESSIONS")
    examples = os.environ.get("CACHEVIZ_EXAMPLES")  # public examples: <it>/kimi-cli/
    if not folder and examples and (Path(examples) / "kimi-cli").is_dir():
        folder = str(Path(examples) / "kimi-cli")
    if not folder:
        return []
    return sorted(Path(folder).rglob("wire.jsonl"))


@pytest.mark.skipif(
    not _real_wires(), reason="CACHEVIZ_KIMI_SESSIONS (or CACHEVIZ_EXAMPLES) is not set"
)
@pytest.mark.parametrize("wire", _real_wires(), ids=lambda p: p.parent.name)
def test_real_kimi_sessions_match_an_independent_reading(wire):
    if "subagents" in wire.parts:
        pytest.skip("a sub-agent's log: its events are in its session's wire.jsonl")
    expected = independent(wire)
    if expected["calls"] == 0:
        pytest.skip("no step reported usage")
    assert detect(wire) == "kimi-cli"
    assert _sums(cacheviz.load(wire)) == expected
