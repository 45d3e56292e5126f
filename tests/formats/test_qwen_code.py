"""Qwen Code chat records (``~/.qwen/projects/<project>/chats/<session>.jsonl``).

The fixture is written here in Qwen Code's ``ChatRecord`` shape (read from its
``chatRecordingService.ts``): Claude Code's top-level keys, a Gemini ``Content`` as the
message and Gemini ``usageMetadata``. No public session was found to test on.
"""

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect
from cacheviz.request._blocks import render_text

SESSION = "5b0e2f4a-1c3d-4e5f-8a9b-0c1d2e3f4a5b"
MODEL = "qwen3-coder-plus"


def _record(n: int, kind: str, **extra) -> dict:
    return {
        "uuid": f"u{n:03d}",
        "parentUuid": f"u{n - 1:03d}" if n else None,
        "sessionId": SESSION,
        "timestamp": f"2026-03-01T10:00:{n:02d}.000Z",
        "type": kind,
        "cwd": "/home/dev/app",
        "version": "0.2.1",
        "gitBranch": "main",
        **extra,
    }


def _usage(prompt: int, cached: int, out: int, thoughts: int = 0) -> dict:
    return {
        "promptTokenCount": prompt,
        "cachedContentTokenCount": cached,
        "candidatesTokenCount": out,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": prompt + out + thoughts,
    }


def _chat() -> list[dict]:
    call = {"functionCall": {"id": "c1", "name": "read_file", "args": {"path": "a.py"}}}
    answer = {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "x"}}}
    telemetry = {
        "uiEvent": {
            "event.name": "qwen-code.api_response",
            "model": MODEL,
            "input_token_count": 900,
            "output_token_count": 40,
        }
    }
    compressed = [
        {"role": "user", "parts": [{"text": "<state_snapshot>read a.py</state_snapshot>"}]},
        {"role": "model", "parts": [{"text": "Got it."}]},
    ]
    return [
        _record(0, "system", subtype="session_model", systemPayload={"modelId": MODEL}),
        _record(1, "user", message={"role": "user", "parts": [{"text": "fix a.py ✓"}]}),
        _record(
            2,
            "assistant",
            model=MODEL,
            message={"role": "model", "parts": [{"text": "plan", "thought": True}, call]},
            usageMetadata=_usage(12000, 0, 30, 12),
        ),
        _record(3, "tool_result", message={"role": "user", "parts": [answer]}),
        _record(4, "system", subtype="ui_telemetry", systemPayload=telemetry),
        _record(
            5,
            "assistant",
            model=MODEL,
            message={"role": "model", "parts": [{"text": "Fixed."}]},
            usageMetadata=_usage(12100, 11904, 8),
        ),
        _record(6, "user", message={"role": "user", "parts": [{"text": "explain"}]}),
        _record(
            7,
            "system",
            subtype="chat_compression",
            systemPayload={"info": {"originalTokenCount": 12200}, "compressedHistory": compressed},
        ),
        _record(
            8,
            "assistant",
            model=None,  # the record a Claude Code reader fails on
            message={"role": "model", "parts": [{"text": "It reads a.py."}]},
            usageMetadata=_usage(3000, 0, 20),
        ),
        _record(
            9,
            "assistant",
            model=MODEL,
            isSidechain=True,
            agentId="explore-7f3c",
            agentName="Explore",
            message={"role": "model", "parts": [{"text": "found"}]},
            usageMetadata=_usage(5000, 0, 10),
        ),
        _record(10, "assistant", model=MODEL, message={"role": "model", "parts": []}),
    ]


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


@pytest.fixture
def chat(tmp_path):
    return _write(
        tmp_path / ".qwen" / "projects" / "-home-dev-app" / "chats" / f"{SESSION}.jsonl", _chat()
    )


def test_told_from_claude_code_and_one_call_per_assistant_record(chat):
    assert detect(chat) == "qwen-code"
    session = cacheviz.load(chat)
    # independently of the reader: the assistant records and their usageMetadata
    records = [json.loads(line) for line in chat.read_text().splitlines()]
    answers = [r for r in records if r["type"] == "assistant"]
    metas = [r["usageMetadata"] for r in answers if "usageMetadata" in r]
    # the api_response events no answer holds (another prompt and output): calls too
    telemetry = [
        r["systemPayload"]["uiEvent"]
        for r in records
        if r.get("subtype") == "ui_telemetry"
        and r["systemPayload"]["uiEvent"]["event.name"] == "qwen-code.api_response"
    ]
    pairs = {(m["promptTokenCount"], m["candidatesTokenCount"]) for m in metas}
    alone = [e for e in telemetry if (e["input_token_count"], e["output_token_count"]) not in pairs]
    assert len(session.calls) == len(answers) + len(alone) == 5 + 1
    calls = session.analyze().calls
    inputs = sum(m["promptTokenCount"] for m in metas) + sum(e["input_token_count"] for e in alone)
    assert calls["reported_input_tokens"].sum() == inputs == 12000 + 12100 + 3000 + 5000 + 900
    assert calls["reported_cache_read_tokens"].sum() == 11904
    output = sum(m["candidatesTokenCount"] + m["thoughtsTokenCount"] for m in metas) + 40
    assert calls["reported_output_tokens"].sum() == output == 30 + 12 + 8 + 20 + 10 + 40
    assert calls["reported_cache_write_tokens"].null_count() == 6  # not reported, not 0
    assert session.calls[-1].usage is None  # an answer without usageMetadata
    assert [c.model for c in session.calls] == [MODEL] * 6  # a null model: the session's
    assert session.calls[3].meta["model_source"] == "the session's last model"
    assert [c.thread_hint for c in session.calls] == [
        "main",
        "telemetry only",  # logged only in its ui_telemetry record, in its place
        "main",
        "main",
        "sub-agent explore-7f3c",
        "main",
    ]
    assert session.calls[1].meta["source"] == "ui_telemetry api_response (not in the chat)"
    assert session.calls[4].parent_hint == "main"


def test_requests_are_rebuilt_and_restart_after_a_compression(chat):
    session = cacheviz.load(chat)
    first, _, second, after = session.calls[:4]
    assert second.hashes[: len(first.hashes)] == first.hashes  # prompt, call, result re-sent
    sent = [session.contents[h].value for h in second.hashes[1:]]
    assert "plan" not in json.dumps(sent)  # the thought part is not sent back
    assert len(after.hashes) == 1 + 2  # the unlogged prefix, then the compressed history
    assert "state_snapshot" in json.dumps(session.contents[after.hashes[1]].value)


def test_every_part_reaches_the_tokenizer(chat):
    """A Gemini ``Content``'s parts are what is sized (they were once sized as empty)."""
    session = cacheviz.load(chat)
    second = session.calls[2]
    texts = [render_text(session.contents[h]) for h in second.hashes[1:]]
    joined = "\n".join(text for _, text in texts)
    for sent in ("fix a.py ✓", "read_file", '{"path":"a.py"}', '{"output":"x"}'):
        assert sent in joined
    assert [role for role, _ in texts] == ["user", "model", "user"]
    lengths = session.analyze().segments.filter(pl.col("call") == 2)["tokens"].to_list()
    assert all(n > 3 for n in lengths[1:])  # more than a message's framing


def test_scan_finds_the_default_folder(chat, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    result = cacheviz.scan(cache=False)
    found = {str(loc.path) for loc in result.locations if loc.agent == "qwen-code" and loc.found}
    assert found == {str(tmp_path / ".qwen" / "projects")}
    assert result.files["format"].to_list() == ["qwen-code"]
    assert result.calls.height == 6


def test_a_bad_record_is_one_line(chat):
    records = _chat()
    records[5]["usageMetadata"]["cachedContentTokenCount"] = -3
    path = _write(chat.with_name("bad.jsonl"), records)
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "\n" not in message and f"{path}:6" in message and "cachedContentTokenCount" in message


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_lines_load_or_fail_in_one_line(tmp_path_factory, data, loads_or_fails_cleanly):
    lines = [json.dumps(r) for r in _chat()]
    junk = st.one_of(
        st.just("{oops"),
        st.just("[1]"),
        st.just(json.dumps(_record(1, "assistant", message=3, usageMetadata={}))),
        st.just(json.dumps(_record(1, "user", message={"parts": 7}))),
        st.just(json.dumps(_record(1, "system", subtype="chat_compression", systemPayload={}))),
        st.just(json.dumps(_record(1, "assistant", usageMetadata={"promptTokenCount": "x"}))),
        st.text(max_size=20),
    )
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(lines) - 1))
        lines[at] = data.draw(junk)
    path = tmp_path_factory.mktemp("qwen") / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="qwen-code", errors=e))


def test_openai_compatible_candidates_already_hold_the_thoughts(tmp_path):
    """Qwen Code's OpenAI-compatible generator: candidates = completion_tokens (reasoning
    included), total = prompt + candidates; Gemini's own: the thoughts on top."""
    openai_style = {
        "promptTokenCount": 16009,
        "cachedContentTokenCount": 0,
        "candidatesTokenCount": 234,
        "thoughtsTokenCount": 37,
        "totalTokenCount": 16009 + 234,
    }
    gemini_style = _usage(5000, 4096, 20, thoughts=7)  # total = prompt + out + thoughts
    records = [
        _record(1, "user", message={"role": "user", "parts": [{"text": "hi"}]}),
        _record(2, "assistant", model=MODEL, usageMetadata=openai_style,
                message={"role": "model", "parts": [{"text": "a"}]}),
        _record(3, "user", message={"role": "user", "parts": [{"text": "more"}]}),
        _record(4, "assistant", model=MODEL, usageMetadata=gemini_style,
                message={"role": "model", "parts": [{"text": "b"}]}),
    ]  # fmt: skip
    session = cacheviz.load(_write(tmp_path / "chats" / "s.jsonl", records))
    first, second = (c.usage for c in session.calls)
    assert (first.output_tokens, first.reasoning_tokens) == (234, 37)  # not 271
    assert (second.output_tokens, second.reasoning_tokens) == (27, 7)


def test_an_answer_without_usage_takes_the_api_response_logged_just_before_it(tmp_path):
    event = {"event.name": "qwen-code.api_response", "model": MODEL, "input_token_count": 100,
             "output_token_count": 5, "event.timestamp": "2026-03-01T10:00:01.900Z"}  # fmt: skip
    records = [
        _record(1, "user", message={"role": "user", "parts": [{"text": "hi"}]}),
        _record(2, "system", subtype="ui_telemetry", systemPayload={"uiEvent": event}),
        _record(3, "assistant", model=MODEL, message={"role": "model", "parts": [{"text": "a"}]}),
    ]
    session = cacheviz.load(_write(tmp_path / "chats" / "s.jsonl", records))
    assert len(session.calls) == 1 and session.calls[0].usage is None  # one call, not two
    assert session.ignored["api_response telemetry of an assistant record (the same call)"] == 1
