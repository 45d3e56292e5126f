"""Continue's ``tokensGenerated.jsonl``: one usage-only call per completion record.

Records written in the 0.2.0 dev-data schema of Continue's ``config-yaml`` package.
"""

import json
from pathlib import Path

import pytest

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect


def _record(second: int, model: str, provider: str, prompt: int, generated: int) -> dict:
    return {
        "model": model,
        "provider": provider,
        "promptTokens": prompt,
        "generatedTokens": generated,
        "eventName": "tokensGenerated",
        "schema": "0.2.0",
        "createdAt": f"2026-05-04T10:00:{second:02d}.000Z",
        "userId": "u-1",
        "userAgent": "Visual Studio Code/1.99 (Continue/1.1.40)",
        "selectedProfileId": "local",
    }


def records() -> list[dict]:
    return [
        _record(0, "claude-sonnet-4-5", "anthropic", 5200, 310),  # chat
        _record(3, "codestral-latest", "mistral", 1200, 18),  # autocomplete
        _record(4, "codestral-latest", "mistral", 1260, 9),
        _record(9, "claude-sonnet-4-5", "anthropic", 5600, 120),
    ]


def write(folder: Path, rows: list[dict]) -> Path:
    path = folder / "dev_data" / "0.2.0" / "tokensGenerated.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def independent(path: Path) -> dict[str, int]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {
        "calls": len(rows),
        "input": sum(r["promptTokens"] for r in rows),
        "output": sum(r["generatedTokens"] for r in rows),
    }


def test_one_usage_only_call_per_record(tmp_path):
    path = write(tmp_path / ".continue", records())
    assert detect(path) == "continue"
    session = cacheviz.load(path)
    calls = session.analyze().calls
    by_hand = {"calls": 4, "input": 5200 + 1200 + 1260 + 5600, "output": 310 + 18 + 9 + 120}
    got = {
        "calls": calls.height,
        "input": calls["reported_input_tokens"].sum(),
        "output": calls["reported_output_tokens"].sum(),
    }
    assert by_hand == independent(path) == got
    assert calls["reported_cache_read_tokens"].null_count() == 4  # not logged: null, not 0
    assert {c.thread_hint for c in session.calls} == {
        "continue claude-sonnet-4-5",
        "continue codestral-latest",
    }
    assert session.calls[1].meta == {"usage_only": True, "agent_provider": "mistral"}
    assert session.calls[1].provider == "mistral"


def test_a_corrupt_count_is_one_line_and_skip_nulls_the_call(tmp_path):
    rows = records()
    rows[2]["promptTokens"] = -3
    path = write(tmp_path, rows)
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    assert "\n" not in str(info.value) and f"{path}:3" in str(info.value)
    with pytest.warns(CacheVizWarning, match="usage set to null for 1 call"):
        session = cacheviz.load(path, errors="skip")
    assert [c.usage is None for c in session.calls] == [False, False, True, False]


def test_scan_finds_the_token_log(tmp_path, monkeypatch):
    home = tmp_path / "home"
    path = write(home / ".continue", records())
    monkeypatch.setenv("HOME", str(home))
    result = cacheviz.scan(cache=False)
    assert result.files["path"].to_list() == [str(path)]
    assert result.calls.height == 4
