"""The teaching lab's toy agent: a session built from a block layout, and a TTFT model.

``layout_session(["tools", "system", "time", "profile", "history"], ...)`` writes a
small Anthropic Messages session (a cacheviz request log) whose requests put the blocks
in that order: blocks before ``history`` are system blocks, blocks after it are text
appended to the latest user message of each call (dynamic information appended at the
end, as the KV-cache guide's rule 2 says, and kept in the history). :func:`estimate_ttft`
turns a simulation into an estimated time to first token with a documented prefill
model. :func:`prefill_factor` compares two replays on a self-hosted engine's rule (their
``prefill_ms``), :func:`live_prefill` runs a session on llama.cpp itself when
llama-cpp-python is installed, and :func:`early_drift` measures (or else estimates) an
early drift's prefill factor for the lab's chart. Nothing here imports Jupyter;
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
    refresh_time_at: int | None = None,
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
    refresh_time_at
        ``None``: the ``time`` block is refreshed on every call. A call's index: it shows
        the session's start and is refreshed once, at that call (the early drift; an
        index past the last call: never).
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
    shown = _START
    for turn in range(turns):
        clock += timedelta(minutes=gap_minutes if turn else 0)
        history.append(_user(f"Please {prose.sentence(12).lower()}"))
        for step in range(steps):
            clock += timedelta(seconds=20)
            if refresh_time_at is None or call in (0, refresh_time_at):
                shown = clock
            values = {
                **static,
                "time": f"Current time: {shown.isoformat()}"
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
    replay's estimated ``prefill_ms`` (:mod:`cacheviz.providers._prefill`). The prefill
    factor against a twin session given as ``stable``; one session's own, against
    itself without drift, is ``Simulation.prefill_factor`` (the per-call
    ``prefill_factor`` column).
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
    slot: it reuses the previous prompt's common prefix; one thread); 1 token is
    generated. The prefill time is the CPU time of evaluating the prompt (a loaded
    machine makes a short call's wall time swing several-fold; its CPU time does not), as
    the engine tier measures it (docs/simulation.md). ``None`` when llama-cpp-python is
    not installed.
    """
    try:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    except ImportError:
        return None
    import time

    llm = llama_cpp.Llama(
        model_path=str(model_path),
        n_ctx=8192,
        n_threads=1,
        n_threads_batch=1,
        verbose=False,
        seed=0,
    )
    formatter = Jinja2ChatFormatter(
        llm.metadata["tokenizer.chat_template"],
        eos_token=llm._model.token_get_text(llm.token_eos()),
        bos_token="",
    )
    state = {"evaluated": 0, "ms": 0.0}
    plain_eval = llm.eval

    def counted_eval(tokens: Any) -> None:
        started = time.process_time()
        plain_eval(tokens)
        state["ms"] += (time.process_time() - started) * 1000
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


ONE_SLOT: dict[str, Any] = {"slots": 1, "host_cache_tokens": 0}
"""The ``llamacpp`` rule of the in-process ``llama_cpp.Llama`` API: one slot, no host cache."""
EARLY_ORDER = ("time", "tools", "system", "history")
"""The early drift's layout: a timestamp at the very top of the system prompt."""


@dataclass(frozen=True)
class PrefillPoint:
    """One call of a prefill run: its uncached tokens and its prefill time (ms)."""

    call: int
    tokens: int
    uncached: int
    prefill_ms: float


@dataclass(frozen=True)
class EarlyDrift:
    """The early drift on a self-hosted engine (llama.cpp): measured, else estimated.

    Two sessions of the same toy agent with a timestamp at the top of its system prompt:
    ``stable`` never refreshes it, ``early`` refreshes it once, at call ``drift_at``.
    ``runs`` holds each one's calls (:class:`PrefillPoint`) as ``source`` says: measured
    on llama.cpp (``measured``) or estimated by cacheviz's prefill model
    (``prefill_ms``, :mod:`cacheviz.providers._prefill`) on the ``llamacpp`` rule's
    replay. ``estimated_*`` are always the estimate: the prefill factor as ``simulate``
    defines it (the drift point's ``prefill_factor``; the session's
    ``Simulation.prefill_factor``).
    """

    measured: bool
    source: str
    drift_at: int
    runs: dict[str, list[PrefillPoint]]
    estimated_drift_factor: float
    estimated_session_factor: float

    @property
    def drift_factor(self) -> float:
        """The drift point's prefill over the same call's in the stable session."""
        early, stable = self.runs["early"][self.drift_at], self.runs["stable"][self.drift_at]
        return early.prefill_ms / stable.prefill_ms

    @property
    def session_factor(self) -> float:
        """The early session's prefill time over the stable one's."""
        early, stable = (sum(p.prefill_ms for p in self.runs[k]) for k in ("early", "stable"))
        return early / stable

    def headline(self) -> str:
        """One line: the factors, and whether they were measured or estimated."""
        if not self.measured:
            return (
                f"estimated ({self.source}): the early drift (call {self.drift_at}) takes "
                f"{self.estimated_drift_factor:.1f}x the prefill of the same call with its "
                f"prefix kept; the session {self.estimated_session_factor:.2f}x"
            )
        return (
            f"measured on llama.cpp ({self.source}): the early drift (call {self.drift_at}) "
            f"takes {self.drift_factor:.1f}x the prefill of the same call in the stable session "
            f"(estimated: {self.estimated_drift_factor:.1f}x); the session "
            f"{self.session_factor:.2f}x (estimated: {self.estimated_session_factor:.2f}x)"
        )


def early_drift(
    model_path: str | Path | None = None, *, steps: int = 8, drift_at: int = 4
) -> EarlyDrift:
    """The early drift's prefill factor: measured on llama.cpp when it can be, else estimated.

    Measured when llama-cpp-python is installed and ``model_path`` names a GGUF model
    (:func:`live_prefill`; ``make test-engine`` writes a tiny one); else the ``llamacpp``
    rule's replay with the estimated ``prefill_ms``, and ``source`` says why.
    """
    sessions = {
        "stable": layout_session(EARLY_ORDER, turns=1, steps=steps, refresh_time_at=steps),
        "early": layout_session(EARLY_ORDER, turns=1, steps=steps, refresh_time_at=drift_at),
    }
    simulated = {k: s.analyze().simulate("llamacpp", **ONE_SLOT) for k, s in sessions.items()}
    estimate = simulated["early"]
    factors = estimate.calls["prefill_factor"].to_list()
    estimated = {
        "estimated_drift_factor": float(factors[drift_at]),
        "estimated_session_factor": float(estimate.prefill_factor or 1.0),
    }
    why = "no engine: set CACHEVIZ_LAB_MODEL to a GGUF model and install llama-cpp-python"
    if model_path is not None and Path(model_path).is_file():
        live = {k: live_prefill(s, model_path) for k, s in sessions.items()}
        if all(run is not None for run in live.values()):
            runs = {
                k: [PrefillPoint(i, n, n - reused, ms) for i, (n, reused, ms) in enumerate(run)]
                for k, run in live.items()
                if run is not None
            }
            name = Path(model_path).name
            return EarlyDrift(True, f"{name}, CPU time", drift_at, runs, **estimated)
        why = "llama-cpp-python is not installed"
    elif model_path is not None:
        why = f"no model file at {model_path}"
    runs = {
        k: [
            PrefillPoint(i, n, u, ms)
            for i, (n, u, ms) in enumerate(
                sim.calls.select("input_tokens", "uncached_tokens", "prefill_ms").rows()
            )
        ]
        for k, sim in simulated.items()
    }
    return EarlyDrift(False, f"prefill_ms; {why}", drift_at, runs, **estimated)
