"""``cacheviz simulate``: replay the session under a provider's caching rules."""

from __future__ import annotations

import sys

from cacheviz.cli._shared import (
    BREAKPOINT_STRATEGIES,
    TTL_CHOICES,
    dump,
    formatter,
    input_options,
    load_analysis,
    number,
    usd,
)
from cacheviz.cli._table import Column, render, width_of, wrap_line
from cacheviz.errors import SimulationError

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO

    from cacheviz.analysis import Analysis


def add_parser(commands: Any) -> None:
    """Add the ``simulate`` command to the ``cacheviz`` parser."""
    simulate = commands.add_parser(
        "simulate",
        parents=[input_options()],
        formatter_class=formatter,
        help="replay the session under a provider's caching rules",
    )
    simulate.add_argument("--json", action="store_true", help="print the simulation as JSON")
    simulate.add_argument("--provider", help="whose rules to replay (default: the recorded one)")
    simulate.add_argument(
        "--model",
        help="price every call as this model (default: comparable)",
    )
    simulate.add_argument("--ttl", choices=TTL_CHOICES, help="override the breakpoints' TTL")
    simulate.add_argument(
        "--breakpoints",
        choices=tuple(BREAKPOINT_STRATEGIES),
        metavar="HOW",
        help="Anthropic what-if: recorded, auto, kilocode, none",
    )
    simulate.add_argument("--prices", help="a price file (cacheviz JSON or LiteLLM's)")
    simulate.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another simulator rule, e.g. retention=24h (repeat)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cacheviz simulate``; return the exit status."""
    analysis = load_analysis(args)
    provider = args.provider or _recorded_provider(analysis)
    model, priced_as = args.model, None
    if model is None:  # the one rule: the comparable model (money.pricing.comparable_model)
        from cacheviz.money.pricing import comparable_model

        pairs = analysis.calls.select("provider", "model").unique(maintain_order=True).rows()
        pick = comparable_model(provider, pairs)
        model, priced_as = pick.model, pick.line()
    result = analysis.simulate(provider, model, prices=args.prices, **_rules(args))
    doc = result.to_dict()
    readings(doc, analysis)
    if args.json:
        dump({**doc, "priced_as": priced_as} if priced_as is not None else doc)
    else:
        billed = analysis.calls["billed_usd"].to_list()
        _print_simulation(doc, sys.stdout, billed, priced_as=priced_as)
    return 0


def readings(doc: dict[str, Any], analysis: Analysis) -> None:
    """Give each compared call the analysis' own reading: one story on every surface.

    A call the simulation compares with the provider's report gets ``miss_cause`` (the
    analysis' miss, as ``summary``, the inspector and the report show it; ``null``: no
    miss) and ``rebuild`` (an expected rebuild the log or the capture shows).
    """
    frame = analysis.calls
    causes, rebuilds = frame["miss_cause"].to_list(), frame["rebuild"].to_list()
    for call in doc["calls"]:
        compared = call["verdict"] != "not_reported"
        call["miss_cause"] = causes[call["call"]] if compared else None
        call["rebuild"] = rebuilds[call["call"]] if compared else None


def _verdict(call: dict[str, Any]) -> str:
    """A call's verdict as the table shows it: the analysis' miss first, then the replay's."""
    shown = str(call["verdict"])
    if call.get("miss_cause") is not None:
        shown = f"miss: {call['miss_cause']}"
    elif call.get("rebuild") is not None and shown == "unexplained_miss":
        shown = f"rebuild: {call['rebuild']}"
    return shown + (" (sized from usage)" if call.get("sized_from_usage") else "")


def rules_of(items: list[str]) -> dict[str, Any]:
    """The rules of ``--rule NAME=VALUE`` options (values: :func:`_value`)."""
    rules: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            msg = f"--rule {item!r}: expected NAME=VALUE"
            raise SimulationError(msg)
        rules[name.strip()] = _value(value.strip())
    return rules


def _rules(args: argparse.Namespace) -> dict[str, Any]:
    rules = rules_of(args.rule)
    for name in ("ttl", "breakpoints"):
        if getattr(args, name) is not None:
            rules[name] = getattr(args, name)
    return rules


def _value(text: str) -> Any:
    """A rule value: a number, true/false/none, or the text itself."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _recorded_provider(analysis: Analysis) -> str:
    """The provider the session was recorded with, when one simulator covers it."""
    from cacheviz import providers

    recorded = analysis.calls["provider"].unique().to_list()
    if len(recorded) == 1 and providers.known(recorded[0]) is not None:
        return str(providers.known(recorded[0]))
    msg = (
        f"--provider: the session was recorded with {', '.join(sorted(map(str, recorded)))}; "
        f"choose one of {', '.join(providers.ids())}"
    )
    raise SimulationError(msg)


SIMULATION_COLUMNS = (
    Column("#"),
    Column("model", "<", shrink=14),
    Column("input"),
    Column("read", drop=4),
    Column("write", drop=5),
    Column("uncached", drop=7),
    Column("output", drop=8),
    Column("cost"),
    Column("billed", drop=2),
    Column("rep.read", drop=3),
    Column("rep.write", drop=6),
    Column("verdict", "<"),
)


def _print_simulation(
    doc: dict[str, Any],
    out: TextIO,
    billed: list[float | None] | None = None,
    *,
    priced_as: str | None = None,
) -> None:
    """The simulated calls, each with what the provider billed for it beside its cost.

    ``priced_as`` says which model the calls were priced as when ``--model`` was not
    given (:meth:`cacheviz.money.pricing.Comparable.line`).
    """
    width = width_of(out)
    out.write(
        wrap_line(f"{doc['provider']} ({priced_as or doc['model'] or 'recorded models'})", width)
        + "\n"
    )
    rows = []
    billed = billed or [None] * len(doc["calls"])
    for call in doc["calls"]:
        reported = call["reported"] or {}
        rows.append(
            [
                str(call["call"]),
                call["model"],
                f"{call['input_tokens']:,}",
                f"{call['cache_read_tokens']:,}",
                f"{call['cache_write_tokens']:,}",
                f"{call['uncached_tokens']:,}",
                number(call["output_tokens"]),
                usd(call["cost_usd"]),
                usd(billed[call["call"]]),
                number(reported.get("cache_read_tokens")),
                number(reported.get("cache_write_tokens")),
                _verdict(call),
            ]
        )
    for text in render(SIMULATION_COLUMNS, rows, width):
        out.write(text + "\n")
    if doc["parameters"]:
        used = ", ".join(
            f"{name}={_shown(item['value'])}"
            + ("" if item["source"] == "rule" else f" ({item['source']})")
            for name, item in doc["parameters"].items()
        )
        out.write(wrap_line(f"rules: {used}", width) + "\n")
    total = f"total: {usd(doc['total_cost_usd'])}; ideal (new tokens only): "
    total += f"{usd(doc['ideal_usd'])}"
    if doc["score"] is not None:
        compared = [c for c in doc["calls"] if c["verdict"] != "not_reported"]
        sized = sum(bool(c.get("sized_from_usage")) for c in compared)
        total += (
            f"; matches the reported hits on {doc['score']:.0%} of the "
            f"{len(compared) - sized} calls compared"
        )
        if sized:
            total += (
                f" ({sized} left out: their simulated unlogged prefix was sized from their "
                "own reported read)"
            )
    agreement = doc["agreement"]
    if agreement["share"] is not None:
        total += (
            f"; equal to the reported read on {agreement['equal_calls']} of "
            f"{agreement['reported_calls']} calls ({agreement['basis']})"
        )
    if doc["token_scale"] is not None:
        total += f"; provider tokens / cacheviz tokens = {doc['token_scale']:.3f}"
    out.write(wrap_line(total, width) + "\n")
    if doc["price_source"]:
        out.write(wrap_line(f"prices: {doc['price_source']}", width) + "\n")
    prefill = prefill_line(doc)
    if prefill:
        out.write(wrap_line(prefill, width) + "\n")


_WORST = 5  # drift points named on the prefill line


def prefill_line(doc: dict[str, Any]) -> str:
    """A self-hosted replay's estimated prefill time and its prefill factors (else ``""``).

    The session's factor (its prefill over the same session's without drift) and the
    drift points that cost the most, each as its own factor (``prefill_factor``).
    """
    if doc.get("prefill_factor") is None:
        return ""
    total = sum(c["prefill_ms"] or 0 for c in doc["calls"])
    stable = sum(c["prefill_ms_stable"] or 0 for c in doc["calls"])
    text = (
        f"prefill (estimated): {total:,.0f} ms, {doc['prefill_factor']:.2f}x the "
        f"{stable:,.0f} ms of the same session without drift"
    )
    drifts = [c for c in doc["calls"] if (c["prefill_factor"] or 1) > 1]
    if drifts:
        worst = sorted(drifts, key=lambda c: -c["prefill_factor"])[:_WORST]
        named = ", ".join(f"call {c['call']} {c['prefill_factor']:.1f}x" for c in worst)
        more = f" (the {len(worst)} largest of {len(drifts)})" if len(drifts) > len(worst) else ""
        text += (
            f"; each drift point's prefill over the same call with its prefix kept: {named}{more}"
        )
    return text


def _shown(value: Any) -> str:
    """A rule's value as ``--rule`` takes it (``none``, ``true``, ``16``, ``gpu``)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
