"""Deterministic generator of the bundled sample sessions (cacheviz request log v1).

Each sample reproduces one context layout from the seeds (KiloCode's context assembly,
Whale's append-only memory, the KV-cache-friendly layout rules and their anti-patterns).
``python -m cacheviz.teach.samples OUT_DIR`` writes them; a test regenerates them and checks
that the bundled files are byte-identical.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cacheviz.formats.native import record_line

_WORDS = [
    "cache",
    "prefix",
    "token",
    "request",
    "model",
    "agent",
    "tool",
    "file",
    "parser",
    "session",
    "layout",
    "message",
    "system",
    "history",
    "schema",
    "index",
    "segment",
    "hash",
    "byte",
    "provider",
    "prompt",
    "context",
    "window",
    "memory",
    "summary",
    "config",
    "module",
    "function",
    "test",
    "build",
    "commit",
    "branch",
    "review",
    "error",
    "result",
    "value",
    "field",
    "table",
    "query",
    "buffer",
    "stream",
    "render",
    "widget",
    "frame",
    "column",
    "record",
    "offset",
    "length",
    "budget",
    "latency",
    "cost",
    "retry",
    "policy",
    "stable",
    "append",
    "replay",
    "trace",
    "span",
    "metric",
    "report",
    "project",
    "workspace",
    "directory",
    "path",
    "import",
    "export",
    "handler",
    "client",
    "server",
    "route",
    "cursor",
    "batch",
    "chunk",
    "queue",
    "worker",
    "task",
    "plan",
]
_START = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


class Prose:
    """Seeded pseudo-prose: the same seed always gives the same text."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def sentence(self, words: int = 12) -> str:
        """One sentence of ``words`` words."""
        picked = [self.rng.choice(_WORDS) for _ in range(words)]
        return " ".join(picked).capitalize() + "."

    def paragraph(self, sentences: int = 5) -> str:
        """A paragraph of sentences of varying length."""
        return " ".join(self.sentence(self.rng.randint(8, 18)) for _ in range(sentences))

    def code(self, lines: int = 12) -> str:
        """A fake source listing."""
        out = []
        for i in range(lines):
            name = "_".join(self.rng.sample(_WORDS, 2))
            out.append(f"{i + 1:4d}  def {name}(value): return value + {self.rng.randint(1, 99)}")
        return "\n".join(out)

    def ident(self, prefix: str) -> str:
        """A stable pseudo-random id such as ``toolu_01a2b3…``."""
        return f"{prefix}{self.rng.getrandbits(64):016x}"


_TOOL_NAMES = (
    "read_file",
    "write_file",
    "list_directory",
    "search_code",
    "run_command",
    "edit_file",
)


def _tool_specs(prose: Prose) -> list[tuple[str, str, dict[str, Any]]]:
    specs = []
    for name in _TOOL_NAMES:
        schema = {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": prose.sentence(10)},
                "options": {"type": "string", "description": prose.sentence(12)},
            },
            "required": ["path"],
        }
        specs.append((name, prose.paragraph(3), schema))
    return specs


@dataclass
class Dialect:
    """How one API spells tools, system prompts and messages."""

    api: str
    provider: str
    model: str

    def tools(self, specs: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Tool definitions in this API's shape."""
        if self.api == "messages":
            return [{"name": n, "description": d, "input_schema": s} for n, d, s in specs]
        if self.api == "chat.completions":
            return [
                {"type": "function", "function": {"name": n, "description": d, "parameters": s}}
                for n, d, s in specs
            ]
        return [
            {"type": "function", "name": n, "description": d, "parameters": s} for n, d, s in specs
        ]

    def user(self, text: str | list[str]) -> dict[str, Any]:
        """A user message (a list of strings becomes several text parts)."""
        if isinstance(text, list) or self.api == "messages":  # Anthropic: content blocks
            kind = "input_text" if self.api == "responses" else "text"
            texts = text if isinstance(text, list) else [text]
            return {"role": "user", "content": [{"type": kind, "text": t} for t in texts]}
        return {"role": "user", "content": text}

    def assistant_text(self, text: str) -> dict[str, Any]:
        """A final assistant answer."""
        if self.api in ("responses", "messages"):
            kind = "output_text" if self.api == "responses" else "text"
            return {"role": "assistant", "content": [{"type": kind, "text": text}]}
        return {"role": "assistant", "content": text}

    def tool_round(
        self, text: str, name: str, args: dict[str, Any], call_id: str, output: str
    ) -> list[dict[str, Any]]:
        """An assistant tool call and the tool's result, as this API sends them back."""
        if self.api == "messages":
            return [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "tool_use", "id": call_id, "name": name, "input": args},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}],
                },
            ]
        arguments = json.dumps(args)
        if self.api == "chat.completions":
            return [
                {
                    "role": "assistant",
                    "content": text,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": output},
            ]
        return [
            {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments},
            {"type": "function_call_output", "call_id": call_id, "output": output},
        ]

    def request(
        self, system: list[str], tools: list[dict[str, Any]], messages: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """A request body; ``system`` is a list of system blocks."""
        body: dict[str, Any] = {"model": self.model}
        if self.api == "messages":
            # breakpoints as Claude Code sets them: end of system, the latest message
            body["max_tokens"] = 4096
            if system:
                body["system"] = [{"type": "text", "text": s} for s in system]
                body["system"][-1]["cache_control"] = {"type": "ephemeral"}
            body["tools"] = tools
            body["messages"] = [*messages[:-1], _with_breakpoint(messages[-1])]
        elif self.api == "chat.completions":
            body["messages"] = [{"role": "system", "content": s} for s in system] + messages
            body["tools"] = tools
        else:
            body["instructions"] = "\n\n".join(system)
            body["tools"] = tools
            body["input"] = messages
        return body


def _with_breakpoint(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` whose last content block carries ``cache_control``."""
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    return {**message, "content": blocks}


ANTHROPIC = Dialect("messages", "anthropic", "claude-sonnet-4-5")
OPENAI_CHAT = Dialect("chat.completions", "openai", "gpt-4o")
OPENAI_RESPONSES = Dialect("responses", "openai", "gpt-5")


@dataclass
class Agent:
    """A simulated agent loop: turns of tool rounds over a growing history."""

    dialect: Dialect
    seed: int
    prose: Prose = field(init=False)
    clock: datetime = field(init=False)
    history: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.prose = Prose(self.seed)
        self.clock = _START

    def tick(self) -> str:
        """Advance the clock by a plausible step and return the request time."""
        self.clock += timedelta(seconds=self.prose.rng.randint(15, 75))
        return self.clock.isoformat().replace("+00:00", "Z")

    def user_turn(self) -> str:
        """A new user request."""
        return f"Please {self.prose.sentence(self.prose.rng.randint(10, 22)).lower()}"

    def tool_round(self) -> list[dict[str, Any]]:
        """One assistant tool call with its result."""
        rng = self.prose.rng
        name = rng.choice(_TOOL_NAMES)
        args = {"path": f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py"}
        return self.dialect.tool_round(
            self.prose.sentence(rng.randint(6, 14)),
            name,
            args,
            self.prose.ident("toolu_" if self.dialect.api == "messages" else "call_"),
            self.prose.code(rng.randint(6, 14)),
        )

    def answer(self) -> dict[str, Any]:
        """A final assistant answer."""
        return self.dialect.assistant_text(self.prose.paragraph(2))


# (ts, dialect, body, meta); a meta "usage" is the usage the response reported
Request = tuple[str, Dialect, dict[str, Any], dict[str, Any]]


def _base(seed: int, dialect: Dialect) -> tuple[Agent, list[str], list[dict[str, Any]]]:
    agent = Agent(dialect, seed)
    static = Prose(1000)  # the same "product" prompt and tools in every sample
    soul = "You are Kilo, a careful software engineer. " + static.paragraph(12)
    policy = "Tool use policy. " + static.paragraph(8)
    return agent, [soul, policy], dialect.tools(_tool_specs(static))


def _loop(
    agent: Agent,
    turns: list[int],
    make: Callable[[int, list[dict[str, Any]]], dict[str, Any]],
    *,
    user: Callable[[int, str], Any] | None = None,
) -> Iterator[tuple[int, int, str, dict[str, Any]]]:
    """Drive turns of ``steps`` calls; yield (turn, step, ts, body) for every call."""
    call = 0
    for turn, steps in enumerate(turns):
        text = agent.user_turn()
        agent.history.append(agent.dialect.user(user(turn, text) if user else text))
        for step in range(steps):
            yield turn, step, agent.tick(), make(call, agent.history)
            call += 1
            if step < steps - 1:
                agent.history.extend(agent.tool_round())
            else:
                agent.history.append(agent.answer())


def append_only() -> Iterator[Request]:
    """Stable system and tools, history only appended: the layout that caches."""
    agent, system, tools = _base(1, ANTHROPIC)
    for _, _, ts, body in _loop(
        agent, [3, 2, 4, 3], lambda _, h: ANTHROPIC.request(system, tools, h)
    ):
        yield ts, ANTHROPIC, body, {}


def timestamp_in_system() -> Iterator[Request]:
    """``Current time: …`` in the system prompt: every call rewrites the prefix."""
    agent, system, tools = _base(2, ANTHROPIC)
    for _, _, ts, body in _loop(
        agent,
        [3, 2, 3],
        lambda _, h: ANTHROPIC.request(
            [system[0], f"Current time: {agent.clock.isoformat()}", system[1]], tools, h
        ),
    ):
        yield ts, ANTHROPIC, body, {}


def shuffled_tools() -> Iterator[Request]:
    """Tools re-ordered on every call (e.g. by usage frequency): the tools prefix breaks."""
    agent, system, tools = _base(3, OPENAI_CHAT)
    order_rng = random.Random(33)
    order = list(range(len(tools)))  # the first call keeps the registration order

    def make(call: int, history: list[dict[str, Any]]) -> dict[str, Any]:
        nonlocal order
        previous = order
        while call > 0 and order == previous:
            order = order_rng.sample(range(len(tools)), len(tools))
        return OPENAI_CHAT.request(system, [tools[i] for i in order], history)

    for _, _, ts, body in _loop(agent, [3, 3, 2], make):
        yield ts, OPENAI_CHAT, body, {}


def dynamic_profile() -> Iterator[Request]:
    """A user profile (balance, quota) in the instructions, updated on every call."""
    agent, system, tools = _base(4, OPENAI_RESPONSES)
    balance = [25.0]

    def make(call: int, history: list[dict[str, Any]]) -> dict[str, Any]:
        balance[0] -= 0.37
        profile = f"User profile: plan Pro, balance ${balance[0]:.2f}, requests today {17 + call}."
        return OPENAI_RESPONSES.request([system[0], profile, system[1]], tools, history)

    for _, _, ts, body in _loop(agent, [2, 3, 3], make):
        yield ts, OPENAI_RESPONSES, body, {}


def sliding_window() -> Iterator[Request]:
    """Only the last 7 messages are sent: once full, the window drops the oldest."""
    agent, system, tools = _base(5, ANTHROPIC)
    for _, _, ts, body in _loop(
        agent, [3, 3, 3, 3], lambda _, h: ANTHROPIC.request(system, tools, h[-7:])
    ):
        yield ts, ANTHROPIC, body, {}


def text_format() -> Iterator[Request]:
    """The whole history flattened into one ``USER:/ASSISTANT:`` user message."""
    agent, system, tools = _base(6, OPENAI_CHAT)
    transcript: list[str] = []
    for _ in range(10):
        transcript.append(f"USER: {agent.user_turn()}")
        body = OPENAI_CHAT.request(system, tools, [OPENAI_CHAT.user("\n".join(transcript))])
        yield agent.tick(), OPENAI_CHAT, body, {}
        transcript.append(f"ASSISTANT: {agent.prose.paragraph(2)}")


def environment_details() -> Iterator[Request]:
    """KiloCode: ``<environment_details>`` on the latest user message, gone next turn."""
    agent, system, tools = _base(7, ANTHROPIC)
    joined = ["\n".join(system)]  # KiloCode sends one system string
    turn_of_message: list[int | None] = []

    def details(turn: int) -> str:
        moment = (_START + timedelta(minutes=7 * turn, seconds=13)).isoformat()
        return (
            "<environment_details>\n"
            f"Current time: {moment}\n"
            "Working directory: /root/proj\n"
            f"Active file: src/{_WORDS[turn]}.py\n"
            "</environment_details>"
        )

    latest_user = [0]

    def make(_: int, history: list[dict[str, Any]]) -> dict[str, Any]:
        messages = [dict(m) for m in history]
        index = latest_user[0]
        text = messages[index]["content"][0]["text"]
        messages[index] = ANTHROPIC.user([text, details(len(turn_of_message))])
        return ANTHROPIC.request(joined, tools, messages)

    def user(turn: int, text: str) -> str:
        turn_of_message.append(turn)
        latest_user[0] = len(agent.history)
        return text

    for _, _, ts, body in _loop(agent, [3, 2, 3, 2], make, user=user):
        yield ts, ANTHROPIC, body, {}


def unpinned_memory() -> Iterator[Request]:
    """A project-memory system block re-read (and rewritten) before every call."""
    agent, system, tools = _base(8, ANTHROPIC)
    notes: list[str] = []

    def make(call: int, history: list[dict[str, Any]]) -> dict[str, Any]:
        notes.append(f"- digest of session {call + 1}: {agent.prose.sentence(9)}")
        memory = "# Project Memory\n" + "\n".join(notes[-6:])
        return ANTHROPIC.request([system[0], memory, system[1]], tools, history)

    for _, _, ts, body in _loop(agent, [3, 3, 2], make):
        yield ts, ANTHROPIC, body, {}


def compaction() -> Iterator[Request]:
    """Append-only until the history is summarized into one message, then append-only again."""
    agent, system, tools = _base(9, ANTHROPIC)
    compact_at = 8

    def make(call: int, history: list[dict[str, Any]]) -> dict[str, Any]:
        if call == compact_at:
            summary = "Summary of the conversation so far: " + agent.prose.paragraph(4)
            latest = history[-1]
            history[:] = [ANTHROPIC.user(summary), ANTHROPIC.assistant_text("Understood."), latest]
        return ANTHROPIC.request(system, tools, history)

    for _, _, ts, body in _loop(agent, [3, 3, 2, 3, 2], make):
        yield ts, ANTHROPIC, body, {}


def side_calls() -> Iterator[Request]:
    """A main thread, Haiku side calls (title, quota probe) and a sub-agent, interleaved."""
    agent, system, tools = _base(10, ANTHROPIC)
    haiku = Dialect("messages", "anthropic", "claude-haiku-4-5")
    sub = Agent(ANTHROPIC, 11)
    sub_system = ["You are a read-only exploration sub-agent. " + sub.prose.paragraph(10)]
    sub.history.append(ANTHROPIC.user("Find where the cache key is computed."))
    for index, (_, _, ts, body) in enumerate(
        _loop(agent, [3, 4, 3], lambda _, h: ANTHROPIC.request(system, tools, h))
    ):
        yield ts, ANTHROPIC, body, {}
        if index == 0:
            title = haiku.request(
                ["Write a 5-word title for the conversation."],
                [],
                [haiku.user(agent.history[0]["content"][0]["text"])],
            )
            yield ts, haiku, title, {}
            probe = haiku.request([], [], [haiku.user("quota")])
            yield ts, haiku, probe, {}
        if 3 <= index <= 6:
            body = ANTHROPIC.request(sub_system, tools, sub.history)
            yield ts, ANTHROPIC, body, {"thread": "sub-agent explore"}
            sub.history.extend(sub.tool_round())


def _estimate(value: Any) -> int:
    """Tokens as the generator bills them: a JSON character count over 4 (not cacheviz's)."""
    return len(json.dumps(value, ensure_ascii=False)) // 4


def _billed(
    body: dict[str, Any], previous: tuple[int, datetime] | None, now: datetime, output: int
) -> tuple[dict[str, Any], int]:
    """Anthropic usage of an append-only request whose breakpoint is its latest message.

    The previous request's whole prompt was written at its breakpoint, so it is read
    back when it is at least 1,024 tokens and at most 5 minutes old; the rest up to the
    breakpoint is written; a few framing tokens come after it.
    """
    total = sum(_estimate(body.get(key, [])) for key in ("tools", "system", "messages"))
    read = 0
    if previous is not None:
        size, at = previous
        if size >= 1024 and (now - at).total_seconds() <= 300:
            read = size
    uncached = 3
    write = max(0, total - read - uncached) if total >= 1024 else 0
    usage = {
        "input_tokens": total - read - write,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output,
    }
    return usage, total


def reported_usage() -> Iterator[Request]:
    """A session as the provider billed it: usage on every call, one long pause.

    An append-only Anthropic agent (breakpoints at the end of system and on the latest
    message) with a Haiku title call; the user steps away for 8 minutes before the third
    turn, past the 5-minute TTL, so that call writes the whole prefix again. The usage is
    the generator's own (:func:`_billed`, tokens counted as JSON characters / 4), as a
    provider would report it: not derived from cacheviz.
    """
    agent, system, tools = _base(12, ANTHROPIC)
    # project conventions: a prefix well above the 1,024-token minimum from the first call
    system = [system[0], "Project conventions. " + Prose(1001).paragraph(40), system[1]]
    haiku = Dialect("messages", "anthropic", "claude-haiku-4-5")
    previous: tuple[int, datetime] | None = None
    for turn, steps in enumerate([3, 4, 3, 4]):
        if turn == 2:
            agent.clock += timedelta(minutes=8)  # the user steps away
        agent.history.append(ANTHROPIC.user(agent.user_turn()))
        for step in range(steps):
            ts = agent.tick()
            body = ANTHROPIC.request(system, tools, agent.history)
            output = agent.prose.rng.randint(80, 600)
            usage, total = _billed(body, previous, agent.clock, output)
            previous = (total, agent.clock)
            yield ts, ANTHROPIC, body, {"usage": usage}
            if turn == 0 and step == 0:
                title = haiku.request(
                    ["Write a 5-word title for the conversation."],
                    [],
                    [haiku.user(agent.history[0]["content"][0]["text"])],
                )
                side, _ = _billed(title, None, agent.clock, 12)
                yield ts, haiku, title, {"usage": side}
            if step < steps - 1:
                agent.history.extend(agent.tool_round())
            else:
                agent.history.append(agent.answer())


SAMPLES: dict[str, Callable[[], Iterator[Request]]] = {
    fn.__name__: fn
    for fn in (
        append_only,
        timestamp_in_system,
        shuffled_tools,
        dynamic_profile,
        sliding_window,
        text_format,
        environment_details,
        unpinned_memory,
        compaction,
        side_calls,
        reported_usage,
    )
}


def render_sample(name: str) -> str:
    """The text of one sample file."""
    lines = []
    for ts, d, body, meta in SAMPLES[name]():
        extra = {k: v for k, v in meta.items() if k != "usage"}  # usage is the response's
        lines.append(
            record_line(
                body,
                provider=d.provider,
                model=d.model,
                api=d.api,
                ts=ts,
                meta=extra or None,
                usage=meta.get("usage"),
            )
        )
    return "\n".join(lines) + "\n"


def write_samples(out_dir: str | Path) -> list[Path]:
    """Write every sample to ``out_dir/<name>.jsonl``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in SAMPLES:
        path = out / f"{name}.jsonl"
        path.write_text(render_sample(name), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write_samples(sys.argv[1] if len(sys.argv) > 1 else "sample_sessions"):
        print(f"{written}  {written.stat().st_size:,} bytes")
