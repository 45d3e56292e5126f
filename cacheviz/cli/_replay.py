"""``cacheviz replay``: a session sent to a local engine, its reuse compared with the rule."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cacheviz.cli._shared import dump, formatter, input_options, input_path, number
from cacheviz.cli._simulate import rules_of
from cacheviz.cli._table import Column, render, width_of, wrap_line
from cacheviz.errors import SimulationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO


def add_parser(commands: Any) -> None:
    """Add the ``replay`` command to the ``cacheviz`` parser."""
    replay = commands.add_parser(
        "replay",
        parents=[input_options()],
        formatter_class=formatter,
        help="send a session to a local engine; compare its cache reuse with the rule",
        description=(
            "Send the session's requests, in order, to the OpenAI-compatible engine at "
            "--engine (llama-server, vLLM, SGLang) and nowhere else; record each answer "
            "(cached tokens, timings, the prompt's token ids) in a cacheviz request log; "
            "compare each call's reuse with the simulation of the engine's rule, and fit "
            "the engine's prefill time (kept per engine and model for simulate's prefill_ms)."
        ),
    )
    replay.add_argument("--engine", required=True, metavar="URL", help="the engine's URL")
    replay.add_argument(
        "--log",
        metavar="FILE",
        help="the request log to write (default: SESSION.replay.jsonl here; never appended to)",
    )
    replay.add_argument(
        "--kind",
        metavar="ENGINE",
        help="the engine's provider id, a self-hosted one (default: what its /v1/models says)",
    )
    replay.add_argument("--model", help="the model to ask for (default: the engine's first)")
    replay.add_argument(
        "--max-tokens", type=int, default=1, help="tokens generated per call (default: 1)"
    )
    replay.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a rule of the engine's simulator, e.g. slots=1 (repeat)",
    )
    replay.add_argument("--json", action="store_true", help="print the comparison as JSON")


def run(args: argparse.Namespace) -> int:
    """Run ``cacheviz replay``; return the exit status."""
    from cacheviz.formats import load
    from cacheviz.recording._replay import replay_session

    args.path = str(input_path(args))
    session = load(args.path, args.format, errors=args.errors)
    log = Path(args.log) if args.log else Path(f"{Path(args.path).stem}.replay.jsonl")
    if log.exists() and log.stat().st_size:
        msg = f"--log {log}: already holds lines; name a new file (a replay never appends)"
        raise SimulationError(msg)
    if args.kind is not None:
        args.kind = _engine_kind(args.kind)
    if args.max_tokens < 1:
        msg = f"--max-tokens {args.max_tokens}: expected at least 1"
        raise SimulationError(msg)
    progress = _progress if sys.stderr.isatty() else None
    done = replay_session(
        session,
        args.engine,
        log,
        kind=args.kind,
        model=args.model,
        max_tokens=args.max_tokens,
        progress=progress,
    )
    doc = comparison(done.path, done.engine.kind, done.engine.model, rules_of(args.rule))
    if args.json:
        dump(doc)
    else:
        _print(doc, sys.stdout)
    return 0


def _engine_kind(name: str) -> str:
    """The provider id of a self-hosted engine named ``name`` (``--kind``)."""
    from cacheviz import providers

    found = providers.known(name)
    if found is None or found not in providers.self_hosted():
        msg = f"--kind {name!r}: expected one of {', '.join(providers.self_hosted())}"
        raise SimulationError(msg)
    return found


def _progress(done: int, total: int) -> None:
    sys.stderr.write(f"\rreplayed {done} of {total} calls")
    if done == total:
        sys.stderr.write("\n")


def comparison(
    log: Path, kind: str | None, model: str | None, rules: dict[str, Any]
) -> dict[str, Any]:
    """The engine's reuse in ``log`` call by call against its rule; the prefill fit.

    Parameters
    ----------
    log
        A request log written by ``cacheviz replay``.
    kind, model
        The engine and model replayed on.
    rules
        The engine simulator's rules.

    Returns
    -------
    dict
        ``cacheviz replay --json``'s document (docs/simulation.md).
    """
    from cacheviz.formats import load
    from cacheviz.providers import _prefill

    if kind is None:
        msg = "the engine did not say what it is (/v1/models owned_by); name it with --kind"
        raise SimulationError(msg)
    analysis = load(log).analyze()
    sim = analysis.simulate(kind, **rules)
    answers = [json.loads(line)["response"] for line in log.read_text("utf-8").splitlines() if line]
    rows, points = [], []
    for row in sim.calls.iter_rows(named=True):
        response = answers[row["call"]]
        timings = response.get("timings") or {}
        measured = timings.get("prompt_ms", response.get("duration_ms"))
        engine_read = row["reported_cache_read_tokens"]
        engine_input = row["reported_input_tokens"] or row["input_tokens"]
        uncached = None if engine_read is None else engine_input - engine_read
        if uncached is not None and isinstance(measured, (int, float)):
            points.append((uncached, engine_read, float(measured)))
        rows.append(
            {
                "call": row["call"],
                "input_tokens": engine_input,
                "engine_cached_tokens": engine_read,
                "simulated_cached_tokens": row["cache_read_tokens"],
                "equal": None if engine_read is None else engine_read == row["cache_read_tokens"],
                "uncached_tokens": uncached,
                "prefill_ms": measured,
            }
        )
    fitted = _prefill.fit(points, f"fitted by cacheviz replay on {log.name}")
    if fitted is not None and model:
        _prefill.save(kind, model, fitted)
    for item in rows:
        uncached, read = item["uncached_tokens"], item["engine_cached_tokens"]
        estimate = None
        if fitted is not None and uncached is not None and read is not None:
            estimate = round(fitted.estimate(uncached, read), 3)
        item["prefill_ms_fitted"] = estimate
    equal, reported = sim.agreement_calls
    return {
        "log": str(log),
        "engine": kind,
        "model": model,
        "parameters": sim.parameters,
        "agreement": {
            "share": sim.agreement,
            "equal_calls": equal,
            "reported_calls": reported,
            "basis": "engine token ids" if sim.token_exact else "approximate",
        },
        "prefill_fit": None
        if fitted is None
        else {
            "fixed_ms": fitted.fixed_ms,
            "per_token_ms": fitted.per_token_ms,
            "per_pair_ms": fitted.per_pair_ms,
            "r2": _r2(fitted, points),
        },
        "calls": rows,
    }


def _r2(fitted: Any, points: list[tuple[int, int, float]]) -> float | None:
    if len(points) < 2:
        return None
    mean = sum(ms for _, _, ms in points) / len(points)
    total = sum((ms - mean) ** 2 for _, _, ms in points)
    left = sum((ms - fitted.estimate(u, c)) ** 2 for u, c, ms in points)
    return None if total == 0 else round(1 - left / total, 4)


REPLAY_COLUMNS = (
    Column("#"),
    Column("input"),
    Column("engine read"),
    Column("rule read"),
    Column("equal", "<"),
    Column("uncached", drop=3),
    Column("prefill ms", drop=2),
    Column("fitted ms", drop=1),
)


def _print(doc: dict[str, Any], out: TextIO) -> None:
    width = width_of(out)
    out.write(f"{doc['engine']} ({doc['model']}), log {doc['log']}\n")
    rows = []
    for call in doc["calls"]:
        equal = call["equal"]
        rows.append(
            [
                str(call["call"]),
                number(call["input_tokens"]),
                number(call["engine_cached_tokens"]),
                number(call["simulated_cached_tokens"]),
                "-" if equal is None else ("yes" if equal else "no"),
                number(call["uncached_tokens"]),
                "-" if call["prefill_ms"] is None else f"{call['prefill_ms']:,.1f}",
                "-" if call["prefill_ms_fitted"] is None else f"{call['prefill_ms_fitted']:,.1f}",
            ]
        )
    for text in render(REPLAY_COLUMNS, rows, width):
        out.write(text + "\n")
    agreement = doc["agreement"]
    line = (
        f"the {doc['engine']} rule equals the engine's reuse on {agreement['equal_calls']} of "
        f"{agreement['reported_calls']} calls ({agreement['basis']})"
    )
    out.write(wrap_line(line, width) + "\n")
    used = ", ".join(f"{k}={v['value']}" for k, v in doc["parameters"].items())
    out.write(wrap_line(f"rules: {used}", width) + "\n")
    fit = doc["prefill_fit"]
    if fit is not None:
        text = (
            f"prefill ms = {fit['fixed_ms']:.2f} + {fit['per_token_ms']:.4f} x uncached + "
            f"{fit['per_pair_ms']:.3g} x uncached x (cached + uncached/2)"
        )
        if fit["r2"] is not None:
            text += f" (R² {fit['r2']:.3f})"
        out.write(wrap_line(text + "; kept for simulate's prefill_ms", width) + "\n")
