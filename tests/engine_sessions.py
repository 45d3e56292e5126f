"""The five session kinds the engine tier replays (and ``bench/vllm_cpu.py`` sends to vLLM).

Each session has :data:`CALLS` calls of a coding agent's growing conversation under a
long system prompt that carries a timestamp:

* ``stable``: the timestamp never changes;
* ``early``: it is refreshed once, before call :data:`DRIFT_AT` (0-based; the 10th call),
  near the top of the system prompt: everything after it is recomputed once;
* ``every``: it is refreshed on every call, near the top;
* ``end``: it is refreshed on every call, at the end of the system prompt;
* ``interleaved``: two threads (the same stable system prompt) take turns, 10 calls each.

Everything is deterministic (a fixed seed): the same prompts on every run.
"""

from __future__ import annotations

import random

CALLS = 20
DRIFT_AT = 9
KINDS = ("stable", "early", "every", "end", "interleaved")
LINEAR = ("stable", "early", "every", "end")

_WORDS = [
    "cache",
    "prefix",
    "token",
    "request",
    "response",
    "agent",
    "tool",
    "function",
    "module",
    "parser",
    "config",
    "value",
    "thread",
    "session",
    "model",
    "prompt",
    "system",
    "user",
    "assistant",
    "message",
    "block",
    "layout",
    "stable",
    "drift",
    "engine",
    "slot",
    "batch",
    "prefill",
    "decode",
    "attention",
    "context",
    "window",
    "memory",
    "eviction",
    "policy",
    "review",
    "change",
    "commit",
    "branch",
    "test",
    "build",
    "deploy",
    "error",
    "warning",
    "retry",
    "budget",
    "limit",
    "schema",
    "column",
    "frame",
    "table",
    "report",
    "summary",
    "detail",
    "field",
    "record",
    "line",
    "file",
    "folder",
    "path",
]


def _body(seed: int = 7, words: int = 1300) -> str:
    rng = random.Random(seed)
    sentences = []
    while sum(len(s.split()) for s in sentences) < words:
        n = rng.randint(8, 16)
        sentences.append(" ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + ".")
    return " ".join(sentences)


BODY = _body()


def _stamp(minute: int) -> str:
    return f"2026-12-06T10:{minute:02d}:00Z"


def system_prompt(stamp: str, *, at_end: bool = False) -> str:
    """The agent's system prompt with the timestamp near its top, or at its end."""
    head = "You are a coding agent working in the user's repository."
    if at_end:
        return f"{head}\n{BODY}\nCurrent time: {stamp}"
    return f"{head}\nCurrent time: {stamp}\n{BODY}"


def _turn(thread: str, k: int) -> tuple[str, str]:
    user = (
        f"[{thread}] Step {k}: open module_{k}.py, explain what f_{k} does with its "
        f"arguments, and say whether its tests cover the error path."
    )
    answer = (
        f"[{thread}] In module_{k}.py, f_{k} reads the configuration, checks the value "
        f"against the schema and returns a frame; the tests cover the happy path only."
    )
    return user, answer


def _requests(stamps: list[str], thread: str, *, at_end: bool = False) -> list[list[dict]]:
    out, history = [], []
    for k, stamp in enumerate(stamps):
        user, answer = _turn(thread, k)
        system = {"role": "system", "content": system_prompt(stamp, at_end=at_end)}
        out.append([system, *history, {"role": "user", "content": user}])
        history = [*history, {"role": "user", "content": user}]
        history = [*history, {"role": "assistant", "content": answer}]
    return out


def sessions() -> dict[str, list[list[dict]]]:
    """Each kind's requests (OpenAI chat message lists), in the order they are sent."""
    fixed = [_stamp(0)] * CALLS
    early = [_stamp(0) if i < DRIFT_AT else _stamp(5) for i in range(CALLS)]
    every = [_stamp(i) for i in range(CALLS)]
    a = _requests([_stamp(0)] * (CALLS // 2), "a")
    b = _requests([_stamp(0)] * (CALLS // 2), "b")
    return {
        "stable": _requests(fixed, "main"),
        "early": _requests(early, "main"),
        "every": _requests(every, "main"),
        "end": _requests(every, "main", at_end=True),
        "interleaved": [call for pair in zip(a, b, strict=True) for call in pair],
    }


def threads(kind: str) -> list[str]:
    """The thread of each call of ``kind``."""
    if kind == "interleaved":
        return ["a", "b"] * (CALLS // 2)
    return ["main"] * CALLS
