"""``cacheviz compare``: the session's cost under several providers."""

from __future__ import annotations

import sys

from cacheviz.cli._shared import TTL_CHOICES, dump, formatter, input_options, load_analysis, usd

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
    return 0


def _print_compare(frame: Any, out: TextIO) -> None:
    out.write(
        f"{'target':<36} {'read':>10} {'write':>9} {'uncached':>10} {'cost':>11} {'ideal':>11}\n"
    )
    for row in frame.iter_rows(named=True):
        out.write(
            f"{row['target'][:36]:<36} {row['cache_read_tokens']:>10,} "
            f"{row['cache_write_tokens']:>9,} {row['uncached_tokens']:>10,} "
            f"{usd(row['cost_usd']):>11} {usd(row['ideal_usd']):>11}\n"
        )
