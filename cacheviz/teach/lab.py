"""The teaching lab's toy agent: a session built from a block layout, and a TTFT model.

``layout_session(["tools", "system", "time", "profile", "history"], ...)`` writes a
small Anthropic Messages session (a cacheviz request log) whose requests put the blocks
in that order: blocks before ``history`` are system blocks, blocks after it are text
appended to the latest user message of each call (dynamic information appended at the
end, as the KV-cache guide's rule 2 says, and kept in the history). :func:`estimate_ttft`
turns a simulation into an estimated time to first token with a documented prefill
model. :func:`prefill_factor` compares two replays on a self-hosted engine's rule (their
``prefill_ms``), and :func:`live_prefill` runs a session on llama.cpp itself when
llama-cpp-python is installed. Nothing here imports Jupyter;
notebooks/02-prompt-caching-lab.ipynb wires it to widgets.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cacheviz.formats import load
from cacheviz.formats.native import record_line
from cacheviz.request._chat import chat_messages
from cacheviz.teach.samples import Prose

if TYPE_CHECKING:
    from cacheviz.model import Session
    from cacheviz.money._simulate import Simulation

BLOCKS = ("tools", "system", "time", "profile", "history")
MODEL = "claude-sonnet-4-5"
_START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class PrefillModel:
    """Estimated time to first token: ``base + uncached * t_prefill + cached * t_read``.

    The defaults are illustrative round numbers, not measurements: a fixed 0.3 s of
    network and queueing, 4,000 uncached prompt tokens prefilled per second
    (0.25 ms/token), and a cached token at 1/20 of that (loading its K/V instead of
    computing it). Change them to your provider's figures.
    """

    base_seconds: float = 0.3
    prefill_seconds_per_token: float = 1 / 4000
    cached_fraction: float = 1 / 20

    def ttft(self, uncached_tokens: int, cached_tokens: int) -> float:
        """Seconds to the first output token for one request."""
        per_token = self.prefill_seconds_per_token
        return (
            self.base_seconds
            + uncached_tokens * per_token
            + cached_tokens * per_token * self.cached_fraction
        )


def estimate_ttft(simulation: Simulation, model: PrefillModel | None = None) -> list[float]:
    """Per call of a simulation: the estimated time to first token, in seconds.

    Tokens written to the cache are computed like uncached ones.
    """
    model = model or PrefillModel()
    frame = simulation.calls
    return [
        model.ttft(uncached + written, read)
        for uncached, written, read in zip(
            frame["uncached_tokens"],
            frame["cache_write_tokens"],
            frame["cache_read_tokens"],
            strict=True,
        )
    ]


def _texts(prose: Prose) -> dict[str, str]:
    tools = "\n".join(
        f"Tool {name}(path, options): {prose.paragraph(4)}"
        for name in ("read_file", "write_file", "search_code", "run_command", "edit_file")
    )
    return {
        "tools": "Available tools:\n" + tools,
        "system": "You are a careful coding agent. " + prose.paragraph(40),
    }


def layout_requests(
    order: list[str] | tuple[str, ...],
    *,
    timestamp: bool = True,
    live_profile: bool = False,
    breakpoints: bool = True,
    turns: int = 3,
    steps: int = 3,
    gap_minutes: float = 1.0,
) -> list[str]:
    """The request-log lines of a toy agent whose requests follow ``order``.

    Parameters
    ----------
    order
        A permutation of some of :data:`BLOCKS`; it must contain ``"history"``.
    timestamp
        The ``time`` block carries the time of each call (else only the date, which
        does not change within the session).
    live_profile
        The ``profile`` block carries a balance that changes on every call.
    breakpoints
        Set ``cache_control`` on the last system block and the latest message.
    turns, steps
        User turns, and calls per turn (tool rounds in between).
    gap_minutes
        Idle time before each new user turn (steps within a turn are 20 s apart).
    """
    if "history" not in order or set(order) - set(BLOCKS):
        msg = f"order must be blocks from {BLOCKS} and include 'history', got {list(order)}"
        raise ValueError(msg)
    prose = Prose(7)
    static = _texts(Prose(1000))
    history: list[dict[str, Any]] = []
    lines = []
    clock = _START
    call = 0
    cut = list(order).index("history")
    for turn in range(turns):
        clock += timedelta(minutes=gap_minutes if turn else 0)
        history.append(_user(f"Please {prose.sentence(12).lower()}"))
        for step in range(steps):
            clock += timedelta(seconds=20)
            values = {
                **static,
                "time": f"Current time: {clock.isoformat()}"
                if timestamp
                else f"Today's date: {clock.date().isoformat()}",
                "profile": f"User profile: plan Pro, balance ${25 - 0.37 * call:.2f}"
                if live_profile
                else "User profile: plan Pro",
            }
            system: list[dict[str, Any]] = [
                {"type": "text", "text": values[b]} for b in order[:cut]
            ]
            trailing = [values[b] for b in order[cut + 1 :]]
            if trailing:  # appended to the end and kept: the history stays append-only
                history[-1]["content"].append({"type": "text", "text": "\n".join(trailing)})
            messages = [{**m, "content": list(m["content"])} for m in history]
            if breakpoints:
                if system:
                    system[-1]["cache_control"] = {"type": "ephemeral"}
                messages[-1]["content"][-1] = {
                    **messages[-1]["content"][-1],
                    "cache_control": {"type": "ephemeral"},
                }
            body: dict[str, Any] = {"model": MODEL, "max_tokens": 1024}
            if system:
                body["system"] = system
            body["messages"] = messages
            lines.append(
                record_line(
                    body,
                    provider="anthropic",
                    model=MODEL,
                    api="messages",
                    ts=clock.isoformat().replace("+00:00", "Z"),
                )
            )
            call += 1
            if step < steps - 1:
                tool_id = prose.ident("toolu_")
                history.append(
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": prose.sentence(14)},
                            {
                                "type": "tool_use",
                                "id": tool_id,
                                "name": "read_file",
                                "input": {"path": f"src/{prose.ident('m')}.py"},
                            },
                        ],
                    }
                )
                history.append(
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": tool_id,
                                "content": prose.code(8),
                            }
                        ],
                    }
                )
            else:
                history.append(
                    {"role": "assistant", "content": [{"type": "text", "text": prose.paragraph(2)}]}
                )
    return lines


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def layout_session(order: list[str] | tuple[str, ...], **options: Any) -> Session:
    """:func:`layout_requests` written to a temporary request log and loaded."""
    lines = layout_requests(order, **options)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "layout.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return load(path)


def prefill_factor(drifting: Simulation, stable: Simulation, call: int | None = None) -> float:
    """How many times ``stable``'s prefill time ``drifting`` takes (self-hosted replays).

    ``call``: at that call (its index); ``None``: over the whole session. Read from each
    replay's estimated ``prefill_ms`` (:mod:`cacheviz.providers._prefill`).
    """
    if call is None:
        return float(drifting.calls["prefill_ms"].sum()) / float(stable.calls["prefill_ms"].sum())
    rows = [
        sim.calls.filter(sim.calls["call"] == call)["prefill_ms"][0] for sim in (drifting, stable)
    ]
    return float(rows[0]) / float(rows[1])


def live_prefill(session: Session, model_path: str | Path) -> list[tuple[int, int, float]] | None:
    """Each call of ``session`` run on llama.cpp: ``(tokens, reused tokens, prefill ms)``.

    The calls are sent in order, as chat messages (:func:`cacheviz.request._chat.chat_messages`)
    rendered by the model's own template, to one in-process ``llama_cpp.Llama`` (one
    slot: it reuses the previous prompt's common prefix); 1 token is generated. ``None``
    when llama-cpp-python is not installed.
    """
    try:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    except ImportError:
        return None
    import time

    llm = llama_cpp.Llama(model_path=str(model_path), n_ctx=8192, verbose=False, seed=0)
    formatter = Jinja2ChatFormatter(
        llm.metadata["tokenizer.chat_template"],
        eos_token=llm._model.token_get_text(llm.token_eos()),
        bos_token="",
    )
    state = {"evaluated": 0, "ms": 0.0}
    plain_eval = llm.eval

    def counted_eval(tokens: Any) -> None:
        started = time.perf_counter()
        plain_eval(tokens)
        state["ms"] += (time.perf_counter() - started) * 1000
        state["evaluated"] += len(tokens)

    llm.eval = counted_eval
    out = []
    for call in session.calls:
        prompt = formatter(messages=chat_messages(call, session.contents)).prompt
        ids = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        state["evaluated"], state["ms"] = 0, 0.0
        llm.create_completion(ids, max_tokens=1, temperature=0.0)
        out.append((len(ids), len(ids) - int(state["evaluated"]), round(float(state["ms"]), 3)))
    return out
