"""The core pipeline on real request bodies (claude-trace capture of Claude Code 1.0.6).

Reading claude-trace itself is the job of its own reader; here each captured body is
wrapped in a cacheviz request log line so the shaping, prefix and drift stages run on
real Anthropic requests. Skips when ../shared/realdata is absent.
"""

import json
from datetime import UTC, datetime

import polars as pl

import cacheviz

TRACE = "anthropic_raw/badlogic__lemmy__test-traffic.first10.jsonl"


def _as_request_log(source, target):
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    lines, expected_input = [], 0
    for row in rows:
        body = row["request"]["body"]
        ts = datetime.fromtimestamp(row["request"]["timestamp"], UTC).isoformat()
        response = row["response"].get("body")
        usage = response.get("usage") if isinstance(response, dict) else None
        if usage:
            expected_input += sum(
                usage.get(k) or 0
                for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
        line = {
            "ts": ts,
            "provider": "anthropic",
            "model": body["model"],
            "request": body,
            "response": {"usage": usage},
        }
        lines.append(json.dumps(line))
    target.write_text("\n".join(lines) + "\n")
    return rows, expected_input


def test_claude_code_main_thread_is_append_only_and_side_calls_are_apart(realdata, tmp_path):
    rows, expected_input = _as_request_log(realdata / TRACE, tmp_path / "trace.jsonl")
    analysis = cacheviz.load(tmp_path / "trace.jsonl").analyze()
    calls = analysis.calls
    assert calls.height == len(rows) == 10

    sonnet = calls.filter(pl.col("model").str.starts_with("claude-sonnet"))
    assert sonnet["thread"].n_unique() == 1
    assert sonnet.height == 3
    # Claude Code moves `cache_control` to the newest message on every call: not a drift
    assert not sonnet["drift"].any()
    assert sonnet["prefix_tokens"].to_list()[1:] == sonnet["input_tokens"].to_list()[:-1]
    # 17 tools, 2 system blocks, then the conversation, in cache order
    last = analysis.segments.filter(pl.col("call") == sonnet["call"][-1])
    assert last.group_by("part", maintain_order=True).len().rows() == [
        ("tools", 17),
        ("system", 2),
        ("messages", 5),
    ]

    haiku = calls.filter(pl.col("model").str.contains("haiku"))
    assert not set(haiku["thread"]) & set(sonnet["thread"])
    assert calls["reported_input_tokens"].sum() == expected_input
