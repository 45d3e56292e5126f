"""Real sessions from public repositories, read by each reader and by the format's own rules.

``$CACHEVIZ_EXAMPLES`` names a folder of real files kept outside the repository, one
sub-folder per agent in its own layout (``continue/``, ``copilot-cli/``, ``crush/``,
``hermes/``, ``goose/``, ``qwen-code/``, ``kilo/``; ``kimi-cli/``, ``openclaw/``, ``pi/``,
``amp/`` and ``droid/`` are read by ``test_kimi_cli.py``, ``test_pi.py``, ``test_amp.py``
and ``test_droid.py``), each with a ``SOURCES.txt`` naming the
repository, path and commit every file came from (docs/testing.md). Every test skips
when the variable is unset or the agent's folder is absent.

Each expected figure is read here from the file with the format's own rules (the
agent's records and tables, not the reader), and every SQLite store is read from a copy
of its folder that is then hashed again: the reader changes no byte and leaves no file.
"""

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

import cacheviz
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect

ROOT = Path(os.environ["CACHEVIZ_EXAMPLES"]) if os.environ.get("CACHEVIZ_EXAMPLES") else None


def _files(agent: str, pattern: str) -> list[Path]:
    folder = ROOT / agent if ROOT is not None else None
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob(pattern) if p.is_file())


def _needs(paths: list[Path], agent: str) -> None:
    if not paths:
        pytest.skip(
            f"$CACHEVIZ_EXAMPLES/{agent} is absent (CACHEVIZ_EXAMPLES unset or no such files)"
        )


def _tree(folder: Path) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for path in sorted(folder.rglob("*")):
        info = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[str(path.relative_to(folder))] = (
            path.is_file(),
            info.st_size,
            info.st_mtime_ns,
            digest,
        )
    return out


def _total(values) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _call_sums(session) -> dict:
    usages = [c.usage for c in session.calls if c.usage is not None]
    return {
        "calls": len(session.calls),
        "input": _total(u.input_tokens for u in usages),
        "output": _total(u.output_tokens for u in usages),
    }


def _session_sums(session) -> dict:
    usages = [s.usage for s in session.session_usage]
    return {
        "input": _total(u.input_tokens for u in usages),
        "cache_read": _total(u.cache_read_tokens for u in usages),
        "cache_write": _total(u.cache_write_tokens for u in usages),
        "output": _total(u.output_tokens for u in usages),
        "reasoning": _total(u.reasoning_tokens for u in usages),
    }


def _snapshot(db: Path, tmp_path: Path) -> sqlite3.Connection:
    """The database with what its ``-wal`` holds, read from a copy (never the original)."""
    copy = tmp_path / "independent"
    copy.mkdir()
    for suffix in ("", "-wal"):
        source = db.with_name(db.name + suffix)
        if source.is_file():
            shutil.copyfile(source, copy / (db.name + suffix))
    con = sqlite3.connect(copy / db.name)
    con.row_factory = sqlite3.Row
    return con


def _untouched_copy(db: Path, tmp_path: Path) -> Path:
    """A copy of the store's whole folder (its ``-wal`` and ``-shm`` too), read-only."""
    folder = tmp_path / "store"
    shutil.copytree(db.parent, folder)
    return folder / db.name


# --- Continue: one tokensGenerated record, one completion -----------------------------


@pytest.mark.parametrize("path", _files("continue", "tokensGenerated.jsonl") or [None])
def test_continue_token_log(path):
    _needs([path] if path else [], "continue")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    records = [r for r in records if r.get("eventName", "tokensGenerated") == "tokensGenerated"]
    expected = {
        "calls": len(records),
        "input": sum(r["promptTokens"] for r in records),
        "output": sum(r["generatedTokens"] for r in records),
    }
    assert detect(path) == "continue"
    session = cacheviz.load(path)
    assert _call_sums(session) == expected
    assert all(c.usage.cache_read_tokens is None for c in session.calls)  # not logged


# --- GitHub Copilot CLI ----------------------------------------------------------------


def _copilot_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _copilot_calls(events: list[dict]) -> int:
    """API calls by Copilot's events: an ``apiCallId`` each, else (older files, one
    ``assistant.message`` per part of a response) a run of messages until a tool answers,
    a user message or a new turn."""
    calls, open_id, answered, open_ = 0, None, False, False
    for event in events:
        kind, data = event["type"], event.get("data") or {}
        if kind in ("user.message", "assistant.turn_start", "session.compaction_complete"):
            open_ = False
        elif kind == "tool.execution_complete":
            answered = True
        elif kind == "assistant.message":
            api_id = data.get("apiCallId")
            same = open_ and (api_id == open_id if api_id or open_id else not answered)
            if not same:
                calls += 1
            open_, open_id, answered = True, api_id, False
    return calls


@pytest.mark.parametrize(
    "path",
    _files("copilot-cli", "events.jsonl") + _files("copilot-cli", "*-*-*-*-*.jsonl") or [None],
    ids=lambda p: p.parent.name if p and p.name == "events.jsonl" else getattr(p, "stem", "none"),
)
def test_copilot_cli_session(path):
    _needs([path] if path else [], "copilot-cli")
    events = _copilot_events(path)
    session = cacheviz.load(path)
    assert session.format == "copilot-cli"
    assert len(session.calls) == _copilot_calls(events)
    assert all(c.usage is None for c in session.calls)  # no per-call usage is logged
    metrics = [
        entry
        for e in events
        if e["type"] == "session.shutdown"
        for entry in (e["data"].get("modelMetrics") or {}).values()
    ]
    if not metrics:
        assert session.session_usage == []  # no bill invented
        return
    counted = sum(m["requests"]["count"] for m in metrics if "requests" in m)
    assert len(session.calls) == counted  # Copilot's own request count
    usage = [m["usage"] for m in metrics]
    assert _session_sums(session) == {
        "input": sum(u["inputTokens"] for u in usage),  # inclusive of cache reads and writes
        "cache_read": sum(u["cacheReadTokens"] for u in usage),
        "cache_write": sum(u["cacheWriteTokens"] for u in usage),
        "output": sum(u["outputTokens"] for u in usage),
        "reasoning": sum(u["reasoningTokens"] for u in usage),
    }
    nano = sum(
        e["data"].get("totalNanoAiu") or 0 for e in events if e["type"] == "session.shutdown"
    )
    if nano:
        # Copilot's own figure: on these files the session's cost at list prices, in units
        # of 1e-11 USD (it matched to the last digit on every one)
        assert session.analyze().billed_usd == pytest.approx(nano / 1e11, rel=1e-9)


# --- Crush -----------------------------------------------------------------------------


@pytest.mark.parametrize("db", _files("crush", "crush.db") or [None])
def test_crush_store(db, tmp_path):
    _needs([db] if db else [], "crush")
    con = _snapshot(db, tmp_path)
    answered = 0
    for row in con.execute("select parts from messages where role = 'assistant'"):
        reasons = [
            p["data"].get("reason") for p in json.loads(row["parts"]) if p["type"] == "finish"
        ]
        answered += not (reasons and reasons[0] in ("canceled", "error"))
    cost = con.execute("select sum(cost) from sessions where parent_session_id is null").fetchone()[
        0
    ]
    copy = _untouched_copy(db, tmp_path)
    before = _tree(copy.parent)
    session = cacheviz.load(copy)
    assert _tree(copy.parent) == before
    assert session.format == "crush"
    assert len(session.calls) == answered
    assert all(c.usage is None for c in session.calls)  # last-response counts: not billed
    kept = [c.meta["reported_cost_usd"] for c in session.calls if "reported_cost_usd" in c.meta]
    assert sum(kept) == pytest.approx(cost)


# --- Hermes Agent ----------------------------------------------------------------------


@pytest.mark.parametrize("db", _files("hermes", "state.db") or [None])
def test_hermes_store(db, tmp_path):
    _needs([db] if db else [], "hermes")
    con = _snapshot(db, tmp_path)
    rows = con.execute(
        "select input_tokens, cache_read_tokens, cache_write_tokens, output_tokens,"
        " reasoning_tokens from sessions"
    ).fetchall()
    billed = [r for r in rows if any(r[:4])]
    expected = {
        "input": sum((r[0] or 0) + (r[1] or 0) + (r[2] or 0) for r in billed),  # uncached + cache
        "cache_read": sum(r[1] or 0 for r in billed),
        "cache_write": sum(r[2] or 0 for r in billed),
        "output": sum(r[3] or 0 for r in billed),
        "reasoning": sum(r[4] or 0 for r in billed),  # part of the output, shown apart
    }
    assistants = con.execute("select count(*) from messages where role = 'assistant'").fetchone()[0]
    copy = _untouched_copy(db, tmp_path)
    before = _tree(copy.parent)
    session = cacheviz.load(copy)
    assert _tree(copy.parent) == before
    assert session.format == "hermes"
    assert len(session.calls) == assistants
    assert all(c.usage is None for c in session.calls)  # session scope only
    assert len(session.session_usage) == len(billed)
    assert _session_sums(session) == expected


# --- OpenCode and Kilo CLI ------------------------------------------------------------


@pytest.mark.parametrize(
    "db", _files("kilo", "kilo.db") + _files("opencode", "opencode.db") or [None]
)
def test_opencode_or_kilo_store(db, tmp_path):
    _needs([db] if db else [], "kilo")
    con = _snapshot(db, tmp_path)
    starts = finishes = 0
    sums = {"input": 0, "output": 0, "reasoning": 0}
    for row in con.execute("select data from part"):
        part = json.loads(row["data"])
        starts += part.get("type") == "step-start"
        if part.get("type") == "step-finish":  # a step answered: one API call
            finishes += 1
            tokens = part["tokens"]
            cache = tokens.get("cache") or {}
            # OpenCode's input excludes the cache; its output excludes the reasoning
            sums["input"] += tokens["input"] + cache.get("read", 0) + cache.get("write", 0)
            sums["output"] += tokens["output"] + tokens.get("reasoning", 0)
            sums["reasoning"] += tokens.get("reasoning", 0)
    copy = _untouched_copy(db, tmp_path)
    before = _tree(copy.parent)
    session = cacheviz.load(copy)
    assert _tree(copy.parent) == before
    assert session.format == "opencode"
    assert _call_sums(session) == {"calls": finishes, **{k: sums[k] for k in ("input", "output")}}
    assert _total(c.usage.reasoning_tokens for c in session.calls) == sums["reasoning"]
    # every step started and never finished (retried, aborted) is counted apart, not a call
    apart = {k: n for k, n in session.ignored.items() if k.startswith(("retried", "aborted"))}
    assert sum(apart.values()) == starts - finishes


# --- Goose and Qwen Code: real files that hold no answered call ------------------------


@pytest.mark.parametrize("db", _files("goose", "sessions.db") or [None])
def test_goose_store_without_messages(db, tmp_path):
    _needs([db] if db else [], "goose")
    con = _snapshot(db, tmp_path)
    sessions = con.execute("select count(*) from sessions").fetchone()[0]
    assistants = con.execute("select count(*) from messages where role = 'assistant'").fetchone()[0]
    if assistants:
        pytest.skip("this Goose database holds answered calls: the empty case is not here")
    assert detect(db) == "goose"
    with pytest.raises(TranscriptError) as caught:
        cacheviz.load(db)
    assert f"holds {sessions} session(s) and no assistant message" in str(caught.value)


def _qwen_chats(answered: bool) -> list[Path]:
    out = []
    for path in _files("qwen-code", "*.jsonl"):
        kinds = {json.loads(line).get("type") for line in path.read_text().splitlines() if line}
        if ("assistant" in kinds) == answered:
            out.append(path)
    return out


@pytest.mark.parametrize("path", _qwen_chats(answered=True) or [None])
def test_qwen_code_chat(path):
    _needs([path] if path else [], "qwen-code")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    metas = [r.get("usageMetadata") for r in records if r.get("type") == "assistant"]
    # the calls Qwen logs only in its telemetry (a tool's own model call, a sub-agent's):
    # api_response events whose prompt and output no assistant record holds
    events = [
        r["systemPayload"]["uiEvent"]
        for r in records
        if r.get("subtype") == "ui_telemetry"
        and r["systemPayload"]["uiEvent"].get("event.name") == "qwen-code.api_response"
    ]
    left = [(m["promptTokenCount"], m["candidatesTokenCount"]) for m in metas]
    for e in events:
        key = (e["input_token_count"], e["output_token_count"])
        if key in left:
            left.remove(key)
        else:
            metas.append(
                {
                    "promptTokenCount": e["input_token_count"],
                    "cachedContentTokenCount": e.get("cached_content_token_count"),
                    "candidatesTokenCount": e["output_token_count"],
                    "thoughtsTokenCount": e.get("thoughts_token_count"),
                    "totalTokenCount": e["total_token_count"],
                }
            )
    output = 0
    for m in metas:
        # Qwen Code's OpenAI-compatible generator: candidates = completion_tokens, which
        # holds the reasoning (total = prompt + candidates); Gemini's: thoughts on top
        on_top = m["totalTokenCount"] == m["promptTokenCount"] + m["candidatesTokenCount"] + (
            m.get("thoughtsTokenCount") or 0
        ) and m.get("thoughtsTokenCount")
        output += m["candidatesTokenCount"] + (m["thoughtsTokenCount"] if on_top else 0)
    assert detect(path) == "qwen-code"
    session = cacheviz.load(path)
    assert _call_sums(session) == {
        "calls": len(metas),  # one per assistant record, and one per telemetry-only call
        "input": sum(m["promptTokenCount"] for m in metas),  # cached tokens inside
        "output": output,
    }
    assert _total(c.usage.cache_read_tokens for c in session.calls) == sum(
        m.get("cachedContentTokenCount") or 0 for m in metas
    )
    assert _total(c.usage.reasoning_tokens for c in session.calls) == sum(
        m.get("thoughtsTokenCount") or 0 for m in metas
    )


@pytest.mark.parametrize("path", _qwen_chats(answered=False) or [None])
def test_qwen_code_chat_with_only_a_failed_request(path):
    _needs([path] if path else [], "qwen-code")
    assert detect(path) == "qwen-code"
    with pytest.raises(TranscriptError, match=r"no API call .*the file holds: .*1 failed request"):
        cacheviz.load(path)
