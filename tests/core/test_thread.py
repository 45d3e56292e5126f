"""Threads (cacheviz.prefix._thread): which calls are one conversation, and who branched from whom."""

from __future__ import annotations

import cacheviz

SYSTEM = [{"type": "text", "text": "You are a careful engineer. " * 60}]
TOOLS = [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}]


def _turns(n, *, prefix="task"):
    history, bodies = [], []
    for i in range(n):
        history = [*history, {"role": "user", "content": f"{prefix} {i}: " + "word " * 40}]
        bodies.append(history)
        history = [*history, {"role": "assistant", "content": f"answer {i}"}]
    return bodies


def _threads(path):
    calls = cacheviz.load(path).analyze().calls
    return calls["thread"].to_list(), calls["parent_thread"].to_list()


def test_a_growing_conversation_is_one_thread(write_log, anthropic_body):
    bodies = [anthropic_body(m, system=SYSTEM, tools=TOOLS) for m in _turns(4)]
    threads, parents = _threads(write_log(bodies))
    assert len(set(threads)) == 1
    assert parents == [None] * 4


def test_a_system_or_tool_change_does_not_split_the_thread(write_log, anthropic_body):
    turns = _turns(3)
    changed = [{"type": "text", "text": "You are a terse engineer. " * 60}]
    bodies = [
        anthropic_body(turns[0], system=SYSTEM, tools=TOOLS),
        anthropic_body(turns[1], system=changed, tools=TOOLS),
        anthropic_body(turns[2], system=changed, tools=[]),
    ]
    threads, _ = _threads(write_log(bodies))
    assert len(set(threads)) == 1


def test_a_side_call_starts_its_own_thread_under_the_conversation(write_log, anthropic_body):
    main = _turns(3)
    side = anthropic_body(
        [{"role": "user", "content": "Give this conversation a title."}],
        model="claude-haiku-4-5",
    )
    bodies = [
        anthropic_body(main[0], system=SYSTEM, tools=TOOLS),
        side,
        anthropic_body(main[1], system=SYSTEM, tools=TOOLS),
        anthropic_body(main[2], system=SYSTEM, tools=TOOLS),
    ]
    threads, parents = _threads(write_log(bodies))
    assert threads[0] == threads[2] == threads[3]
    assert threads[1] != threads[0]
    assert parents[1] == threads[0]
