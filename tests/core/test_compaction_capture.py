"""A compaction in a byte-exact capture is an expected rebuild, not a layout bug.

Claude Code's ``/compact`` in a capture of the requests sent (raw API logs here; the
same requests in claude-trace, claude-tap, cc-viewer or mitmproxy): the main
conversation (its system prompt, 6 tools), then the summarizer request — its own system
block and one tool over the conversation so far — then the conversation going on from
the summary with the main system prompt and tools. Issue 28: that was a
``block_removed`` drift and ``check`` raised ``dynamic_system`` (exit 1).
"""

from __future__ import annotations

import json

import cacheviz
from cacheviz.formats.native import record_line

SONNET = "claude-sonnet-4-5-20250929"


def _text(n: int, seed: str = "w") -> str:
    return " ".join(f"{seed}{i % 97}" for i in range(n))


def _tool(name: str) -> dict:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    return {"name": name, "description": f"{name}: " + _text(60, name), "input_schema": schema}


MAIN_SYSTEM = [
    {"type": "text", "text": "You are Claude Code. " + _text(2500, "s")},
    {
        "type": "text",
        "text": "Env: /home/dev " + _text(200, "e"),
        "cache_control": {"type": "ephemeral"},
    },
]
MAIN_TOOLS = [_tool(n) for n in ("Bash", "Read", "Edit", "Write", "Grep", "Glob")]
SUMMARIZER_SYSTEM = [
    {
        "type": "text",
        "text": "You are a helpful AI assistant tasked with summarizing conversations.",
    }
]
SUMMARIZER_TOOLS = [_tool("Read")]


def _usage(total: int, read: int, write: int) -> dict:
    return {
        "input_tokens": total - read - write,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": 40,
    }


def _capture(tmp_path, *, compaction: bool = True):
    lines = []
    history: list[dict] = []
    minute = 0

    def send(system, tools, messages, usage):
        nonlocal minute
        body = {"model": SONNET, "max_tokens": 1000, "system": system, "tools": tools}
        sent = [
            {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]}
            for m in messages
        ]
        sent[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}  # the growing history
        body["messages"] = sent
        ts = f"2026-03-01T10:{minute:02d}:00Z"
        minute += 1
        lines.append(
            record_line(
                body, provider="anthropic", model=SONNET, api="messages", ts=ts, usage=usage
            )
        )

    total = 6_000
    for k in range(4):  # the main conversation, each call reading the previous one
        history = [*history, {"role": "user", "content": f"task {k}: " + _text(400, f"u{k}")}]
        send(MAIN_SYSTEM, MAIN_TOOLS, history, _usage(total, total - 700 if k else 0, 700))
        history = [*history, {"role": "assistant", "content": "done " + _text(80, f"a{k}")}]
        total += 900
    if compaction:
        ask = {"role": "user", "content": "Your task is to create a detailed summary " + _text(300)}
        send(SUMMARIZER_SYSTEM, SUMMARIZER_TOOLS, [*history, ask], _usage(total, 0, total - 2))
    summary = {"role": "user", "content": "This session is being continued: " + _text(500, "sum")}
    history = [summary]
    for k in range(2):  # going on from the summary, main system prompt and tools again
        history = [*history, {"role": "user", "content": f"next {k}: " + _text(200, f"n{k}")}]
        read = 3_800 if k == 0 else 4_800
        send(MAIN_SYSTEM, MAIN_TOOLS, history, _usage(read + 1_000, read, 1_000))
        history = [*history, {"role": "assistant", "content": "ok " + _text(60, f"b{k}")}]
    path = tmp_path / "capture.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_summarizer_request_and_the_rebuild_are_no_drift(tmp_path):
    analysis = cacheviz.load(_capture(tmp_path)).analyze()
    calls = analysis.calls
    assert calls["rebuild"].to_list() == [None] * 4 + ["compaction"] * 2 + [None]
    assert analysis.drifts.height == 0
    misses = analysis.misses
    assert not set(misses["cause"].to_list()) & {"provider_side", "no_breakpoint", "unknown"}


def test_check_is_silent_on_a_compaction_in_a_capture(tmp_path, capsys):
    from cacheviz import cli

    path = _capture(tmp_path)
    assert cli.main(["check", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rules = {f["rule"] for f in doc["findings"]}
    assert "dynamic_system" not in rules


def test_a_system_prompt_that_changes_for_good_is_still_a_drift(tmp_path):
    # without the rebuilt history after it, a new system prompt and tools are a drift
    lines = _capture(tmp_path).read_text().splitlines()
    changed = lines[:5]  # the main conversation and the "summarizer", nothing after
    follow = json.loads(lines[4])
    follow["request"]["messages"].append({"role": "assistant", "content": "sure " + _text(40)})
    follow["request"]["messages"].append({"role": "user", "content": "go on " + _text(40)})
    follow["ts"] = "2026-03-01T10:05:00Z"
    changed.append(json.dumps(follow))
    path = tmp_path / "changed.jsonl"
    path.write_text("\n".join(changed) + "\n", encoding="utf-8")
    analysis = cacheviz.load(path).analyze()
    assert analysis.calls["rebuild"].is_null().all()
