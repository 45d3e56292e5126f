"""The cc-viewer reader: on logs and cx-viewer archives built here in the shape cc-viewer
1.6.219 and cx-viewer 1.1.20 write them, and against those tools themselves (their Node
sources, named by CACHEVIZ_CC_VIEWER and CACHEVIZ_CX_VIEWER; see docs/testing.md)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import cc_viewer, detect
from cacheviz.request._blocks import compact_json

sys.path.insert(0, str(Path(__file__).parents[1]))
from fake_provider import ANTHROPIC_USAGE, FakeProvider


def _tool_source(variable: str, name: str, entry: str) -> Path:
    """The Node source of a real tool, from ``variable``; skip when node or it is not set.

    Neither tool is on the npm registry: docs/testing.md says how to get each source.
    """
    if shutil.which("node") is None:
        pytest.skip(f"node is not on PATH (needed to run {name})")
    folder = os.environ.get(variable)
    if not folder:
        pytest.skip(f"{variable} is not set: point it at {name}'s source (docs/testing.md)")
    if not (Path(folder) / entry).is_file():
        pytest.fail(f"{variable}={folder} holds no {entry}; expected {name}'s source folder")
    return Path(folder)


SECRET = "sk-ant-api03-CCVSECRETCCVSECRET"
SYSTEM = [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}]
TOOLS = [
    {"name": n, "description": f"The {n} tool ✓", "input_schema": {"type": "object"}}
    for n in ("Edit", "Bash", "Task", "Read", "Write", "Glob")
]
DRIVER = """
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const m = await import(pathToFileURL(process.env.CCV_INTERCEPTOR).href);
await m._initPromise;
for (const r of JSON.parse(readFileSync(process.env.CCV_REQUESTS, 'utf8'))) {
  const res = await fetch(process.env.FAKE_URL + r.path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': process.env.CCV_KEY },
    body: r.text,
  });
  await res.text();
}
process.exit(0);
"""


def _main_agent_requests(turns: int) -> list[dict]:
    """A Claude Code-like main agent conversation, append-only, every 3rd call streamed."""
    messages = [{"role": "user", "content": "Fix the bug, café ✓"}]
    bodies = []
    for i in range(turns):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": SYSTEM, "tools": TOOLS}
        body["messages"] = list(messages)
        body["stream"] = i % 3 == 1
        bodies.append(body)
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": f"step {i}"}]},
            {"role": "user", "content": [{"type": "text", "text": f"go on {i}"}]},
        ]
    return bodies


@pytest.fixture(scope="module")
def viewed(tmp_path_factory):
    """Requests sent through cc-viewer's own interceptor (Node), as Claude Code would."""
    cc_viewer = _tool_source("CACHEVIZ_CC_VIEWER", "cc-viewer 1.6.219", "interceptor.js")
    node = shutil.which("node")
    home = tmp_path_factory.mktemp("ccv")
    bodies = _main_agent_requests(12)  # past the checkpoint of every 10th request
    subagent = {
        "model": "claude-haiku-4-5",
        "max_tokens": 32,
        "system": [{"type": "text", "text": "You are a file search specialist."}],
        "messages": [{"role": "user", "content": "find main.py"}],
    }
    bodies.insert(4, subagent)
    sent = [{"path": "/v1/messages", "text": compact_json(b)} for b in bodies]
    sent.insert(2, {"path": "/v1/messages/count_tokens", "text": compact_json(bodies[1])})
    (home / "requests.json").write_text(json.dumps(sent))
    (home / "driver.mjs").write_text(DRIVER)
    project = home / "myproject"
    project.mkdir()
    with FakeProvider() as fake:
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env.update(
            CCV_LOG_DIR=str(home / "logs"),
            CCV_INTERCEPTOR=str(cc_viewer / "interceptor.js"),
            CCV_REQUESTS=str(home / "requests.json"),
            CCV_KEY=SECRET,
            FAKE_URL=fake.url,
        )
        done = subprocess.run(
            [node, str(home / "driver.mjs")],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        received = [r for r in fake.received if r.path == "/v1/messages"]
    [log] = sorted((home / "logs" / "myproject").glob("myproject_*.jsonl"))
    return log, received


def test_real_cc_viewer_log_gives_the_requests_and_usage_the_provider_saw(viewed):
    log, received = viewed
    text = log.read_text()
    assert '"_deltaFormat":1' in text and '"inProgress":true' in text and "\n---\n" in text
    assert detect(log) == "cc-viewer" and detect(log.parent) == "cc-viewer"
    session = cacheviz.load(log)
    assert len(session.calls) == len(received) == 13
    assert session.ignored == {"token count request": 1}
    for call, sent in zip(session.calls, received, strict=True):
        assert call.model == json.loads(sent.body)["model"]
        # every block is byte for byte a slice of the body as sent (compact UTF-8 JSON,
        # which cc-viewer's JSON.stringify writes back), rebuilt delta entries included
        for block in call.blocks:
            assert session.contents[block.hash].raw in sent.body
        body = json.loads(sent.body)
        assert len(call.blocks) == len(body["messages"]) + len(body.get("tools", [])) + len(
            body.get("system", [])
        )
    rebuilt = [c.meta.get("rebuilt_from_delta", False) for c in session.calls]
    assert rebuilt.count(True) >= 9 and not rebuilt[0]  # checkpoints: first and 10th
    assert [c.reconstructed for c in session.calls] == rebuilt
    assert {c.meta["main_agent"] for c in session.calls} == {True, False}
    inclusive = sum(v for k, v in ANTHROPIC_USAGE.items() if k != "output_tokens")
    assert {c.usage.input_tokens for c in session.calls} == {inclusive}
    assert {c.usage.output_tokens for c in session.calls} == {15}  # message_delta's count
    assert SECRET[-4:] in text  # cc-viewer keeps a piece of the key in its headers ...
    kept = repr([c.meta for c in session.calls]) + repr(session.contents)
    assert SECRET[:8] not in kept and SECRET[-4:] not in kept  # ... cacheviz keeps none


# -- logs built here ------------------------------------------------------------------


def _entry(ts, body, *, usage=None, main=True, stream=False, url="/v1/messages", **extra):
    response = {"status": 200, "statusText": "OK", "headers": {}, "body": None}
    if usage is not None:
        response["body"] = {"id": f"msg_{ts}", "type": "message", "usage": usage}
    entry = {
        "timestamp": f"2026-04-01T08:00:{ts:02d}.000Z",
        "project": "app",
        "url": f"https://api.anthropic.com{url}",
        "method": "POST",
        "headers": {"x-api-key": "sk-ant-a****CRET"},
        "body": body,
        "response": response,
        "duration": 800,
        "isStream": stream,
        "isHeartbeat": False,
        "isCountTokens": url.endswith("count_tokens"),
        "mainAgent": main,
    }
    entry.update(extra)
    return entry


def _delta_log(path: Path, *, moved_marker: bool = False) -> list[dict]:
    """Four main-agent requests as cc-viewer stores them: a checkpoint, then deltas."""
    usage = {"input_tokens": 3, "cache_read_input_tokens": 1000, "output_tokens": 2}
    bodies = _main_agent_requests(4)
    if moved_marker:  # Claude Code moves the breakpoint to the newest message each turn
        for body in bodies:
            body["messages"] = [dict(m) for m in body["messages"]]
            last = body["messages"][-1]
            if isinstance(last["content"], list):
                last["content"] = [{**last["content"][0], "cache_control": {"type": "ephemeral"}}]
    lines = []
    previous = 0
    for i, body in enumerate(bodies):
        stored = json.loads(json.dumps(body))
        count = len(body["messages"])
        extra = {"_deltaFormat": 1, "_totalMessageCount": count, "_conversationId": "mainAgent"}
        extra["_isCheckpoint"] = i == 0
        if i:
            stored["messages"] = stored["messages"][previous:]
        previous = count
        flight = _entry(i, stored, **extra, requestId=f"r{i}", inProgress=True)
        flight["response"] = None
        lines += [flight, _entry(i, stored, usage=usage, **extra)]
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n---\n" for e in lines))
    return bodies


def test_deltas_are_rebuilt_to_the_requests_sent(tmp_path):
    log = tmp_path / "app_20260401_080000.jsonl"
    bodies = _delta_log(log)
    session = cacheviz.load(log)
    assert [c.line for c in session.calls] == [3, 7, 11, 15]  # the completed twins
    for call, body in zip(session.calls, bodies, strict=True):
        raw = [session.contents[b.hash].raw for b in call.blocks]
        expected = [
            compact_json(v).encode() for k in ("tools", "system", "messages") for v in body[k]
        ]
        assert raw == expected
    assert [c.reconstructed for c in session.calls] == [False, True, True, True]
    assert session.calls[0].usage.input_tokens == 1003
    assert session.calls[3].hashes[: len(session.calls[2].hashes)] == session.calls[2].hashes


def test_a_project_folder_loads_every_log_each_rebuilt_on_its_own(tmp_path):
    folder = tmp_path / "app"
    folder.mkdir()
    _delta_log(folder / "app_20260401_080000.jsonl")
    _delta_log(folder / "app_20260402_090000.jsonl")
    (folder / "notes.jsonl").write_text('{"note": 1}\n')
    assert detect(folder) == "cc-viewer"
    session = cacheviz.load(folder)
    assert len(session.calls) == 8
    assert [c.meta["log_file"] for c in session.calls].count("app_20260402_090000.jsonl") == 4
    one = cacheviz.load(folder / "app_20260401_080000.jsonl")
    first = [c for c in session.calls if c.meta["log_file"] == "app_20260401_080000.jsonl"]
    assert [c.hashes for c in first] == [c.hashes for c in one.calls]
    bad = folder / "app_20260403_090000.jsonl"
    bad.write_text(
        '{"timestamp": "x", "url": "u", "body": {}, "response": null, "mainAgent": true}\n---\n{oops\n'
    )
    with pytest.warns(CacheVizWarning, match=re.escape("app_20260403_090000.jsonl line 3")):
        assert len(cacheviz.load(folder, errors="skip").calls) == 8
    with pytest.raises(
        TranscriptError, match=re.escape("app_20260403_090000.jsonl:3: not valid JSON")
    ):
        cacheviz.load(folder)


def test_a_moved_cache_marker_is_not_in_a_delta_entry(tmp_path):
    """What Claude Code changed in earlier messages is lost by delta storage: the rebuilt
    request keeps the previous request's copy (why such calls are `reconstructed`)."""
    log = tmp_path / "app_20260401_080000.jsonl"
    bodies = _delta_log(log, moved_marker=True)
    session = cacheviz.load(log)
    third = session.calls[2]
    sent = [compact_json(m).encode() for m in bodies[2]["messages"]]
    got = [session.contents[b.hash].raw for b in third.blocks][-len(sent) :]
    assert got[-1] == sent[-1]  # the newest message, as sent
    assert b"cache_control" in got[2] and b"cache_control" not in sent[2]  # the old marker
    assert third.reconstructed and third.meta["rebuilt_from_delta"]


def test_a_broken_delta_is_mended_from_the_next_checkpoint(tmp_path):
    log = tmp_path / "app.jsonl"
    bodies = _main_agent_requests(3)
    extra = {"_deltaFormat": 1, "_conversationId": "mainAgent"}
    lines = [
        # the checkpoint before it was lost: the delta alone has 2 of 3 messages
        _entry(
            1,
            {**bodies[1], "messages": bodies[1]["messages"][1:]},
            usage={},
            **extra,
            _totalMessageCount=3,
            _isCheckpoint=False,
        ),
        _entry(2, bodies[2], usage={}, **extra, _totalMessageCount=5, _isCheckpoint=True),
    ]
    log.write_text("".join(json.dumps(e) + "\n---\n" for e in lines))
    session = cacheviz.load(log)
    first = session.calls[0]
    assert len(first.blocks) == len(TOOLS) + 1 + 3
    assert "delta_incomplete" not in first.meta
    lines.pop()  # no checkpoint to mend it from
    log.write_text("".join(json.dumps(e) + "\n---\n" for e in lines))
    assert cacheviz.load(log).calls[0].meta["delta_incomplete"] is True


def test_streams_heartbeats_failures_and_calls_in_flight(tmp_path):
    body = _main_agent_requests(1)[0]
    sse = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m",'
        '"usage":{"input_tokens":7,"cache_creation_input_tokens":50,"output_tokens":1}}}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\n\n'
    )
    raw = _entry(1, body, stream=True, main=False)
    raw["response"]["body"] = sse  # cc-viewer keeps the text when it cannot assemble it
    failed = _entry(2, body, usage={"input_tokens": 1})
    failed["response"]["status"] = 529
    beat = _entry(3, {}, url="/api/eval/sdk-abc", isHeartbeat=True)
    flight = _entry(4, body, inProgress=True, requestId="x")
    flight["response"] = None
    cut = _entry(5, "{not json", main=False)
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(e) + "\n---\n" for e in (raw, failed, beat, flight, cut)))
    session = cacheviz.load(log)
    [call] = session.calls
    assert (call.usage.input_tokens, call.usage.output_tokens) == (57, 9)
    assert call.meta["streamed"] and not call.meta["main_agent"]
    assert session.ignored == {
        "failed request (HTTP error)": 1,
        "heartbeat": 1,
        "request without a response (in flight or cut off)": 1,
        "request body that was not JSON": 1,
    }


def test_cx_viewer_responses_entries(tmp_path):
    body = {
        "model": "gpt-5-codex",
        "instructions": "Be a coder.",
        "input": [{"role": "user", "content": "hi"}],
    }
    usage = {
        "input_tokens": 900,
        "input_tokens_details": {"cached_tokens": 800},
        "output_tokens": 5,
    }
    entry = _entry(1, body, usage=usage, url="/backend-api/codex/responses", main=True)
    log = tmp_path / "cx.jsonl"
    log.write_text(json.dumps(entry) + "\n---\n")
    [call] = cacheviz.load(log).calls
    assert (call.api, call.provider) == ("responses", "openai")
    assert (call.usage.input_tokens, call.usage.cache_read_tokens) == (900, 800)


def test_a_bad_entry_names_its_line_and_skip_names_the_rebuilt_calls(tmp_path):
    log = tmp_path / "app.jsonl"
    _delta_log(log)
    lines = log.read_text().splitlines()
    lines[6] = lines[6][:40]  # the completed first delta entry, cut short
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(log)
    message = str(info.value)
    assert f"{log}:7: not valid JSON" in message and "\n" not in message
    with pytest.warns(CacheVizWarning, match=r"skipped 1 bad line.*rebuilt without"):
        session = cacheviz.load(log, errors="skip")
    assert len(session.calls) == 3


def test_scan_finds_cc_viewer_and_claude_tap_in_their_default_places(tmp_path, monkeypatch):
    from cacheviz.scanning._walk import default_locations, find_units

    home = tmp_path / "home"
    for name in ("CLAUDE_CONFIG_DIR", "CCV_LOG_DIR", "CLOUDTAP_DB", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    logs = home / ".claude" / "cc-viewer" / "app"
    logs.mkdir(parents=True)
    _delta_log(logs / "app_20260401_080000.jsonl")
    (home / ".claude" / "cc-viewer" / "profile.json").write_text("{}")
    store = home / ".local" / "share" / "claude-tap"
    store.mkdir(parents=True)
    _tap_store(store / "traces.sqlite3")
    found = {(loc.agent, loc.path) for loc in default_locations(home) if loc.found}
    assert ("cc-viewer", home / ".claude" / "cc-viewer") in found
    assert ("claude-tap", store / "traces.sqlite3") in found
    monkeypatch.delenv("CXV_LOG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    places = {(loc.agent, loc.path) for loc in default_locations(home)}
    assert ("cx-viewer", home / ".codex" / "cx-viewer") in places
    units = find_units([home / ".claude" / "cc-viewer", store])
    tap = [u for u in units if u.path.name == "traces.sqlite3"]
    assert [u.members for u in tap] == [(store / "traces.sqlite3", store / "traces.sqlite3-wal")]
    assert not [u for u in units if u.path.name.endswith(("-wal", "-shm", ".lock"))]
    result = cacheviz.scan([home / ".claude" / "cc-viewer", store], cache=tmp_path / "c")
    assert set(result.sessions["format"]) == {"cc-viewer", "claude-tap"}
    monkeypatch.setenv("CLOUDTAP_DB", str(tmp_path / "elsewhere.sqlite3"))
    monkeypatch.setenv("CCV_LOG_DIR", str(tmp_path / "ccv"))
    places = {(loc.agent, loc.path) for loc in default_locations(home)}
    assert ("claude-tap", tmp_path / "elsewhere.sqlite3") in places
    assert ("cc-viewer", tmp_path / "ccv") in places


def _tap_store(db: Path):
    """A claude-tap store left with its -wal (the writer is still open when scanned)."""
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, started_at TEXT)")
    conn.execute(
        "CREATE TABLE records (session_id TEXT, record_index INTEGER, turn INTEGER, "
        "timestamp TEXT, payload_json TEXT)"
    )
    conn.execute("INSERT INTO sessions VALUES ('s', '2026-04-01T08:00:00+00:00')")
    record = {
        "timestamp": "2026-04-01T08:00:01+00:00",
        "duration_ms": 10,
        "request": {"method": "POST", "path": "/v1/messages", "body": _main_agent_requests(1)[0]},
        "response": {"status": 200, "body": {"usage": {"input_tokens": 5, "output_tokens": 1}}},
    }
    conn.execute(
        "INSERT INTO records VALUES ('s', 1, 1, ?, ?)", (record["timestamp"], json.dumps(record))
    )
    conn.commit()
    shutil.copy(db, db.with_name("kept.sqlite3"))  # keep it as it is after the writer closes
    shutil.copy(db.with_name(db.name + "-wal"), db.with_name("kept.sqlite3-wal"))
    shutil.copy(db.with_name(db.name + "-shm"), db.with_name("kept.sqlite3-shm"))
    conn.close()
    db.with_name("kept.sqlite3").replace(db)
    db.with_name("kept.sqlite3-wal").replace(db.with_name(db.name + "-wal"))
    db.with_name("kept.sqlite3-shm").unlink()


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(0, 6000), junk=st.binary(max_size=20), width=st.integers(0, 60))
def test_fuzzed_logs_load_or_fail_in_one_line(tmp_path, cut, junk, width, loads_or_fails_cleanly):
    log = tmp_path / "good.jsonl"
    if not log.exists():
        _delta_log(log)
    good = log.read_bytes()
    at = cut % len(good)
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(good[:at] + junk + good[at + width :])
    loads_or_fails_cleanly(
        path, lambda p, e: cacheviz.load(p, format="cc-viewer", errors=e), secret="sk-ant-a****CRET"
    )


# -- cx-viewer's Log Store V2 ---------------------------------------------------------

CX_DRIVER = """
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const url = pathToFileURL(process.env.CXV + '/lib/log-v2/coordinator.js').href;
const { LogV2WriteCoordinator } = await import(url);
const store = new LogV2WriteCoordinator({ rootDir: process.env.ROOT, durability: 'durable' });
const context = { source: 'proxy', cwd: process.env.CWD, projectId: 'proj' };
for (const entry of JSON.parse(readFileSync(process.env.ENTRIES, 'utf8'))) {
  const result = store.writeEntry(entry, context);
  if (!result.written) throw new Error(JSON.stringify(result));
}
"""


def _codex_entries() -> tuple[list[dict], list[dict]]:
    """Codex Responses requests as cx-viewer's interceptor logs them: in flight, then done.

    The fourth request follows a compaction: its input is shorter than the third's."""
    tools = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
    items = [{"role": "user", "content": [{"type": "input_text", "text": "fix it ✓"}]}]
    bodies = []
    for i in range(4):
        if i == 3:
            items = [
                items[0],
                {"role": "user", "content": [{"type": "input_text", "text": "summary"}]},
            ]
        bodies.append(
            {
                "model": "gpt-5-codex",
                "instructions": "You are Codex.",
                "input": list(items),
                "tools": tools,
                "stream": True,
            }
        )
        items = [
            *items,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"s{i}"}],
            },
            {"role": "user", "content": [{"type": "input_text", "text": f"go {i}"}]},
        ]
    entries = []
    for i, body in enumerate(bodies):
        base = {
            "timestamp": f"2026-04-01T08:00:0{i}.000Z",
            "project": "proj",
            "url": "https://chatgpt.com/backend-api/codex/responses",
            "method": "POST",
            "headers": {"authorization": "Bearer " + SECRET},
            "body": body,
            "response": None,
            "duration": 0,
            "isStream": True,
            "mainAgent": True,
        }
        usage = {
            "input_tokens": 1000 + i,
            "input_tokens_details": {"cached_tokens": 900},
            "output_tokens": 5,
        }
        done = {
            **base,
            "duration": 40,
            "response": {
                "status": 200,
                "statusText": "OK",
                "headers": {},
                "body": {"id": f"resp_{i}", "usage": usage},
            },
        }
        entries += [{**base, "requestId": f"r{i}", "inProgress": True}, done]
    return bodies, entries


def _object(folder: Path, value) -> dict:
    """Store ``value`` as cx-viewer stores a content object; return its reference."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
    digest = hashlib.sha256(text).hexdigest()
    path = f"objects/{digest[:2]}/{digest[2:4]}/{digest}.json"
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    (folder / path).write_bytes(text + b"\n")
    return {"algorithm": "sha256", "bytes": len(text), "hash": digest, "path": path}


def _append(file: Path, thread: str, record: dict) -> dict:
    """Append one JSON line to a thread file; return the reference cx-viewer keeps to it."""
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    data = line.encode() + b"\n"
    offset = file.stat().st_size if file.exists() else 0
    with file.open("ab") as handle:
        handle.write(data)
    checksum = f"sha256:{hashlib.sha256(data).hexdigest()}"
    return {"checksum": checksum, "length": len(data), "offset": offset, "thread": thread}


def _write_archive(project: Path, entries: list[dict]) -> Path:
    """A Log Store V2 session archive as cx-viewer 1.1.20 writes one for these entries.

    Laid out after an archive cx-viewer's own LogV2WriteCoordinator wrote for them: each
    request is revision 1 (in flight: meta, headers, body without its input) and revision
    2 (done: meta, response meta, headers and body); the input list is a separate record
    (retain / remove / append) bound at ``root.body.input``; credentials are redacted.
    """
    session = "synthetic:proxy:0d9f3c1e-7b2a-4c55-9e01-6a7b8c9d0e1f:5b1f"
    folder = project / f"20260401_{session.replace(':', '~3a')}.cxvsession"
    thread = "t_" + hashlib.sha256(session.encode()).hexdigest()
    (folder / "threads" / thread).mkdir(parents=True)
    manifest = {"kind": "cx-viewer.session-archive", "version": 2, "sessionId": session}
    manifest.update(rootThreadId=session, projectId=project.name, source="proxy", state="active")
    (folder / "manifest.json").write_text(json.dumps(manifest, sort_keys=True))
    entries_file = folder / "threads" / thread / "entries.jsonl"
    input_file = folder / "threads" / thread / "input.jsonl"
    items: list[str] = []  # the thread's input so far, as object hashes
    keys: dict[str, str] = {}
    revisions: dict[str, int] = {}
    input_revision = 0
    for seq, entry in enumerate(entries, 1):
        txn = f"26b9eb76-ea58-4287-b16f-54405d93{seq:04d}"
        request_id = entry.get("requestId") or f"done-{entry['timestamp']}"
        key = keys.setdefault(
            entry["timestamp"], "e_" + hashlib.sha256(request_id.encode()).hexdigest()
        )
        revision = revisions[key] = revisions.get(key, 0) + 1
        headers = {
            k: "[REDACTED]" if k == "authorization" else v for k, v in entry["headers"].items()
        }
        meta = {k: v for k, v in entry.items() if k not in ("headers", "body")}
        changes: dict = {}
        binding = {"path": "root.body.input", "ref": None, "revision": input_revision}
        if revision == 1:
            body = {k: v for k, v in entry["body"].items() if k != "input"}
            changes.update({"root.headers": headers, "root.body": body})
            refs = [_object(folder, item) for item in entry["body"]["input"]]
            hashes = [r["hash"] for r in refs]
            retain = 0
            while retain < min(len(items), len(hashes)) and items[retain] == hashes[retain]:
                retain += 1
            input_revision += 1
            operation = {
                "kind": "cx-viewer.input-revision",
                "version": 1,
                "path": "root.body.input",
                "revision": input_revision,
                "baseRevision": input_revision - 1,
                "retain": retain,
                "remove": len(items) - retain,
                "append": refs[retain:],
                "txnId": txn,
            }
            binding = {
                "path": "root.body.input",
                "ref": _append(input_file, thread, operation),
                "revision": input_revision,
            }
            items = hashes
        if isinstance(entry.get("response"), dict):
            response = entry["response"]
            meta.pop("response")
            changes["response.meta"] = {k: response[k] for k in ("status", "statusText")}
            changes.update(
                {"response.headers": response["headers"], "response.body": response["body"]}
            )
        changes["root.meta"] = meta
        record = {
            "kind": "cx-viewer.entry-revision",
            "version": 1,
            "entryKey": key,
            "revision": revision,
            "baseRevision": revision - 1,
            "delete": [],
            "set": {part: _object(folder, value) for part, value in sorted(changes.items())},
            "inputBinding": binding,
            "txnId": txn,
        }
        timeline = {
            "kind": "cx-viewer.timeline-record",
            "version": 1,
            "seq": seq,
            "entryKey": key,
            "entryRevision": revision,
            "inputRevision": input_revision,
            "entryRef": _append(entries_file, thread, record),
            "agentRole": "main",
            "phase": "completed",
            "threadId": session,
            "parentThreadId": None,
            "turnId": None,
            "timestamp": entry["timestamp"],
            "committedAt": entry["timestamp"],
            "eventId": f"aa8fca0f-dd77-4e81-b47c-b68ba163{seq:04d}",
            "txnId": txn,
        }
        with (folder / "timeline.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(timeline, sort_keys=True, separators=(",", ":")) + "\n")
    return folder


@pytest.fixture(scope="module", params=["built here", "cx-viewer"])
def archive(request, tmp_path_factory):
    """A cx-viewer archive of the Codex entries: built here, and by cx-viewer itself."""
    bodies, entries = _codex_entries()
    if request.param == "built here":
        project = tmp_path_factory.mktemp("cxv-built") / "proj"
        return _write_archive(project, entries), bodies
    cx_viewer = _tool_source("CACHEVIZ_CX_VIEWER", "cx-viewer 1.1.20", "lib/log-v2/coordinator.js")
    home = tmp_path_factory.mktemp("cxv")
    (home / "entries.json").write_text(json.dumps(entries, ensure_ascii=False))
    (home / "driver.mjs").write_text(CX_DRIVER)
    env = {**os.environ, "CXV": str(cx_viewer), "ROOT": str(home / "logs"), "CWD": str(home)}
    env["ENTRIES"] = str(home / "entries.json")
    done = subprocess.run(
        [shutil.which("node"), str(home / "driver.mjs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [folder] = (home / "logs" / "proj").glob("*.cxvsession")
    return folder, bodies


def _sorted(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()


def test_a_cx_viewer_archive_gives_the_requests_with_sorted_keys(archive):
    folder, bodies = archive
    assert detect(folder) == "cc-viewer" and detect(folder.parent) == "cc-viewer"
    session = cacheviz.load(folder)
    assert len(session.calls) == 4
    for i, (call, body) in enumerate(zip(session.calls, bodies, strict=True)):
        raw = [session.contents[b.hash].raw for b in call.blocks]
        expected = [
            _sorted(body["instructions"]),
            *map(_sorted, body["tools"]),
            *map(_sorted, body["input"]),
        ]
        assert raw == expected  # every item, its keys sorted by cx-viewer's store
        assert (call.api, call.model, call.reconstructed) == ("responses", "gpt-5-codex", True)
        assert (call.usage.input_tokens, call.usage.cache_read_tokens) == (1000 + i, 900)
        assert call.meta["request_bytes"] == cc_viewer.SORTED_BYTES
    kept = repr([c.meta for c in session.calls]) + repr(session.contents)
    assert SECRET not in kept
    assert [c.hashes for c in cacheviz.load(folder.parent).calls] == [
        c.hashes for c in session.calls
    ]


def test_a_damaged_archive_names_its_timeline_line(archive, tmp_path):
    folder, _ = archive
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    timeline = copy / "timeline.jsonl"
    text = timeline.read_text()
    timeline.write_text(text + text.splitlines()[0][:50])  # a record still being written
    assert cacheviz.load(copy).ignored == {"timeline record still being written": 1}
    [obj] = [p for p in copy.glob("objects/*/*/*.json") if b"summary" in p.read_bytes()]
    obj.write_text(obj.read_text().replace("summary", "SUMMARY"))
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(copy)
    assert "timeline.jsonl:" in str(info.value) and "does not match its hash" in str(info.value)
    with pytest.warns(CacheVizWarning, match="skipped 1 bad"):
        assert len(cacheviz.load(copy, errors="skip").calls) == 3


@pytest.mark.parametrize("length", [2**40, -5])
def test_a_reference_length_outside_its_file_is_one_line(archive, tmp_path, length):
    """Issue 29 item 14: a reference length of 2^40 was a traceback (a read of 1 TiB)."""
    folder, _ = archive
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    timeline = copy / "timeline.jsonl"
    text = timeline.read_text()
    timeline.write_text(re.sub(r'"length":\s*\d+', f'"length":{length}', text, count=1))
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(copy)
    message = str(info.value)
    assert "timeline.jsonl:1:" in message and "outside the file" in message
    assert "\n" not in message


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    target=st.sampled_from(["timeline.jsonl", "entries", "input"]),
    cut=st.integers(0, 3000),
    junk=st.binary(max_size=12),
)
def test_fuzzed_archives_load_or_fail_in_one_line(
    archive, tmp_path, target, cut, junk, loads_or_fails_cleanly
):
    folder, _ = archive
    copy = tmp_path / f"fz-{target}-{cut}-{junk.hex()}" / folder.name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(folder, copy)
    path = (
        copy / "timeline.jsonl"
        if target == "timeline.jsonl"
        else next(copy.glob(f"threads/*/{'entries' if target == 'entries' else 'input'}.jsonl"))
    )
    data = path.read_bytes()
    at = cut % len(data)
    path.write_bytes(data[:at] + junk + data[at + cut % 23 :])
    loads_or_fails_cleanly(
        copy, lambda p, e: cacheviz.load(p, format="cc-viewer", errors=e), secret=SECRET
    )


def test_entries_sharing_timestamp_and_url_are_kept_apart_by_content(tmp_path):
    """Issue 29 item 5: two calls in one millisecond to one URL are two calls; a request
    written in flight then complete, or written twice, is one."""
    first, second = _main_agent_requests(2)
    usage = {"input_tokens": 10, "output_tokens": 1}
    a_flight = _entry(1, first, main=False, inProgress=True)
    a_flight["response"] = None
    a_done = _entry(1, first, usage=usage, main=False)
    b_done = _entry(1, second, usage={"input_tokens": 20, "output_tokens": 2}, main=False)
    again = _entry(1, first, usage={"input_tokens": 30, "output_tokens": 3}, main=False)
    entries = (a_flight, b_done, a_done, a_done, again)
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(e) + "\n---\n" for e in entries))
    calls = cacheviz.load(log).calls
    # a's in-flight copy completed at its place; a written twice once; a second answer
    # to the same body (a retry in the same millisecond) is a call of its own
    assert [c.usage.input_tokens for c in calls] == [10, 20, 30]


def test_a_cx_viewer_archive_expands_its_objects_within_the_budget(tmp_path, monkeypatch):
    """Issue 29 item 8: every use of an object is a copy; past the reference-expansion
    budget (here lowered below what the archive expands to) the archive is refused in
    one line naming it and the limit."""
    from cacheviz._limits import LimitError

    _bodies, entries = _codex_entries()
    folder = _write_archive(tmp_path / "proj", entries)
    loaded = cacheviz.load(folder)
    monkeypatch.setenv("CACHEVIZ_MIN_EXPANSION_MB", "0.001")
    monkeypatch.setenv("CACHEVIZ_MAX_EXPANSION", "0.01")
    with pytest.raises(LimitError) as caught:
        cacheviz.load(folder)
    message = str(caught.value)
    assert message.startswith(f"{folder}: its references expand to more than")
    assert "\n" not in message and "CACHEVIZ_MAX_EXPANSION" in message
    monkeypatch.delenv("CACHEVIZ_MIN_EXPANSION_MB")
    monkeypatch.delenv("CACHEVIZ_MAX_EXPANSION")
    assert len(cacheviz.load(folder).calls) == len(loaded.calls) > 0
