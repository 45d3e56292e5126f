"""Amp threads (``~/.local/share/amp/threads/T-<uuid>.json``): one pretty-printed document.

The fixture is written in the structure ccusage's Amp adapter reads (``messages[].usage``
with ``inputTokens`` uncached, ``cacheCreationInputTokens``, ``cacheReadInputTokens``;
``usageLedger.events[]`` with ``tokens.input`` / ``output`` and ``toMessageId``), with a
title-generation event no message holds and a ``~debug`` block. Real threads, when you
have some, are read from ``$CACHEVIZ_AMP_THREADS`` (a folder searched for ``T-*.json``).
"""

import json
import os
from pathlib import Path

import pytest

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect

THREAD_ID = "T-5c1f3e2a-7b6d-4c8e-9f00-0a1b2c3d4e5f"
MODEL = "claude-sonnet-4-5-20250929"


def _usage(uncached: int, write: int, read: int, out: int, at: str, paid: float) -> dict:
    return {
        "model": MODEL,
        "maxInputTokens": 168000,
        "inputTokens": uncached,
        "outputTokens": out,
        "cacheCreationInputTokens": write,
        "cacheReadInputTokens": read,
        "totalInputTokens": uncached + write + read,
        "credits": paid,
        "timestamp": at,
    }


def thread() -> dict:
    """A thread: two answered steps with a tool between, a cancelled step, the ledger."""
    messages = [
        {
            "role": "user",
            "messageId": 0,
            "content": [{"type": "text", "text": "Fix the failing test ✓"}],
            "meta": {"sentAt": 1768816800000},
        },
        {
            "role": "assistant",
            "messageId": 1,
            "content": [
                {"type": "thinking", "thinking": "Look first.", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"path": "a.py"}},
            ],
            "state": {"type": "complete", "stopReason": "tool_use"},
            "usage": _usage(12, 9800, 0, 140, "2026-01-19T10:00:04.000Z", 2.1),
        },
        {
            "role": "user",
            "messageId": 2,
            "content": [
                {
                    "type": "tool_result",
                    "toolUseID": "toolu_01",
                    "run": {"status": "done", "result": {"content": "def f(): pass"}},
                }
            ],
        },
        {
            "role": "assistant",
            "messageId": 3,
            "content": [{"type": "text", "text": "Fixed."}],
            "state": {"type": "complete", "stopReason": "end_turn"},
            "usage": _usage(30, 210, 9800, 55, "2026-01-19T10:00:09.000Z", 0.7),
        },
        {
            "role": "user",
            "messageId": 4,
            "content": [{"type": "text", "text": "and the docs"}],
        },
        {
            "role": "assistant",
            "messageId": 5,
            "content": [{"type": "text", "text": "Upd"}],
            "state": {"type": "cancelled"},
        },
    ]
    ledger = [
        {
            "id": "ev-1",
            "timestamp": "2026-01-19T10:00:04.000Z",
            "model": MODEL,
            "credits": 2.1,
            "tokens": {"input": 12, "output": 140},
            "operationType": "inference",
            "fromMessageId": 0,
            "toMessageId": 1,
        },
        {
            "id": "ev-2",
            "timestamp": "2026-01-19T10:00:01.000Z",
            "model": "claude-haiku-4-5-20251001",
            "credits": 0.05,
            "tokens": {"input": 180, "output": 9},
            "operationType": "title-generation",
        },
        {
            "id": "ev-3",
            "timestamp": "2026-01-19T10:00:09.000Z",
            "model": MODEL,
            "credits": 0.7,
            "tokens": {"input": 30, "output": 55},
            "operationType": "inference",
            "fromMessageId": 2,
            "toMessageId": 3,
        },
    ]
    return {
        "v": 41,
        "id": THREAD_ID,
        "created": 1768816800000,
        "title": "Fix the failing test",
        "messages": messages,
        "usageLedger": {"events": ledger},
        "env": {"initial": {"trees": [{"displayName": "app"}]}},
        "~debug": {"lastInferenceInput": {"model": MODEL, "system": [{"text": "You are Amp."}]}},
    }


def _write(folder: Path, document: dict, name: str = f"{THREAD_ID}.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def independent(path: Path) -> dict[str, int]:
    """Calls and usage of a thread by the format's rules, without the reader: each assistant
    message with non-zero usage (input = inputTokens + cache reads + cache writes), plus each
    ledger event that names no such message (input = tokens.input)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    out = {"calls": 0, "input": 0, "read": 0, "write": 0, "output": 0}
    answered = set()
    for message in document.get("messages", []):
        usage = message.get("usage") or {}
        parts = [usage.get(k) or 0 for k in ("inputTokens", "cacheReadInputTokens")]
        parts += [usage.get(k) or 0 for k in ("cacheCreationInputTokens", "outputTokens")]
        if message.get("role") != "assistant" or not any(parts):
            continue
        answered.add(message.get("messageId"))
        uncached, read, write, output = parts
        out["calls"] += 1
        out["input"] += uncached + read + write
        out["read"] += read
        out["write"] += write
        out["output"] += output
    for event in (document.get("usageLedger") or {}).get("events", []):
        if event.get("toMessageId") in answered:
            continue
        tokens = event.get("tokens") or {}
        if not (tokens.get("input") or tokens.get("output")):
            continue
        out["calls"] += 1
        out["input"] += tokens.get("input") or 0
        out["output"] += tokens.get("output") or 0
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


def test_a_thread_is_detected_and_its_calls_and_ledger_read(tmp_path):
    path = _write(tmp_path / "threads", thread())
    assert detect(path) == "amp"
    session = cacheviz.load(path)
    by_hand = {
        "calls": 3,  # two answered messages + the title generation only the ledger holds
        "input": (12 + 9800) + (30 + 210 + 9800) + 180,
        "read": 9800,
        "write": 9800 + 210,
        "output": 140 + 55 + 9,
    }
    assert by_hand == independent(path) == _sums(session)
    title, first, second = session.calls  # by time: the title was generated first
    assert title.thread_hint == "ledger title-generation" and title.parent_hint == "main"
    assert title.usage.cache_read_tokens is None  # the ledger has no cache split: not 0
    assert title.meta["credits"] == 0.05
    assert [first.meta["credits"], second.meta["credits"]] == [2.1, 0.7]
    assert first.usage.provenance == "derived" and first.meta["total_input_tokens"] == 9812
    # the second request re-sends the first: the user turn, the answer, the tool result
    assert second.hashes[: len(first.hashes)] == first.hashes
    assert len(second.hashes) == len(first.hashes) + 2
    result = session.contents[second.hashes[-1]].value
    assert result["content"][0]["tool_use_id"] == "toolu_01"
    assert "def f(): pass" in result["content"][0]["content"]
    assert session.ignored["assistant message without usage (cancelled: no answer billed)"] == 1
    assert session.ignored["ledger event of an assistant message (its call)"] == 2
    assert sum(v for k, v in session.ignored.items() if k.startswith("~debug")) == 1


def test_messages_alone_when_there_is_no_ledger(tmp_path):
    document = thread()
    del document["usageLedger"]
    path = _write(tmp_path, document)
    session = cacheviz.load(path)
    assert independent(path) == _sums(session)
    assert len(session.calls) == 2


def test_a_corrupt_count_names_the_message_and_skip_nulls_it(tmp_path):
    document = thread()
    document["messages"][3]["usage"]["cacheReadInputTokens"] = "9800"
    path = _write(tmp_path, document)
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "\n" not in message and "messages[3]" in message
    assert "`usage.cacheReadInputTokens` is '9800'" in message
    with pytest.warns(CacheVizWarning, match=r"usage set to null for 1 call"):
        session = cacheviz.load(path, errors="skip")
    assert [c.usage is None for c in session.calls] == [False, False, True]


def test_a_one_line_json_record_is_not_taken_for_a_thread(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps({"id": THREAD_ID, "messages": []}) + "\n")
    from cacheviz.formats import amp

    assert not amp.detect(path, path.read_bytes())


def test_scan_finds_the_threads_folder(tmp_path, monkeypatch):
    home = tmp_path / "home"
    path = _write(home / ".local" / "share" / "amp" / "threads", thread())
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("AMP_DATA_DIR", raising=False)
    result = cacheviz.scan(cache=False)
    found = {str(loc.path) for loc in result.locations if loc.agent == "amp" and loc.found}
    assert found == {str(path.parent)}
    assert result.files["path"].to_list() == [str(path)]
    assert result.calls.height == 3


def _real_threads() -> list[Path]:
    folder = os.environ.get("CACHEVIZ_AMP_THREADS")
    examples = os.environ.get("CACHEVIZ_EXAMPLES")  # public examples: <it>/amp/
    if not folder and examples and (Path(examples) / "amp").is_dir():
        folder = str(Path(examples) / "amp")
    return sorted(Path(folder).rglob("T-*.json")) if folder else []


@pytest.mark.skipif(
    not _real_threads(), reason="CACHEVIZ_AMP_THREADS (or CACHEVIZ_EXAMPLES) is not set"
)
@pytest.mark.parametrize("path", _real_threads(), ids=lambda p: p.name)
def test_real_amp_threads_match_an_independent_reading(path):
    expected = independent(path)
    if expected["calls"] == 0:
        pytest.skip("no answered message")
    assert detect(path) == "amp"
    assert _sums(cacheviz.load(path)) == expected
