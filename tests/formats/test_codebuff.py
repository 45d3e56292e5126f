"""Codebuff chats: fixtures in the shape of its ``chat-messages.json`` (``ChatMessage[]``).

The expected calls and totals are read here from the format's rules (one call per ``ai``
/ ``agent`` message; the last run state's ``cacheTotalInputTokens`` and
``cacheInputTokens`` the session's totals), not from the reader.
"""

import copy
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect

CHAT = "2026-09-20T10-00-00.000Z"


def _state(total: int, cached: int) -> dict:
    main = {
        "agentId": "main-agent",
        "agentType": "base2",
        "messageHistory": [],
        "creditsUsed": 0,
        "cacheInputTokens": cached,
        "cacheTotalInputTokens": total,
    }
    return {
        "runState": {"sessionState": {"mainAgentState": main}, "output": {"type": "lastMessage"}}
    }


def messages() -> list[dict]:
    """Two runs: the first reads a file and spawns a sub-agent; an error notice between."""
    return [
        {
            "id": "mode-1",
            "variant": "ai",
            "content": "",
            "blocks": [{"type": "mode-divider", "mode": "DEFAULT"}],
            "timestamp": "2026-09-20T10:00:00.000Z",
        },
        {
            "id": "u1",
            "variant": "user",
            "content": "why does the build fail?",
            "timestamp": "2026-09-20T10:00:01.000Z",
        },
        {
            "id": "a1",
            "variant": "ai",
            "content": "",
            "timestamp": "2026-09-20T10:00:02.000Z",
            "blocks": [
                {"type": "text", "content": "Thinking it over", "textType": "reasoning"},
                {"type": "text", "content": "Reading the config."},
                {
                    "type": "tool",
                    "toolCallId": "t1",
                    "toolName": "read_files",
                    "input": {"paths": ["tsconfig.json"]},
                    "output": '{"strict": true}',
                },
                {
                    "type": "agent",
                    "agentId": "s1",
                    "agentName": "File Picker",
                    "agentType": "file-picker",
                    "content": "tsconfig.json",
                    "status": "complete",
                },
                {"type": "text", "content": "A strict-mode error."},
            ],
            "credits": 12,
            "metadata": _state(48_000, 30_000),
        },
        {
            "id": "e1",
            "variant": "error",
            "content": "network hiccup",
            "timestamp": "2026-09-20T10:01:00.000Z",
        },
        {
            "id": "u2",
            "variant": "user",
            "content": "fix it",
            "timestamp": "2026-09-20T10:02:00.000Z",
        },
        {
            "id": "a2",
            "variant": "ai",
            "content": "Fixed.",
            "timestamp": "10:02 AM",  # the CLI writes a clock time
            "credits": 5,
            "metadata": _state(80_000, 61_000),
        },
    ]


def _divider(message: dict) -> bool:
    """A mode divider: an ``ai`` message whose blocks are all ``mode-divider`` (not a run)."""
    blocks = message.get("blocks") or []
    return bool(blocks) and all(b.get("type") == "mode-divider" for b in blocks)


def codebuff_chat(root: Path, rows: list | None = None) -> Path:
    """A chat folder under ``root`` (a channel's ``projects`` folder); its messages file."""
    folder = root / "my-app" / "chats" / CHAT
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "chat-messages.json"
    path.write_text(json.dumps(messages() if rows is None else rows, indent=2))
    (folder / "run-state.json").write_text(json.dumps({"sessionState": {}}))
    return path


def test_each_run_is_a_call_and_the_run_state_gives_the_sessions_totals(tmp_path):
    path = codebuff_chat(tmp_path)
    assert detect(path) == "codebuff"
    session = cacheviz.load(path)
    runs = [m for m in messages() if m["variant"] in ("ai", "agent") and not _divider(m)]
    assert len(session.calls) == len(runs)
    assert all(c.usage is None for c in session.calls)
    last = runs[-1]["metadata"]["runState"]["sessionState"]["mainAgentState"]
    totals = session.reported_totals
    assert totals is not None
    assert (totals.input_tokens, totals.cache_read_tokens, totals.output_tokens) == (
        last["cacheTotalInputTokens"],
        last["cacheInputTokens"],
        None,
    )
    first, second = session.calls
    assert first.meta["codebuff_credits"] == 12 and second.meta["codebuff_credits"] == 5
    assert second.meta["codebuff_input_tokens"] == 80_000 - 48_000
    assert second.meta["codebuff_cached_input_tokens"] == 61_000 - 30_000
    assert session.ignored == {"error notice": 1, "mode divider": 1}
    assert first.ts is not None and second.ts is None  # a clock time (the CLI's) has no date
    assert second.meta["codebuff_time"] == "10:02 AM"


def test_the_chat_is_rebuilt_with_tools_and_sub_agents_in_the_answer(tmp_path):
    session = cacheviz.load(codebuff_chat(tmp_path))
    second = session.calls[1]
    values = [session.contents[b.hash].value for b in second.blocks if b.part == "messages"]
    assert [v["role"] for v in values] == ["user", "assistant", "user", "user"]
    answer = values[1]["content"]
    kinds = [b["type"] for b in answer]
    assert kinds == ["text", "tool_use", "text", "text"]  # reasoning left out
    assert answer[2]["text"] == "[File Picker] tsconfig.json"
    assert values[2]["content"][0]["tool_use_id"] == "t1"


def test_a_scan_of_a_home_with_codebuff_finds_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    codebuff_chat(home / ".config" / "manicode-dev" / "projects")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEBUFF_DATA_DIR", raising=False)
    result = cacheviz.scan(cache=False)
    rows = dict(
        zip(result.files["format"].to_list(), result.files["status"].to_list(), strict=True)
    )
    assert rows == {"codebuff": "ok"}  # run-state.json is not a unit
    assert result.calls.height == 2


def test_other_json_arrays_are_not_taken_for_codebuff(tmp_path):
    cline = tmp_path / "api_conversation_history.json"
    cline.write_text(json.dumps([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]))
    assert not cacheviz.formats.READERS["codebuff"].detect(cline, cline.read_bytes())


def test_a_bad_message_is_one_error_naming_it(tmp_path):
    rows = messages()
    rows.insert(2, ["not", "a", "message"])
    path = codebuff_chat(tmp_path, rows)
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path, format="codebuff")
    assert "\n" not in str(info.value) and "messages[2]" in str(info.value)
    with pytest.warns(CacheVizWarning, match=r"messages\[2\]"):
        skipped = cacheviz.load(path, format="codebuff", errors="skip")
    assert len(skipped.calls) == 2


def test_a_bad_total_is_one_error_naming_its_field(tmp_path):
    rows = messages()
    rows[-1]["metadata"] = _state(-4, 0)
    with pytest.raises(TranscriptError, match="cacheTotalInputTokens"):
        cacheviz.load(codebuff_chat(tmp_path, rows), format="codebuff")


VALUES = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=4), st.just([1]), st.just({}))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_chats_load_or_fail_in_one_line(tmp_path_factory, data, loads_or_fails_cleanly):
    rows = messages()
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(rows) - 1))
        target = data.draw(st.sampled_from(["message", "field", "blocks", "total"]))
        value = copy.deepcopy(data.draw(VALUES))  # never the same object twice
        if target == "message":
            rows[index] = value
        elif isinstance(rows[index], dict) and target == "field":
            rows[index][data.draw(st.sampled_from(["content", "timestamp", "credits"]))] = value
        elif isinstance(rows[index], dict) and target == "blocks":
            rows[index]["blocks"] = [value]
        elif isinstance(rows[index], dict):
            rows[index]["metadata"] = {
                "runState": {"sessionState": {"mainAgentState": {"cacheTotalInputTokens": value}}}
            }
    path = codebuff_chat(tmp_path_factory.mktemp("codebuff"), rows)
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="codebuff", errors=e))


REAL = os.environ.get("CACHEVIZ_CODEBUFF_CHATS")


@pytest.mark.skipif(not REAL, reason="CACHEVIZ_CODEBUFF_CHATS is not set")
def test_real_chats_match_an_independent_reading():
    files = sorted(Path(REAL or ".").rglob("chat-messages.json"))
    assert files, f"no chat-messages.json under {REAL}"
    for path in files:
        rows = json.loads(path.read_text())
        runs = [
            m
            for m in rows
            if isinstance(m, dict) and m.get("variant") in ("ai", "agent") and not _divider(m)
        ]
        assert len(cacheviz.load(path, format="codebuff").calls) == len(runs), path
