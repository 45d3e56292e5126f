"""``cacheviz scan``: the command-line face of :func:`cacheviz.fleet.scan`."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any, TextIO

import polars as pl

from cacheviz.errors import CacheVizError, CacheVizWarning
from cacheviz.fleet.result import ScanResult
from cacheviz.fleet.rollup import BY
from cacheviz.fleet.scanner import scan

_TOP = 10


def add_parser(commands: Any) -> None:
    """Add the ``scan`` subcommand to the ``cacheviz`` parser."""
    parser = commands.add_parser(
        "scan",
        help="analyse every session in folders: billed cost, waste, cache busters",
        description="With no PATH, scans the default locations of the agents cacheviz reads.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="folders or files to scan")
    parser.add_argument("--by", choices=BY, default="day", help="rollup table (default: day)")
    parser.add_argument(
        "--since", help="first day (YYYY-MM-DD or YYYYMMDD) or time (YYYY-MM-DDTHH:MM), in --tz"
    )
    parser.add_argument(
        "--until", help="last day (YYYY-MM-DD or YYYYMMDD) or time (YYYY-MM-DDTHH:MM), in --tz"
    )
    parser.add_argument("--tz", default="UTC", help="time zone of days (IANA name; default UTC)")
    parser.add_argument("--json", action="store_true", help="print the JSON document")
    parser.add_argument("--parquet", metavar="DIR", help="also write the tables as Parquet")
    parser.add_argument("--report", metavar="HTML", help="also write the fleet view as HTML")
    parser.add_argument("--prices", help="a price file (cacheviz JSON or LiteLLM's)")
    parser.add_argument(
        "--jobs", type=_positive, help="worker processes, 1 or more (default: every core)"
    )
    parser.add_argument("--no-cache", action="store_true", help="don't read or write the cache")
    parser.add_argument("--strict", action="store_true", help="exit 2 when any file fails")


def _positive(text: str) -> int:
    """``--jobs``: a whole number of 1 or more (argparse turns the error into exit 2)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"{text!r}: expected a whole number of worker processes, 1 or more"
        raise argparse.ArgumentTypeError(msg)
    return value


def run(args: argparse.Namespace) -> int:
    """Run ``cacheviz scan``; return the exit status."""
    paths = [Path(p) for p in args.paths] or None
    for path in paths or []:
        if not path.exists():
            print(
                f"cacheviz: error: {path}: no such file or folder; check the path", file=sys.stderr
            )
            return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheVizWarning)
        try:
            result = scan(paths, jobs=args.jobs, cache=not args.no_cache, prices=args.prices)
        except CacheVizError as exc:
            print(f"cacheviz: error: {exc}", file=sys.stderr)
            return 2
    for warning in caught:
        print(f"cacheviz: warning: {warning.message}", file=sys.stderr)
    try:
        result = result.between(args.since, args.until, tz=args.tz)
        doc = result.to_dict(by=args.by, tz=args.tz)
    except ValueError as exc:
        print(f"cacheviz: error: {exc}", file=sys.stderr)
        return 2
    if args.parquet:
        result.write_parquet(args.parquet)
    if args.report:
        from cacheviz.ui.fleet import write_fleet_report

        write_fleet_report(result, args.report, tz=args.tz)
    if args.json:
        json.dump(doc, sys.stdout, ensure_ascii=False, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        _print(result, doc, sys.stdout)
    for row in result.failed.iter_rows(named=True):
        print(f"cacheviz: failed: {row['error']}", file=sys.stderr)
    passed = result.files.filter(pl.col("status").is_in(["skipped", "duplicate"]))
    for row in passed.head(_TOP).iter_rows(named=True):
        print(f"cacheviz: {row['status']}: {row['path']}: {row['error']}", file=sys.stderr)
    if passed.height > _TOP:
        print(f"cacheviz: and {passed.height - _TOP} more skipped", file=sys.stderr)
    notes = [w for ws in result.files["warnings"].to_list() for w in ws or []]
    for note in notes[:_TOP]:
        print(f"cacheviz: warning: {note}", file=sys.stderr)
    if len(notes) > _TOP:
        print(f"cacheviz: warning: and {len(notes) - _TOP} more", file=sys.stderr)
    return 2 if args.strict and result.failed.height else 0


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _key(value: str | None, width: int) -> str:
    """A rollup key that fits: the end of a long path, '(no time)' for a missing day."""
    text = "(no time)" if value is None else str(value)
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def _print(result: ScanResult, doc: dict[str, Any], out: TextIO) -> None:
    if result.locations is not None:
        for loc in result.locations:
            out.write(f"{'found' if loc.found else 'absent':<7} {loc.agent:<12} {loc.path}\n")
    totals = doc["totals"]
    out.write(
        f"{totals['files']} files, {totals['sessions']} sessions, {totals['calls']:,} calls "
        f"({doc['duplicates_dropped']} duplicates dropped); {totals['unknown_files']} unknown "
        f"files skipped, {totals['failed_files']} failed\n"
    )
    by = doc["by"]
    width = 12 if by in ("day", "week", "month") else 40
    out.write(
        f"\n{by:<{width}} {'sessions':>8} {'calls':>7} {'input':>13} {'cache read':>13} "
        f"{'cache write':>12} {'output':>10} {'billed':>10} {'ideal':>10}\n"
    )
    for row in doc["rollup"]:
        out.write(
            f"{_key(row[by], width):<{width}} {row['sessions']:>8} {row['calls']:>7} "
            f"{_count(row['input_tokens']):>13} {_count(row['cache_read_tokens']):>13} "
            f"{_count(row['cache_write_tokens']):>12} {_count(row['output_tokens']):>10} "
            f"{_money(row['billed_usd']):>10} {_money(row['ideal_usd']):>10}\n"
        )
    out.write(
        f"{'total':<{width}} {totals['sessions']:>8} {totals['calls']:>7} "
        f"{_count(totals['input_tokens']):>13} {_count(totals['cache_read_tokens']):>13} "
        f"{_count(totals['cache_write_tokens']):>12} {_count(totals['output_tokens']):>10} "
        f"{_money(totals['billed_usd']):>10} {_money(totals['ideal_usd']):>10}\n"
    )
    if totals["unpriced_calls"]:
        out.write(f"({totals['unpriced_calls']} calls with usage but no price: not in billed)\n")
    if doc["busters"]:
        out.write(
            "\ncache busters (kind, cause, where: count (material) in sessions, tokens lost, "
            "cost)\n"
        )
        for row in doc["busters"][:_TOP]:
            where = "/".join(x for x in (row["part"], row["label"]) if x) or "-"
            count = f"{row['drifts']} ({row['material']})"
            out.write(
                f"  {row['kind']:<5} {row['cause']:<20} {where[:28]:<28} {count:>12} in "
                f"{row['sessions']:>4} sessions  {_count(row['tokens']):>12} tok  "
                f"{_money(row['cost_usd'])}\n"
            )
