"""Generated request logs for the live (incremental) tests: varied sessions from a seed.

Each session mixes what can make a later call change an earlier call's row: reported
usage on some calls only (the calibration's median rate), TTL evidence that appears late
(a thread's TTL), side calls and sub-agents (the threads' names and tree), another
provider joining (one simulation per provider), gaps beyond the TTL, misses, drifts,
bad and blank lines, calls without a time and, with ``shuffle``, a call logged after a
later one (the log is ordered by request time).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

from cacheviz.formats.native import record_line

START = datetime(2026, 1, 1, tzinfo=UTC)


def _ts(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def session_lines(
    seed: int, calls: int = 30, *, shuffle: bool = False, breakpoints_from: int = 0
) -> list[str]:
    """The lines of a generated cacheviz request log (each ends with a newline).

    ``breakpoints_from``: the first call with a ``cache_control`` breakpoint (the main
    thread's TTL evidence).
    """
    rng = random.Random(seed)
    usage_share = rng.choice([1.0, 0.0, 0.6])
    late_ttl = rng.random() < 0.5
    other_provider_at = rng.choice([None, calls // 2, calls - 3])
    system_text = "You are a careful engineer. " * rng.randint(100, 400)
    tools = [
        {
            "name": f"tool_{k}",
            "description": f"does thing {k} " * 20,
            "input_schema": {"type": "object"},
        }
        for k in range(rng.randint(1, 4))
    ]
    history: list[dict] = []
    sub_history: list[dict] = []
    now = START
    out: list[str] = []
    for i in range(calls):
        now += timedelta(seconds=rng.choice([3, 5, 20, 60, 400, 4000]))
        ts = None if rng.random() < 0.05 else _ts(now)
        kind = rng.random()
        meta = None
        if other_provider_at is not None and i >= other_provider_at and kind < 0.3:
            body = {
                "model": "gpt-4o",
                "messages": [
                    {"role": "system", "content": system_text},
                    {"role": "user", "content": f"question {i} " * 30},
                ],
            }
            usage = None
            if rng.random() < usage_share:
                usage = {
                    "prompt_tokens": 900,
                    "completion_tokens": 20,
                    "prompt_tokens_details": {"cached_tokens": rng.choice([0, 768])},
                }
            out.append(
                record_line(
                    body,
                    provider="openai",
                    model="gpt-4o",
                    api="chat.completions",
                    ts=ts,
                    usage=usage,
                )
            )
            continue
        if kind < 0.12:  # a side call on another model
            model = "claude-haiku-4-5"
            body = {
                "model": model,
                "max_tokens": 64,
                "messages": [{"role": "user", "content": f"A title for step {i}"}],
            }
            usage = {"input_tokens": 15, "output_tokens": 6} if rng.random() < usage_share else None
            out.append(
                record_line(
                    body, provider="anthropic", model=model, api="messages", ts=ts, usage=usage
                )
            )
            continue
        system: list[dict] = [{"type": "text", "text": system_text}]
        ttl_now = not late_ttl or i > calls // 2
        control: dict = {"type": "ephemeral"}
        if ttl_now and seed % 2:
            control["ttl"] = "1h"
        if i >= breakpoints_from:
            system[0]["cache_control"] = control
        if rng.random() < 0.05:  # a drift in the system prompt
            system_text = system_text + f" Today is day {i}."
            system[0]["text"] = system_text
        sub = kind < 0.25 and i > 2
        thread = sub_history if sub else history
        role = "user" if len(thread) % 2 == 0 else "assistant"
        thread.append(
            {
                "role": role,
                "content": [{"type": "text", "text": f"{'sub ' if sub else ''}step {i} " * 15}],
            }
        )
        window = list(thread[-30:])
        if window and window[0]["role"] != "user":
            window = window[1:]
        if rng.random() < 0.06 and len(window) > 2:  # an old message edited
            window[0] = {"role": "user", "content": [{"type": "text", "text": f"edited {i}"}]}
        if sub:
            meta = {"thread": "agent-1", "parent": "main"}
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 512,
            "system": system,
            "tools": tools,
            "messages": window,
        }
        usage = None
        if rng.random() < usage_share:
            size = 150 * len(window) + len(system_text) // 4 + 60 * len(tools)
            read = rng.choice([0, size // 2, size - 200, size - 200, size - 200])
            write = max(0, size - read - 10)
            usage = {
                "input_tokens": 10,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write,
                "output_tokens": rng.randint(10, 300),
            }
            if ttl_now and seed % 2:
                usage["cache_creation"] = {
                    "ephemeral_1h_input_tokens": write,
                    "ephemeral_5m_input_tokens": 0,
                }
        out.append(
            record_line(
                body,
                provider="anthropic",
                model="claude-sonnet-4-5",
                api="messages",
                ts=ts,
                usage=usage,
                meta=meta,
            )
        )
    lines = [f"{line}\n" for line in out]
    if calls > 10:
        lines.insert(calls // 3, "this is not JSON\n")
        lines.insert(calls // 3 + 2, "\n")
    if shuffle and calls > 10:
        k = 2 * calls // 3
        record = json.loads(lines[k])
        record["ts"] = _ts(START)  # sent at the start, logged late
        lines[k] = json.dumps(record) + "\n"
    return lines
