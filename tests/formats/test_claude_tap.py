"""The claude-tap reader: against the real claude-tap in front of the fake provider, and
on stores, exports and JSONL records built here in claude-tap's documented shapes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import claude_tap, detect
from cacheviz.reported._usage import normalize_usage
from cacheviz.request._blocks import BLOCK_KEYS, compact_json

sys.path.insert(0, str(Path(__file__).parents[1]))
from fake_provider import (
    ANTHROPIC_USAGE,
    OPENAI_CHAT_USAGE,
    OPENAI_RESPONSES_USAGE,
    FakeProvider,
)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-ant-api03-TAPSECRETTAPSECRET"
TOOL = {
    "name": "read_file",
    "description": "Read a file from the workspace and return its text. " * 12,  # a blob
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
SYSTEM = [{"type": "text", "text": "You are terse. Ünïcode ✓. " * 30}]


# -- claude-tap itself ----------------------------------------------------------------


def _claude_tap_command() -> list[str] | None:
    """How to start claude-tap here: $CACHEVIZ_CLAUDE_TAP, .venv-tap, this Python, PATH."""
    explicit = os.environ.get("CACHEVIZ_CLAUDE_TAP")
    if explicit:
        return [explicit]
    own = ROOT / ".venv-tap" / "bin" / "claude-tap"
    if own.is_file():
        return [str(own)]
    try:
        import claude_tap as _  # noqa: F401  (installed with the `tap` extra)
    except ImportError:
        found = shutil.which("claude-tap")
        return [found] if found else None
    return [sys.executable, "-m", "claude_tap"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def tapped(tmp_path_factory):
    """Real SDK calls through a real claude-tap reverse proxy in front of the fake provider.

    Yields ``(traces.sqlite3, what the provider received, the claude-tap command)``;
    claude-tap is stopped with SIGTERM, as a user's Ctrl+C would, so records may still sit
    in the ``-wal`` file.
    """
    command = _claude_tap_command()
    if command is None:
        pytest.skip(
            "claude-tap is not installed: `make test` installs it in .venv-tap "
            "(pip install 'claude-tap==0.1.146'), or set CACHEVIZ_CLAUDE_TAP"
        )
    anthropic = pytest.importorskip("anthropic")
    openai = pytest.importorskip("openai")
    import httpx

    home = tmp_path_factory.mktemp("tap")
    db = home / "store" / claude_tap.DB_NAME
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "xdg"),
        "CLOUDTAP_DB": str(db),
    }
    with FakeProvider() as fake:
        port = _free_port()
        args = [
            *command,
            "--tap-no-launch",
            "--tap-host",
            "127.0.0.1",
            "--tap-port",
            str(port),
            "--tap-target",
            fake.url,
            "--tap-no-live",
            "--tap-no-open",
        ]
        log = (home / "claude-tap.log").open("w")
        proc = subprocess.Popen(args, env=env, cwd=home, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(
                            f"claude-tap did not start: {(home / 'claude-tap.log').read_text()}"
                        )
                    time.sleep(0.1)
            base = f"http://127.0.0.1:{port}"
            _anthropic_calls(anthropic.Anthropic(base_url=base, api_key=SECRET, max_retries=0))
            _openai_calls(openai.OpenAI(base_url=f"{base}/v1", api_key=SECRET, max_retries=0))
            httpx.get(f"{base}/v1/models", headers={"x-api-key": SECRET}, timeout=10)
            _wait_for_records(db, 7)  # 6 calls and the probe
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()
        received = list(fake.received)
    yield db, received, command


def _anthropic_calls(client) -> None:
    first = [{"role": "user", "content": [{"type": "text", "text": "Read notes.txt, café."}]}]
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=64,
        system=SYSTEM,
        tools=[TOOL],
        messages=first,
    )
    tool_round = [
        *first,
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "n"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x" * 600}],
        },
    ]
    with client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=64, system=SYSTEM, tools=[TOOL], messages=tool_round
    ) as stream:
        for _ in stream:
            pass


def _openai_calls(client) -> None:
    messages = [
        {"role": "system", "content": "You are terse. " * 40},
        {"role": "user", "content": "Say hello ✓"},
    ]
    client.chat.completions.create(model="gpt-4o", messages=messages)
    stream = client.chat.completions.create(
        model="gpt-4o", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    for _ in stream:
        pass
    client.responses.create(model="gpt-5", instructions="Be brief ✓. " * 80, input="hello")
    for _ in client.responses.create(model="gpt-5", input="hello again ✓", stream=True):
        pass


def _wait_for_records(db: Path, count: int) -> None:
    """claude-tap writes a record after the response: wait until all are in."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with claude_tap.open_store(db) as conn:
                if conn.execute("SELECT count(*) FROM records").fetchone()[0] >= count:
                    return
        except (TranscriptError, sqlite3.Error):
            pass
        time.sleep(0.1)


def _elements(body: dict, api: str) -> list[bytes]:
    """The provider-visible elements of a body, serialized as cacheviz hashes them."""
    out = []
    for key in sorted(BLOCK_KEYS[api]):
        value = body.get(key)
        if value is not None:
            out += [
                compact_json(v).encode() for v in (value if isinstance(value, list) else [value])
            ]
    return sorted(out)


def test_real_claude_tap_store_gives_the_requests_and_usage_the_provider_saw(tapped):
    db, received, _ = tapped
    assert detect(db) == "claude-tap" and detect(db.parent) == "claude-tap"
    session = cacheviz.load(db)
    posts = [r for r in received if r.path != "/v1/models"]
    assert len(session.calls) == len(posts) == 6
    assert session.ignored == {"status probe (GET /v1/models)": 1}
    for call, sent in zip(session.calls, posts, strict=True):
        body = json.loads(sent.body)
        # The same request: every element and every parameter the provider received ...
        raw = sorted(session.contents[b.hash].raw for b in call.blocks)
        assert raw == _elements(body, call.api)
        keys = BLOCK_KEYS[call.api]
        assert call.params == {k: v for k, v in body.items() if k not in keys}
        assert call.model == body["model"] and not call.reconstructed
        assert call.meta["client"] == "claude" and call.meta["proxy_mode"] == "reverse"
        assert call.meta["upstream"].startswith("http://127.0.0.1:")
        assert call.meta["request_bytes"] == claude_tap.REQUEST_BYTES
    apis = [c.api for c in session.calls]
    assert apis == ["messages"] * 2 + ["chat.completions"] * 2 + ["responses"] * 2
    assert [c.meta["streamed"] for c in session.calls] == [False, True, False, True, False, True]
    anthropic_input = sum(ANTHROPIC_USAGE[k] for k in ANTHROPIC_USAGE if k != "output_tokens")
    chat_cached = OPENAI_CHAT_USAGE["prompt_tokens_details"]["cached_tokens"]
    responses_cached = OPENAI_RESPONSES_USAGE["input_tokens_details"]["cached_tokens"]
    expected = [
        (anthropic_input, ANTHROPIC_USAGE["cache_read_input_tokens"]),
        (anthropic_input, ANTHROPIC_USAGE["cache_read_input_tokens"]),
        # streamed OpenAI usage: claude-tap's added copies would give prompt + cached
        (OPENAI_CHAT_USAGE["prompt_tokens"], chat_cached),
        (OPENAI_CHAT_USAGE["prompt_tokens"], chat_cached),
        (OPENAI_RESPONSES_USAGE["input_tokens"], responses_cached),
        (OPENAI_RESPONSES_USAGE["input_tokens"], responses_cached),
    ]
    assert [(c.usage.input_tokens, c.usage.cache_read_tokens) for c in session.calls] == expected
    # the first call's blocks (tools, system) open the second call's request
    analysis = session.analyze()
    assert analysis.calls["prefix_tokens"][1] >= analysis.calls["input_tokens"][0]
    kept = repr([c.meta for c in session.calls]) + repr(session.contents)
    assert SECRET not in kept


def test_the_blocks_are_the_bytes_the_sdks_sent(tapped):
    """The anthropic and openai SDKs send compact UTF-8 JSON, which is what claude-tap's
    re-serialization writes: each block is byte for byte a slice of the body as sent
    (a client sending pretty-printed or \\u-escaped JSON would not get that)."""
    db, received, _ = tapped
    session = cacheviz.load(db)
    posts = [r for r in received if r.path != "/v1/models"]
    for call, sent in zip(session.calls, posts, strict=True):
        assert sent.body == compact_json(json.loads(sent.body)).encode()
        assert b"\\u" not in sent.body and "✓".encode() in sent.body
        for block in call.blocks:
            assert session.contents[block.hash].raw in sent.body


def test_records_still_in_the_wal_file_are_read_and_the_store_is_untouched(tapped):
    db, _, _ = tapped
    files = sorted(db.parent.iterdir())
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    assert db.with_name(db.name + "-wal").is_file()  # claude-tap was stopped, not checkpointed
    # the main file alone (immutable: its WAL ignored) holds fewer records than were sent
    direct = sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True)
    tables = {row[0] for row in direct.execute("SELECT name FROM sqlite_master")}
    in_main = direct.execute("SELECT count(*) FROM records").fetchone()[0] if tables else 0
    direct.close()
    assert in_main < 7
    session = cacheviz.load(db)
    assert len(session.calls) == 6
    after = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(db.parent.iterdir())
    }
    assert after == before


def test_the_compact_export_and_jsonl_give_the_same_calls(tapped, tmp_path):
    db, _, command = tapped
    store = cacheviz.load(db)
    env = {**os.environ, "CLOUDTAP_DB": str(db), "HOME": str(tmp_path)}
    session_id = store.calls[0].meta["claude_tap_session"]
    copy = tmp_path / "copy"
    copy.mkdir()
    for p in db.parent.iterdir():
        shutil.copy(p, copy / p.name)
    env["CLOUDTAP_DB"] = str(copy / db.name)
    out = tmp_path / "trace.ctap.json"
    subprocess.run(
        [*command, "export", session_id, "-o", str(out)],
        env=env,
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert detect(out) == "claude-tap"
    bundle = cacheviz.load(out)
    assert [c.hashes for c in bundle.calls] == [c.hashes for c in store.calls]
    assert [c.usage for c in bundle.calls] == [c.usage for c in store.calls]
    assert json.loads(out.read_text())["blobs"]  # the tool and system were blobs
    # the JSONL of the same records (the dashboard's export/jsonl)
    records = claude_tap_records(out)
    lines = tmp_path / "trace.jsonl"
    lines.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    assert detect(lines) == "claude-tap"
    assert [c.hashes for c in cacheviz.load(lines).calls] == [c.hashes for c in store.calls]


def claude_tap_records(bundle: Path) -> list[dict]:
    doc = json.loads(bundle.read_text())
    blobs = doc["blobs"]
    return [claude_tap.materialize(r, lambda h: blobs[h]["payload"]) for r in doc["records"]]


# -- stores and records built here ------------------------------------------------------


def _record(ts, body, usage, *, path="/v1/messages", status=200, method="POST", stream=False):
    response_body = {"id": f"msg_{ts}", "usage": usage} if usage is not None else None
    headers = {"Content-Type": "text/event-stream" if stream else "application/json"}
    return {
        "timestamp": f"2026-03-01T10:00:{ts:02d}.500000+00:00",
        "request_id": f"req_{ts}",
        "turn": ts,
        "duration_ms": 500,
        "request": {
            "method": method,
            "path": path,
            "headers": {"Authorization": "***", "x-api-key": SECRET},
            "body": body,
        },
        "response": {"status": status, "headers": headers, "body": response_body},
        "upstream_base_url": "https://api.anthropic.com",
        "capture": {"client": "codex", "proxy_mode": "reverse"},
    }


def _bodies():
    history = [{"role": "user", "content": "hello " * 200}]  # a blob (>= 512 bytes)
    first = {"model": "claude-sonnet-4-5", "system": SYSTEM, "tools": [TOOL], "messages": history}
    later = {**first, "messages": [*history, {"role": "assistant", "content": "hi"}]}
    return first, later


def _compact(record: dict, blobs: dict) -> dict:
    """claude-tap's compact record: values of 512+ bytes replaced by blob references."""
    refs = []
    body = dict(record["request"]["body"])
    for key in ("tools",):
        value = body.get(key)
        text = compact_json(value)
        if value is not None and len(text.encode()) >= 512:
            digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
            blobs[digest] = value
            body[key] = {claude_tap.BLOB_MARKER: {"version": 1, "kind": "json", "hash": digest}}
            refs.append({"path": f"/request/body/{key}", "hash": digest})
    items = list(body.get("messages", []))
    for i, item in enumerate(items):
        text = compact_json(item)
        if len(text.encode()) >= 512:
            digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
            blobs[digest] = item
            items[i] = {claude_tap.BLOB_MARKER: {"version": 1, "kind": "json", "hash": digest}}
            refs.append({"path": f"/request/body/messages/{i}", "hash": digest})
    if "messages" in body:
        body["messages"] = items
    compact = {**record, "request": {**record["request"], "body": body}}
    marker = {"version": 1, "encoding": "json-blob-ref", "refs": refs}
    return {claude_tap.RECORD_MARKER: marker, "record": compact}


SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, started_at TEXT NOT NULL, updated_at TEXT NOT NULL,
  date_key TEXT NOT NULL, client TEXT NOT NULL DEFAULT '', proxy_mode TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT 'active', record_count INTEGER NOT NULL DEFAULT 0,
  summary_json TEXT, legacy_source_key TEXT NOT NULL DEFAULT '', legacy_rel_path TEXT);
CREATE TABLE records (session_id TEXT NOT NULL, record_index INTEGER NOT NULL, turn INTEGER,
  timestamp TEXT, payload_json TEXT NOT NULL, PRIMARY KEY (session_id, record_index));
CREATE TABLE proxy_logs (session_id TEXT NOT NULL, line_no INTEGER NOT NULL, logged_at TEXT,
  level TEXT, message TEXT NOT NULL, PRIMARY KEY (session_id, line_no));
CREATE TABLE record_blobs (session_id TEXT NOT NULL, hash TEXT NOT NULL, kind TEXT NOT NULL,
  payload_json TEXT NOT NULL, size_bytes INTEGER NOT NULL, created_at TEXT NOT NULL,
  PRIMARY KEY (session_id, hash));
"""


def _write_store(db: Path, records: list[dict], *, keep_open: bool = False):
    """A store in claude-tap's schema (v4, WAL); with ``keep_open`` nothing is checkpointed."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.executescript(SCHEMA)
    conn.execute(
        "INSERT INTO sessions (id, started_at, updated_at, date_key, client, proxy_mode) "
        "VALUES ('s-1', '2026-03-01T10:00:00+00:00', '', '2026-03-01', 'codex', 'reverse')"
    )
    for index, record in enumerate(records, 1):
        blobs: dict = {}
        payload = _compact(record, blobs)
        for digest, value in blobs.items():
            text = compact_json(value)
            conn.execute(
                "INSERT OR IGNORE INTO record_blobs VALUES ('s-1', ?, 'json', ?, ?, '')",
                (digest, text, len(text.encode())),
            )
        conn.execute(
            "INSERT INTO records VALUES ('s-1', ?, ?, ?, ?)",
            (index, record["turn"], record["timestamp"], compact_json(payload)),
        )
    conn.commit()
    if keep_open:
        return conn
    conn.close()
    return None


@pytest.fixture
def records():
    first, later = _bodies()
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 2000, "output_tokens": 3}
    return [
        _record(1, first, usage),
        _record(2, {}, None, path="/v1/models", method="GET"),
        _record(3, later, {**usage, "cache_read_input_tokens": 2000}, stream=True),
        _record(4, later, None, status=529),
        _record(5, first, usage, path="/v1/messages/count_tokens"),
    ]


def test_a_store_written_but_not_checkpointed_is_read_whole(tmp_path, records):
    db = tmp_path / claude_tap.DB_NAME
    writer = _write_store(db, records, keep_open=True)
    try:
        assert db.with_name(db.name + "-wal").stat().st_size > db.stat().st_size
        session = cacheviz.load(db)
        assert len(session.calls) == 2
        assert session.ignored == {
            "status probe (GET /v1/models)": 1,
            "failed request (HTTP error)": 1,
            "token count request": 1,
        }
        first, second = session.calls
        assert (first.usage.input_tokens, second.usage.cache_read_tokens) == (2010, 2000)
        # blobs resolved: the second request opens with every block of the first
        assert second.hashes[: len(first.hashes)] == first.hashes
        assert second.meta["streamed"] and not first.meta["streamed"]
        assert first.meta["client"] == "codex" and first.meta["claude_tap_session"] == "s-1"
        # the request time is the response's end less the duration
        assert first.ts.isoformat() == "2026-03-01T10:00:01+00:00"
    finally:
        writer.close()


def test_a_store_without_its_shm_is_read_from_a_copy_and_left_as_it_was(tmp_path, records):
    db = tmp_path / claude_tap.DB_NAME
    writer = _write_store(db, records, keep_open=True)
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    shutil.copy(db, frozen / db.name)
    shutil.copy(db.with_name(db.name + "-wal"), frozen / (db.name + "-wal"))
    writer.close()
    # no -shm beside it: SQLite would create one (or fail in a read-only folder)
    assert not (frozen / (db.name + "-shm")).exists()
    session = cacheviz.load(frozen / db.name)
    assert len(session.calls) == 2
    assert sorted(p.name for p in frozen.iterdir()) == [db.name, db.name + "-wal"]


def test_claude_tap_usage_copies_on_openai_streams_are_dropped():
    stored = {
        "prompt_tokens": 12005,
        "completion_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 6144},
        "input_tokens": 12005,
        "output_tokens": 40,
        "cache_read_input_tokens": 6144,
        "cache_read_in_input": True,
    }
    assert normalize_usage(stored).input_tokens == 18149  # read as stored
    usage = normalize_usage(claude_tap.provider_usage(stored))
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (12005, 6144, 40)
    anthropic = {"input_tokens": 5, "cache_read_input_tokens": 90, "cache_read_in_input": False}
    assert normalize_usage(claude_tap.provider_usage(anthropic)).input_tokens == 95
    responses = {
        "input_tokens": 900,
        "input_tokens_details": {"cached_tokens": 800},
        "cache_read_input_tokens": 800,
        "cache_read_in_input": True,
    }
    assert normalize_usage(claude_tap.provider_usage(responses)).input_tokens == 900


def test_capture_only_records_have_no_usage(tmp_path):
    first, _ = _bodies()
    record = _record(1, first, {"input_tokens": 0, "output_tokens": 0})
    record["response"]["body"]["id"] = "msg_claude_tap_capture"
    path = tmp_path / "capture.jsonl"
    path.write_text(json.dumps(record) + "\n")
    [call] = cacheviz.load(path).calls
    assert call.usage is None and call.meta["capture_only"] is True


def test_bedrock_vertex_websocket_gemini_and_binary_records(tmp_path):
    first, _ = _bodies()
    usage = {"input_tokens": 4, "output_tokens": 1}
    bedrock_body = {k: v for k, v in first.items() if k != "model"}
    bedrock = _record(1, bedrock_body, usage, path="/model/anthropic.claude-sonnet-4-5%3A0/invoke")
    vertex = _record(
        2,
        bedrock_body,
        usage,
        path="/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5:rawPredict",
    )
    socket_body = {
        "type": "response.create",
        "model": "gpt-5-codex",
        "input": [{"role": "user", "content": "hi"}],
    }
    ws = _record(
        3,
        socket_body,
        {"input_tokens": 9, "input_tokens_details": {"cached_tokens": 0}},
        method="WEBSOCKET",
        status=101,
        path="/v1/responses",
    )
    ws["transport"] = "websocket"
    gemini = _record(
        4, {"contents": []}, None, path="/v1beta/models/gemini-2.5-pro:generateContent"
    )
    binary = _record(5, {"_encoding": "protobuf", "byte_length": 10}, None, path="/v1/responses")
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (bedrock, vertex, ws, gemini, binary)))
    session = cacheviz.load(path)
    models = [(c.model, c.api, c.provider, c.reconstructed) for c in session.calls]
    assert models == [
        ("anthropic.claude-sonnet-4-5:0", "messages", "anthropic", False),
        ("claude-sonnet-4-5", "messages", "anthropic", False),
        ("gpt-5-codex", "responses", "openai", True),
    ]
    assert session.calls[2].meta["transport"] == "websocket"
    assert session.ignored == {"Gemini request (not rendered yet)": 1, "binary request body": 1}


def test_a_missing_blob_names_the_record_and_skip_keeps_the_rest(tmp_path, records):
    db = tmp_path / claude_tap.DB_NAME
    _write_store(db, records)
    conn = sqlite3.connect(db)
    conn.execute(
        "UPDATE records SET payload_json = replace(payload_json, '\"sha256:', '\"sha256:0') "
        "WHERE record_index = 3"
    )
    conn.commit()
    conn.close()
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(db)
    message = str(info.value)
    assert "records[session s-1, record_index 3]" in message and "record_blobs" in message
    assert "\n" not in message and SECRET not in message
    with pytest.warns(CacheVizWarning, match="skipped 1 bad"):
        session = cacheviz.load(db, errors="skip")
    assert len(session.calls) == 1


def test_a_sqlite_file_of_another_program_is_not_claimed(tmp_path):
    other = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE records (a, b)")
    conn.commit()
    conn.close()
    with pytest.raises(TranscriptError, match="can't tell the transcript format"):
        cacheviz.load(other)


def test_a_store_of_another_schema_is_one_line_when_forced(tmp_path):
    old = tmp_path / claude_tap.DB_NAME
    conn = sqlite3.connect(old)
    conn.execute("CREATE TABLE records (session_id TEXT, record_index INTEGER)")
    conn.execute("CREATE TABLE sessions (id TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(TranscriptError, match=r"cannot be read \(no such column"):
        cacheviz.load(old, format="claude-tap")
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"SQLite format 3\x00" + b"\x07" * 200)
    with pytest.raises(TranscriptError, match="not a readable SQLite database"):
        cacheviz.load(junk, format="claude-tap")


def test_cacheviz_formats_lists_claude_tap_and_cc_viewer(capsys):
    from cacheviz.cli import main

    main(["formats"])
    out = capsys.readouterr().out
    assert "claude-tap" in out and "cc-viewer" in out


@pytest.fixture
def export_file(tmp_path, records):
    blobs: dict = {}
    compact = [_compact(r, blobs) for r in records]
    bundle = {
        claude_tap.TRACE_MARKER: {"version": 1, "encoding": "json-blob-ref"},
        "records": compact,
        "blobs": {h: {"kind": "json", "bytes": 0, "payload": v} for h, v in blobs.items()},
    }
    path = tmp_path / "trace.ctap.json"
    path.write_text(json.dumps(bundle, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


def test_an_export_reads_like_the_store(export_file, tmp_path, records):
    db = tmp_path / claude_tap.DB_NAME
    _write_store(db, records)
    assert detect(export_file) == "claude-tap"
    exported, stored = cacheviz.load(export_file), cacheviz.load(db)
    assert [c.hashes for c in exported.calls] == [c.hashes for c in stored.calls]
    assert exported.ignored == stored.ignored


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(0, 4000),
    junk=st.binary(max_size=20),
    shape=st.sampled_from(["jsonl", "export"]),
)
def test_fuzzed_captures_load_or_fail_in_one_line(
    tmp_path, records, export_file, cut, junk, shape, loads_or_fails_cleanly
):
    if shape == "jsonl":
        blobs: dict = {}
        good = "".join(
            json.dumps(_compact(r, blobs) if i == 2 else r) + "\n" for i, r in enumerate(records)
        ).encode()
    else:
        good = export_file.read_bytes()
    path = tmp_path / f"fuzz.{shape}"
    at = cut % max(len(good), 1)
    path.write_bytes(good[:at] + junk + good[at + cut % 37 :])
    loads_or_fails_cleanly(
        path, lambda p, e: cacheviz.load(p, format="claude-tap", errors=e), secret=SECRET
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    field=st.sampled_from(["payload_json", "blob"]),
    cut=st.integers(1, 400),
    junk=st.sampled_from(["", "}", "\x00", '{"record": 3}', "[1]"]),
)
def test_fuzzed_stores_load_or_fail_in_one_line(
    tmp_path, records, field, cut, junk, loads_or_fails_cleanly
):
    db = tmp_path / f"fuzz-{field}-{cut}-{len(junk)}" / claude_tap.DB_NAME
    db.parent.mkdir(exist_ok=True)
    if db.exists():
        db.unlink()
    _write_store(db, records)
    conn = sqlite3.connect(db)
    if field == "payload_json":
        conn.execute(
            "UPDATE records SET payload_json = substr(payload_json, 1, ?) || ?", (cut, junk)
        )
    else:
        conn.execute(
            "UPDATE record_blobs SET payload_json = substr(payload_json, ?) || ?", (cut, junk)
        )
    conn.commit()
    conn.close()
    loads_or_fails_cleanly(
        db, lambda p, e: cacheviz.load(p, format="claude-tap", errors=e), secret=SECRET
    )


# -- issue 29 item 8: references expanded within a budget, in linear time -----------------


def _compact_store(db, records: list[tuple[list[str], dict]], blobs: dict[str, str]) -> None:
    """A claude-tap store without the index on `record_blobs` (none is made here)."""
    import sqlite3

    con = sqlite3.connect(db)
    con.executescript(
        "create table sessions (id text primary key, started_at text);"
        "create table records (session_id text, record_index integer, turn integer,"
        " timestamp text, payload_json text);"
        "create table record_blobs (session_id text, hash text, payload_json text);"
        "insert into sessions values ('s', '2026-04-01T08:00:00+00:00');"
    )
    for index, (messages, usage) in enumerate(records, 1):
        refs = [{"path": f"/request/body/messages/{i}"} for i in range(len(messages))]
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 8,
            "messages": [{"__claude_tap_blob_ref__": {"hash": h}} for h in messages],
        }
        record = {
            "timestamp": f"2026-04-01T{8 + index // 3600:02d}:{index // 60 % 60:02d}:{index % 60:02d}Z",
            "duration_ms": 10,
            "request": {"method": "POST", "path": "/v1/messages", "body": body},
            "response": {"status": 200, "body": {"usage": usage}},
        }
        compact = {"__claude_tap_compact_record__": {"version": 1, "refs": refs}, "record": record}
        con.execute("insert into records values ('s', ?, 1, 't', ?)", (index, json.dumps(compact)))
    con.executemany("insert into record_blobs values ('s', ?, ?)", list(blobs.items()))
    con.commit()
    con.close()


def _message(n: int, size: int) -> str:
    return json.dumps({"role": "user" if n % 2 == 0 else "assistant", "content": f"{n} " * size})


def test_references_expanding_past_the_budget_refuse_the_store_in_one_line(tmp_path, monkeypatch):
    from cacheviz._limits import LimitError

    db = tmp_path / "traces.sqlite3"
    usage = {"input_tokens": 5, "output_tokens": 1}
    # one 32 KiB message referenced 400 times by each of 10 records: ~125 MiB from ~100 KiB
    _compact_store(db, [(["sha256:big"] * 400, usage)] * 10, {"sha256:big": _message(0, 16000)})
    size = db.stat().st_size
    monkeypatch.setenv("CACHEVIZ_MIN_EXPANSION_MB", "4")
    monkeypatch.setenv("CACHEVIZ_MAX_EXPANSION", "20")
    with pytest.raises(LimitError) as caught:
        cacheviz.load(db)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{db}: its references expand to more than")
    assert "CACHEVIZ_MAX_EXPANSION" in message and "CACHEVIZ_MIN_EXPANSION_MB" in message
    assert size < 1 << 20
    monkeypatch.setenv("CACHEVIZ_MAX_EXPANSION", "100000")  # allowed: read as before
    assert len(cacheviz.load(db).calls) == 10


@pytest.mark.parametrize("records", [1000, 4000])
def test_a_store_without_its_blob_index_is_read_in_linear_time(tmp_path, monkeypatch, records):
    """Records of 2 references each over twice as many blobs: each reference looked up by
    scanning the table visits every blob (4,000 records: 64 million rows); one pass
    visits each once. SQLite's steps are counted (its progress handler), not seconds."""
    from cacheviz.formats import _sqlite

    db = tmp_path / "traces.sqlite3"
    usage = {"input_tokens": 5, "output_tokens": 1}
    blobs = {f"sha256:{n}": _message(n, 3) for n in range(2 * records)}
    _compact_store(
        db, [([f"sha256:{2 * i}", f"sha256:{2 * i + 1}"], usage) for i in range(records)], blobs
    )
    steps = [0]

    def counting(conn, path):
        conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1) or 0, 100)
        return lambda: False

    monkeypatch.setattr(_sqlite, "_limited", counting)
    session = cacheviz.load(db)
    assert len(session.calls) == records
    per_record = steps[0] * 100 / records
    assert per_record < 500  # a scan of the blobs per reference: over 20,000 at 1,000
