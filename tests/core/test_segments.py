"""The segments frame (CacheShape, cacheviz.prefix._segments) and Whale's prefix/log hashes."""

from __future__ import annotations

import cacheviz
from cacheviz.prefix._segments import log_hashes, prefix_hash

SYSTEM = [{"type": "text", "text": "You are a careful engineer. " * 40}]
TOOLS = [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}]


def _analysis(write_log, anthropic_body, bodies):
    built = [anthropic_body(m, system=s, tools=t) for m, s, t in bodies]
    return cacheviz.load(write_log(built)).analyze()


def _history(n):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(n)]


def test_one_row_per_call_and_segment(write_log, anthropic_body):
    bodies = [(_history(1), SYSTEM, TOOLS), (_history(3), SYSTEM, TOOLS)]
    analysis = _analysis(write_log, anthropic_body, [(m, s, t) for m, s, t in bodies])
    segments = analysis.segments
    assert segments.height == sum(len(c.blocks) for c in analysis.session.calls)
    second = segments.filter(segments["call"] == 1)
    assert second["part"].to_list() == ["tools", "system", "messages", "messages", "messages"]
    assert second["status"].to_list()[:3] == ["same", "same", "same"]
    assert set(second["status"].to_list()[3:]) == {"new"}
    # offsets are cumulative: each segment starts where the one before ended
    offsets, tokens = second["token_offset"].to_list(), second["tokens"].to_list()
    assert all(offsets[i + 1] == offsets[i] + tokens[i] for i in range(len(offsets) - 1))


def test_the_prefix_hash_covers_tools_and_system_only(write_log, anthropic_body):
    other = [{"type": "text", "text": "You are a terse engineer."}]
    analysis = _analysis(
        write_log,
        anthropic_body,
        [(_history(1), SYSTEM, TOOLS), (_history(3), SYSTEM, TOOLS), (_history(3), other, TOOLS)],
    )
    calls = analysis.session.calls
    assert prefix_hash(calls[0]) == prefix_hash(calls[1])
    assert prefix_hash(calls[1]) != prefix_hash(calls[2])


def test_the_log_tail_is_the_last_eight_messages(write_log, anthropic_body):
    analysis = _analysis(write_log, anthropic_body, [(_history(12), SYSTEM, TOOLS)])
    call = analysis.session.calls[0]
    head, tail = log_hashes(call)
    trimmed = _analysis(write_log, anthropic_body, [(_history(12)[4:], SYSTEM, TOOLS)])
    # the same last eight messages: the same tail, a different (empty) head
    assert log_hashes(trimmed.session.calls[0])[1] == tail
    assert log_hashes(trimmed.session.calls[0])[0] != head
