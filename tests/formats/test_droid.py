"""Droid (Factory) sessions: ``<uuid>.jsonl`` messages, ``<uuid>.settings.json`` totals.

The fixture follows the layout public readers of Droid agree on (``session_start`` then
``message`` records with Anthropic content; ``tokenUsage`` in the settings beside it,
``inputTokens`` uncached) and ccusage's Droid adapter. Real sessions, when you have some,
are read from ``$CACHEVIZ_DROID_SESSIONS`` (a folder searched for ``*.settings.json``).
"""

import json
import os
from pathlib import Path

import pytest

import cacheviz
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect

SESSION = "7d9f0b52-1a2b-4c3d-8e9f-0a1b2c3d4e5f"


def _message(key: str, second: int, role: str, content: list, **extra) -> dict:
    stamp = f"2026-09-27T08:00:{second:02d}.000Z"
    return {"type": "message", "id": key, "timestamp": stamp,
            "message": {"role": role, "content": content}, **extra}  # fmt: skip


def droid_session(folder: Path, usage: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def f(): pass"}
    records = [
        {"type": "session_start", "id": SESSION, "title": "Fix a.py", "owner": "dev",
         "version": 2, "cwd": "/home/dev/app"},
        _message("m1", 0, "user", [{"type": "text", "text": "<system-reminder>rules</system-reminder>"}],
                 visibility="llm_only"),
        _message("m2", 1, "user", [{"type": "text", "text": "fix a.py ✓"}]),
        _message("m3", 4, "assistant", [{"type": "text", "text": "Reading."}, tool]),
        _message("m4", 5, "user", [result]),
        _message("m5", 9, "assistant", [{"type": "text", "text": "Fixed."}]),
    ]  # fmt: skip
    path = folder / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    settings = {
        "model": "claude-sonnet-4-5-20250929",
        "reasoningEffort": "none",
        "providerLock": "anthropic",
        "providerLockTimestamp": "2026-09-27T08:00:00.000Z",
        "tokenUsage": usage
        or {"inputTokens": 734, "outputTokens": 475, "cacheCreationTokens": 9000,
            "cacheReadTokens": 35188, "thinkingTokens": 0},
    }  # fmt: skip
    (folder / f"{SESSION}.settings.json").write_text(json.dumps(settings, indent=2))
    return path


def independent(path: Path) -> dict[str, int]:
    """Droid's rules without the reader: calls = assistant messages; the totals from the
    settings beside the session, input = inputTokens + cacheReadTokens + cacheCreationTokens."""
    calls = sum(
        1
        for line in path.read_text(encoding="utf-8").splitlines()
        if json.loads(line).get("message", {}).get("role") == "assistant"
    )
    settings = json.loads(path.with_name(path.stem + ".settings.json").read_text())
    t = settings["tokenUsage"]
    read, write = t.get("cacheReadTokens") or 0, t.get("cacheCreationTokens") or 0
    return {
        "calls": calls,
        "input": (t.get("inputTokens") or 0) + read + write,
        "read": read,
        "write": write,
        "output": t.get("outputTokens") or 0,
    }


def _got(session) -> dict[str, int]:
    t = session.reported_totals
    return {
        "calls": len(session.calls),
        "input": t.input_tokens,
        "read": t.cache_read_tokens,
        "write": t.cache_write_tokens,
        "output": t.output_tokens,
    }


def test_messages_are_calls_and_the_settings_totals_are_billed_at_scope(tmp_path):
    path = droid_session(tmp_path / "-home-dev-app")
    assert detect(path) == "droid"
    session = cacheviz.load(path)
    by_hand = {"calls": 2, "input": 734 + 35188 + 9000, "read": 35188, "write": 9000,
               "output": 475}  # fmt: skip
    assert by_hand == independent(path) == _got(session)
    assert all(c.usage is None for c in session.calls)
    assert [u.model for u in session.session_usage] == ["claude-sonnet-4-5-20250929"]
    assert session.calls[0].provider == "anthropic"
    first, second = session.calls
    assert second.hashes[: len(first.hashes)] == first.hashes
    assert session.analyze().billed_usd > 0


def test_a_corrupt_total_names_the_settings_file(tmp_path):
    path = droid_session(tmp_path, {"inputTokens": "734", "outputTokens": 1})
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "\n" not in message and ".settings.json" in message and "inputTokens" in message


def test_scan_reads_the_session_with_its_settings(tmp_path, monkeypatch):
    home = tmp_path / "home"
    path = droid_session(home / ".factory" / "sessions" / "-home-dev-app")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DROID_SESSIONS_DIR", raising=False)
    result = cacheviz.scan(cache=False)
    assert result.files["path"].to_list() == [str(path)]
    assert result.calls.height == 2


def _real() -> list[Path]:
    folder = os.environ.get("CACHEVIZ_DROID_SESSIONS")
    examples = os.environ.get("CACHEVIZ_EXAMPLES")  # public examples: <it>/droid/
    if not folder and examples and (Path(examples) / "droid").is_dir():
        folder = str(Path(examples) / "droid")
    if not folder:
        return []
    found = sorted(Path(folder).rglob("*.settings.json"))
    return [p.with_name(p.name.removesuffix(".settings.json") + ".jsonl") for p in found]


@pytest.mark.skipif(not _real(), reason="CACHEVIZ_DROID_SESSIONS (or CACHEVIZ_EXAMPLES) is not set")
@pytest.mark.parametrize("path", _real(), ids=lambda p: p.name)
def test_real_droid_sessions_match_an_independent_reading(path):
    assert detect(path) == "droid"
    lines = path.read_text(encoding="utf-8").splitlines()
    if not any(json.loads(line).get("message", {}).get("role") == "assistant" for line in lines):
        # a session opened and left (a real one: its start record alone, no tokenUsage)
        with pytest.raises(TranscriptError, match=r"no API call .*the file holds: 1 session_start"):
            cacheviz.load(path)
        return
    assert _got(cacheviz.load(path)) == independent(path)
