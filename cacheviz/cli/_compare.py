"""``cacheviz compare``: the session's cost under several providers.

A target that can't be replayed is that row's error (the other targets are computed,
exit 1); a model without a price leaves its row's tokens and says "no price" instead of
a cost (exit 0). A misspelt provider is an error before anything runs (exit 2).
"""

from __future__ import annotations

import sys

from cacheviz.cli._shared import TTL_CHOICES, dump, formatter, input_options, load_analysis, usd
from cacheviz.cli._table import width_of, wrap_line

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
        _print_compare(frame, sys.stdout)
    failed = frame.filter(frame["error"].is_not_null() & frame["input_tokens"].is_null())
    return 1 if failed.height else 0


def _tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _print_compare(frame: Any, out: TextIO) -> None:
    """The comparison table, then one line per row with an error (wrapped to the width)."""
    out.write(
        f"{'target':<36} {'read':>10} {'write':>9} {'uncached':>10} {'cost':>11} {'ideal':>11}\n"
    )
    notes = []
    for row in frame.iter_rows(named=True):
        cost = usd(row["cost_usd"])
        if row["error"] is not None:
            cost = "no price" if row["input_tokens"] is not None else "failed"
            notes.append(f"{row['target']}: {row['error']}")
        out.write(
            f"{row['target'][:36]:<36} {_tokens(row['cache_read_tokens']):>10} "
            f"{_tokens(row['cache_write_tokens']):>9} {_tokens(row['uncached_tokens']):>10} "
            f"{cost:>11} {usd(row['ideal_usd']):>11}\n"
        )
    width = width_of(out)
    for note in notes:
        out.write(wrap_line(note, width) + "\n")
