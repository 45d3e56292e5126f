"""The ``cacheviz`` command line.

Exit status: 0 on success, 2 when the input or the arguments are wrong (one line on
stderr saying where and what to do), 1 on an unexpected internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from cacheviz.analysis import Analysis
from cacheviz.errors import CacheVizError, CacheVizWarning
from cacheviz.formats import READERS, load
from cacheviz.formats._lines import PROGRESS
from cacheviz.lineage import LINEAGE_MODES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cacheviz", description="Inspect the prompt caching of an LLM agent session."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    summary = commands.add_parser(
        "summary", help="per-call tokens, common prefix, new tokens and drift points"
    )
    summary.add_argument("path", help="transcript file (format auto-detected)")
    summary.add_argument("--json", action="store_true", help="print the JSON document")
    summary.add_argument("--format", choices=sorted(READERS), help="force the transcript format")
    summary.add_argument(
        "--errors",
        choices=("raise", "skip"),
        default="raise",
        help="stop at the first bad line (default) or skip bad lines and report how many",
    )
    summary.add_argument(
        "--lineage", choices=LINEAGE_MODES, default="auto", help="how to group calls"
    )
    summary.add_argument("--encoding", help="force a tiktoken encoding (e.g. cl100k_base)")
    commands.add_parser("formats", help="list the transcript formats cacheviz reads")
    return parser


def _fmt(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _print_table(doc: dict[str, Any], out: TextIO) -> None:
    calls = doc["calls"]
    header = (
        f"{'#':>4}  {'lineage':<22} {'tokens':>9} {'prefix':>9} {'new':>8}  "
        f"{'rep.in':>8} {'rep.read':>8} {'rep.write':>9}  drift"
    )
    out.write(f"{doc['path']}  ({doc['format']}, {len(calls)} calls)\n{header}\n")
    totals = {"input": 0, "prefix": 0, "new": 0}
    drifts = 0
    for call in calls:
        totals["input"] += call["input_tokens"]
        totals["prefix"] += call["prefix_tokens"]
        totals["new"] += call["new_tokens"]
        reported = call["reported"] or {}
        marker = ""
        if call["drift"] is not None:
            drifts += 1
            d = call["drift"]
            marker = f"✗ {d['cause']} at {d['part']}/{d['label']} (−{d['tokens_lost']:,} tok)"
        out.write(
            f"{call['index']:>4}  {call['lineage'][:22]:<22} {call['input_tokens']:>9,} "
            f"{call['prefix_tokens']:>9,} {call['new_tokens']:>8,}  "
            f"{_fmt(reported.get('input_tokens')):>8} {_fmt(reported.get('cache_read_tokens')):>8} "
            f"{_fmt(reported.get('cache_write_tokens')):>9}  {marker}\n"
        )
    details = [c for c in calls if c["drift"] is not None]
    if details:
        out.write("drifts:\n")
        for call in details:
            d = call["drift"]
            out.write(f"{call['index']:>4}  {d['cause']}: {d['detail']}\n")
    share = totals["prefix"] / totals["input"] if totals["input"] else 0.0
    out.write(
        f"total: {totals['input']:,} tokens, {totals['prefix']:,} in a common prefix "
        f"({share:.1%}), {totals['new']:,} new; {drifts} drift(s)"
    )
    if any(c["reconstructed"] for c in calls):
        out.write("; requests rebuilt from the log, not the bytes sent")
    if any(c["unlogged_tokens"] is not None for c in calls):
        out.write(" (unlogged system + tools sized from reported usage)")
    if not all(c["tokens_exact"] for c in calls):
        out.write("; counts approximate (model tokenizer not public, o200k_base used)")
    if doc["skipped_lines"]:
        out.write(f"; {doc['skipped_lines']} bad line(s) skipped")
    if doc["ignored_records"]:
        ignored = ", ".join(f"{n} {kind}" for kind, n in sorted(doc["ignored_records"].items()))
        out.write(f"; not API calls: {ignored}")
    out.write("\n")


class _Progress:
    """A one-line progress report on stderr for big files read from a terminal."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        self.shown = True
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{self.label}: {done / 1e6:,.0f} of {total / 1e6:,.0f} MB{end}")
        sys.stderr.flush()


def _load(args: argparse.Namespace) -> Analysis:
    token = None
    if sys.stderr.isatty() and Path(args.path).is_file():
        token = PROGRESS.set(_Progress(f"reading {Path(args.path).name}"))
    try:
        session = load(args.path, args.format, errors=args.errors)
    finally:
        if token is not None:
            PROGRESS.reset(token)
    return session.analyze(lineage=args.lineage, encoding=args.encoding)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "formats":
        for name, module in READERS.items():
            print(f"{name:<14} {module.DESCRIPTION}")
        return 0
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CacheVizWarning)
            analysis = _load(args)
        for warning in caught:
            if issubclass(warning.category, CacheVizWarning):
                print(f"cacheviz: warning: {warning.message}", file=sys.stderr)
        doc = analysis.summary()
    except CacheVizError as exc:
        print(f"cacheviz: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"cacheviz: error: {args.path}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
    else:
        _print_table(doc, sys.stdout)
    return 0


def run() -> None:
    """Console-script entry point."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `cacheviz summary x | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = 0
    sys.exit(status)


if __name__ == "__main__":
    run()
