"""``cacheviz compare``: the session's cost under several providers.

A target that can't be replayed is that row's error (the other targets are computed,
exit 1); a model without a price leaves its row's tokens and says "no price" instead of
a cost (exit 0). A misspelt provider is an error before anything runs (exit 2).
"""

from __future__ import annotations

import sys

from cacheviz.cli._shared import TTL_CHOICES, dump, formatter, input_options, load_analysis, usd
from cacheviz.cli._table import Column, render, width_of, wrap_line

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO


def add_parser(commands: Any) -> None:
    """Add the ``compare`` command to the ``cacheviz`` parser."""
    compare = commands.add_parser(
        "compare",
        parents=[input_options()],
        formatter_class=formatter,
        help="the session's cost under several providers",
        description=(
            "The session's cost under several providers, one row per target. A target "
            "that can't be replayed shows its error in its row and the others are "
            "computed (exit 1); a model without a price shows 'no price' (exit 0)."
        ),
    )
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument(
        "--targets",
        metavar="P:M,...",
        help="provider:model,... (default: recorded + one each)",
    )
    compare.add_argument("--prices", help="a price file (cacheviz JSON or LiteLLM's)")
    compare.add_argument("--ttl", choices=TTL_CHOICES, help="TTL for simulators that take one")


def run(args: argparse.Namespace) -> int:
    """Run ``cacheviz compare``; return the exit status."""
    analysis = load_analysis(args)
    if args.targets:
        targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    else:
        from cacheviz import providers

        recorded = analysis.calls.select("provider", "model").unique(maintain_order=True).rows()
        targets = providers.comparison_targets(recorded)
    rules = {"ttl": args.ttl} if args.ttl else {}
    frame = analysis.compare(targets, prices=args.prices, **rules)
    if args.json:
        dump({"targets": frame.to_dicts()})
    else:
        models = [str(m) for m in analysis.calls["model"].unique(maintain_order=True)]
        _print_compare(frame, sys.stdout, models)
    failed = frame.filter(frame["error"].is_not_null() & frame["input_tokens"].is_null())
    return 1 if failed.height else 0


def _tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


COMPARE_COLUMNS = (
    Column("target", "<", drop=1, shrink=20),
    Column("read", drop=4),
    Column("write", drop=3),
    Column("uncached", drop=2),
    Column("cost"),
    Column("ideal", drop=5),
)


def label(row: dict[str, Any], recorded: list[str]) -> str:
    """A row's name: ``as recorded (…)`` for a provider alone or the one recorded model."""
    alone = row["model"] is None and ":" not in row["target"]
    if alone or (len(recorded) == 1 and row["model"] == recorded[0]):
        return f"as recorded ({row['target']})"
    return str(row["target"])


def _print_compare(frame: Any, out: TextIO, recorded: list[str] | None = None) -> None:
    """The comparison table, each row's error, then what the rows price (to the width)."""
    width = width_of(out)
    notes, rows, others, own = [], [], [], []
    recorded = recorded or []
    for row in frame.iter_rows(named=True):
        name = label(row, recorded)
        cost = usd(row["cost_usd"])
        if row["error"] is not None:
            cost = "no price" if row["input_tokens"] is not None else "failed"
            notes.append(f"{name}: {row['error']}")
        if row["model"] is not None and row["model"] not in recorded:
            others.append(str(row["target"]))
        elif row["model"] is not None and not name.startswith("as recorded"):
            own.append(str(row["target"]))
        rows.append(
            [
                name,
                _tokens(row["cache_read_tokens"]),
                _tokens(row["cache_write_tokens"]),
                _tokens(row["uncached_tokens"]),
                cost,
                usd(row["ideal_usd"]),
            ]
        )
    for text in render(COMPARE_COLUMNS, rows, width, wrap=False):
        out.write(text + "\n")
    lines = []
    if any(r[0].startswith("as recorded") for r in rows):
        lines.append(
            "as recorded: each call priced as its own model under its provider's rules "
            "(summary's simulated cost)"
        )
    if own:
        lines.append(f"{', '.join(own)}: the whole session priced as that recorded model")
    if others and recorded:
        lines.append(
            f"{', '.join(others)}: the whole session priced as that model, the comparable "
            f"model of {', '.join(recorded)}"
        )
    for row in frame.iter_rows(named=True):  # a self-hosted engine: no cost, its prefill
        if row.get("prefill_factor") is not None:
            lines.append(
                f"{label(row, recorded)}: estimated prefill {row['prefill_factor']:.2f}x the "
                "same session without drift (prefill_factor)"
            )
    for note in [*notes, *lines]:
        out.write(wrap_line(note, width) + "\n")
