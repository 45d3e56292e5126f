"""``cacheviz scan``: the command-line face of :func:`cacheviz.scanning.scan`."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from dataclasses import replace
from pathlib import Path

from cacheviz._util.visible import one_line
from cacheviz.cli._table import Column, ratio, render, stderr_line, width_of, wrap_line
from cacheviz.errors import CacheVizError, CacheVizWarning

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from cacheviz.scanning._result import ScanResult
    from cacheviz.scanning._walk import Location

_TOP = 10
BY = ("day", "week", "month", "session", "project", "model")
"""``cacheviz.scanning._rollup.BY``, spelled here so that parsing arguments imports no polars."""
_LONG_KEYS = ("session", "project")  # shown last and wrapped, never cut


# cacheviz.request._tokens.SIZES, spelled here so that `cacheviz --help` imports nothing
# more (tests/cli/test_scan_sizes.py checks they are the same)
SIZE_CHOICES = ("tokens", "bytes")


def add_parser(commands: Any) -> None:
    """Add the ``scan`` subcommand to the ``cacheviz`` parser."""
    parser = commands.add_parser(
        "scan",
        help="every session in folders: billed cost, waste, cache busters",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=30),
        description="With no PATH, scans the default locations of the agents cacheviz reads.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="folders or files to scan")
    parser.add_argument(
        "--by", choices=BY, default="day", metavar="KEY", help=f"rollup by {', '.join(BY)} (day)"
    )
    parser.add_argument("--since", help="first day YYYY-MM-DD, or time YYYY-MM-DDTHH:MM (in --tz)")
    parser.add_argument("--until", help="last day YYYY-MM-DD, or time YYYY-MM-DDTHH:MM (in --tz)")
    parser.add_argument("--tz", default="UTC", help="time zone of days (IANA name; default UTC)")
    parser.add_argument("--json", action="store_true", help="print the JSON document")
    parser.add_argument("--parquet", metavar="DIR", help="also write the tables as Parquet")
    parser.add_argument("--report", metavar="HTML", help="also write the scan view as HTML")
    parser.add_argument("--prices", help="a price file (cacheviz JSON or LiteLLM's)")
    parser.add_argument("--jobs", type=_positive, help="worker processes, 1 or more (every core)")
    parser.add_argument("--no-cache", action="store_true", help="don't read or write the cache")
    parser.add_argument(
        "--sizes",
        choices=SIZE_CHOICES,
        default="tokens",
        metavar="HOW",
        help="block sizes: tokens (exact) or bytes (faster estimate)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 2 when any file fails")
    parser.add_argument(
        "--timeout",
        dest="unit_timeout",
        type=_seconds,
        metavar="SEC",
        help="give up a session after SEC seconds (300; 0: never)",
    )


def _seconds(text: str) -> float:
    """``--timeout``: seconds, 0 or more (argparse turns the error into exit 2)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        msg = f"{text!r}: expected seconds, 0 (no limit) or more"
        raise argparse.ArgumentTypeError(msg)
    return value


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
    from cacheviz.scanning import _answers as answers

    kept = _kept(args, paths)
    if kept is not None:
        answer = answers.load(*kept)
        if answer is not None:  # nothing changed since this question was last answered
            return _answer(answer, args, _locations(paths), [])
    from cacheviz.scanning import _child

    with _child.stopped():  # what the scan's pool started, started here or in the scan
        # the pool's fork server preloads while this process imports the scan and walks
        cold = _child.cold(not args.no_cache, args.prices, args.sizes)
        _child.start_early(paths, args.jobs, cold)
        return _scan(args, paths, kept)


def _scan(args: argparse.Namespace, paths: list[Path] | None, kept: tuple[Path, str] | None) -> int:
    """Scan (no kept answer), write what is asked, print the answer; the exit status."""
    from cacheviz.scanning import _answers as answers
    from cacheviz.scanning._scanner import scan
    from cacheviz.scanning._walk import Tree

    tree = Tree() if kept is not None else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheVizWarning)
        try:
            result = scan(
                paths,
                jobs=args.jobs,
                cache=not args.no_cache,
                prices=args.prices,
                tree=tree,
                unit_timeout=args.unit_timeout,
                sizes=args.sizes,
            )
        except CacheVizError as exc:
            print(f"cacheviz: error: {one_line(str(exc))}", file=sys.stderr)
            return 2
    notes = [f"cacheviz: warning: {one_line(str(warning.message))}" for warning in caught]
    try:
        result = result.between(args.since, args.until, tz=args.tz)
        doc = result.to_dict(by=args.by, tz=args.tz)
    except ValueError as exc:
        for note in notes:
            stderr_line(note)
        print(f"cacheviz: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    try:  # whole or not at all, never over a file the scan read (cacheviz._writing)
        if args.parquet:
            result.write_parquet(args.parquet, option="--parquet")
        if args.report:
            from cacheviz.ui._scan import write_scan_report

            write_scan_report(result, args.report, tz=args.tz, option="--report")
    except CacheVizError as exc:
        for note in notes:
            stderr_line(note)
        print(f"cacheviz: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    answer = {"doc": doc, "stderr": _messages(result), "failed": result.failed.height}
    if kept is not None and tree is not None and not caught:
        answers.store(*kept, tree, answer)
    return _answer(answer, args, result.locations, notes)


def _answer(
    answer: dict[str, Any],
    args: argparse.Namespace,
    locations: list[Location] | None,
    notes: list[str],
) -> int:
    """Print a scan's answer (fresh, or the one kept from an unchanged tree)."""
    for note in notes:
        stderr_line(note)
    doc = answer["doc"]
    if args.json:
        # one write: the stream shows control characters escaped, chunk by chunk
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=1, default=str) + "\n")
    else:
        _print(locations, doc, sys.stdout, tz=args.tz)
    for line in answer["stderr"]:
        stderr_line(line)
    return 2 if args.strict and answer["failed"] else 0


def _messages(result: ScanResult) -> list[str]:
    """The lines printed to stderr after the answer: failed, skipped files, warnings."""
    import polars as pl

    failed = result.failed.iter_rows(named=True)
    lines = [f"cacheviz: failed: {one_line(row['error'])}" for row in failed]
    passed = result.files.filter(pl.col("status").is_in(["skipped", "duplicate"]))
    for row in passed.head(_TOP).iter_rows(named=True):
        lines.append(one_line(f"cacheviz: {row['status']}: {row['path']}: {row['error']}"))
    if passed.height > _TOP:
        lines.append(f"cacheviz: and {passed.height - _TOP} more skipped")
    notes = [w for ws in result.files["warnings"].to_list() for w in ws or []]
    lines += [f"cacheviz: warning: {one_line(note)}" for note in notes[:_TOP]]
    if len(notes) > _TOP:
        lines.append(f"cacheviz: warning: and {len(notes) - _TOP} more")
    return lines


def _empty(totals: dict[str, Any]) -> str:
    """The count of files without a call, when there are any (older cached answers lack it)."""
    empty = totals.get("empty_files") or 0
    return f"{empty} without a call, " if empty else ""


def _locations(paths: list[Path] | None) -> list[Location] | None:
    if paths is not None:
        return None
    from cacheviz.scanning._walk import default_locations

    return default_locations()


def _kept(args: argparse.Namespace, paths: list[Path] | None) -> tuple[Path, str] | None:
    """Where the answer to this question is kept (None: not kept, e.g. ``--no-cache``).

    A question is the paths (or the default locations found), the rollup options and
    the price file; ``--parquet`` and ``--report`` need the tables, so they always scan.
    """
    if args.no_cache or args.parquet or args.report:
        return None
    from cacheviz.scanning import _answers as answers
    from cacheviz.scanning._cachedir import default_dir, versioned

    found = None
    if paths is None:
        found = [[loc.agent, str(loc.path), loc.found] for loc in _locations(None) or []]
    question = {
        "paths": None if paths is None else [str(p) for p in paths],
        "locations": found,
        "by": args.by,
        "tz": args.tz,
        "since": args.since,
        "until": args.until,
        "prices": args.prices,
        "unit_timeout": args.unit_timeout,
    }
    if args.sizes != "tokens":
        question["sizes"] = args.sizes
    try:
        prices = None if args.prices is None else Path(args.prices)
        folder = versioned(default_dir(), prices, args.sizes)
    except OSError:
        return None  # the price file can't be read: the scan says so
    return folder, answers.key(question)


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def session_name(session: str) -> str:
    """A session as the table shows it: its file name (and ``#id``), never cut."""
    path, sep, ident = session.partition("#")
    return Path(path).name + sep + ident


def _key(value: str | None, by: str) -> str:
    """A rollup key: '(no time)' for a missing day, a session by its file name."""
    if value is None:
        return "(no time)" if by in ("day", "week", "month") else "(none)"
    return session_name(value) if by == "session" else str(value)


_OUTPUT_COLUMN = Column("output", drop=10)
_AMOUNT_COLUMNS = (
    Column("calls", drop=4),
    Column("hit", drop=5),
    Column("input", drop=9),
    Column("cache read", drop=11),
    Column("cache write", drop=12),
    _OUTPUT_COLUMN,
    Column("billed"),
    Column("ideal", drop=8),
    Column("waste", drop=2),
)

_VERDICTS_COLUMN = Column("verdicts agree", drop=14)
"""How often cacheviz agrees with the provider's own verdicts (shown when some call carries
one); the first to give way on a narrow terminal (``--json`` keeps it)."""


_REASONING_COLUMN = Column("reasoning", drop=13)
"""The reported reasoning (thinking) part of the output, shown when some call reports it
(billed as output); it gives way before the other token columns."""


def _amount_columns(verdicts: bool, reasoning: bool = False) -> tuple[Column, ...]:
    amounts = list(_AMOUNT_COLUMNS)
    if reasoning:
        amounts.insert(amounts.index(_OUTPUT_COLUMN) + 1, _REASONING_COLUMN)
    return (*amounts, *((_VERDICTS_COLUMN,) if verdicts else ()))


def _session_columns(verdicts: bool, reasoning: bool = False) -> tuple[Column, ...]:
    """``--by session``: when, how much, with which models (most calls first), which file.

    Then what it was about. Narrow, the token columns go first, then the session's file
    name is cut at its end (its head names it: a Claude Code session's UUID), then the
    models, calls and hit ratio; the title wraps.
    """
    return (
        Column("last activity", "<", drop=2),
        *(
            replace(c, drop=1) if c.header == "waste" else c
            for c in _amount_columns(verdicts, reasoning)
        ),
        Column("models", "<", drop=6, shrink=12),
        Column("session", "<", drop=7, shrink=13),
        Column("title / first prompt", "<"),
    )


def _agreement(row: dict[str, Any]) -> str:
    """``agree/compared`` provider verdicts ('-': none asked for; see scanning._rollup)."""
    compared = row.get("verdicts_compared")
    if compared is None:
        return "-"
    return f"{row.get('verdicts_agree') or 0}/{compared}"


def _rollup_columns(by: str, verdicts: bool = False, reasoning: bool = False) -> tuple[Column, ...]:
    """Periods and models first; a project last, wrapped; sessions with their context.

    ``verdicts``: a column of how often cacheviz agrees with the provider's own verdicts;
    ``reasoning``: a column of the reported reasoning tokens.
    """
    if by == "session":
        return _session_columns(verdicts, reasoning)
    return (
        *((Column(by, "<"),) if by not in _LONG_KEYS else ()),
        Column("sessions", drop=6),
        *_amount_columns(verdicts, reasoning),
        *((Column(by, "<"),) if by in _LONG_KEYS else ()),
    )


def _when(value: str | None, tz: str) -> str:
    """A session's last activity, ``YYYY-MM-DD HH:MM`` in ``tz`` (``-``: no time)."""
    if not value:
        return "-"
    from datetime import datetime
    from zoneinfo import ZoneInfo

    at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    with contextlib.suppress(KeyError, ValueError):  # a bad --tz: the scan said so already
        at = at.astimezone(ZoneInfo(tz))
    return at.strftime("%Y-%m-%d %H:%M")


def _rollup_row(
    key: str,
    row: dict[str, Any],
    by: str,
    tz: str = "UTC",
    verdicts: bool = False,
    reasoning: bool = False,
) -> list[str]:
    cells = [
        f"{row['calls']:,}",
        ratio(row.get("hit_ratio")),
        _count(row["input_tokens"]),
        _count(row["cache_read_tokens"]),
        _count(row["cache_write_tokens"]),
        _count(row["output_tokens"]),
        *((_count(row.get("reasoning_tokens")),) if reasoning else ()),
        _money(row["billed_usd"]),
        _money(row["ideal_usd"]),
        _money(row.get("waste_usd")),
        *((_agreement(row),) if verdicts else ()),
    ]
    if by == "session":
        context = [row.get("models") or "-", key, row.get("title") or "-"]
        return [_when(row.get("last_ts"), tz), *cells, *context]
    cells = [str(row["sessions"]), *cells]
    return [*cells, key] if by in _LONG_KEYS else [key, *cells]


_BUSTER_COLUMNS = (
    Column("kind", "<"),
    Column("cause", "<"),
    Column("count (material)", drop=3),
    Column("sessions", drop=2),
    Column("tokens lost", drop=1),
    Column("cost"),
    Column("where", "<"),
)


def _print(
    locations: list[Location] | None, doc: dict[str, Any], out: TextIO, *, tz: str = "UTC"
) -> None:
    width = width_of(out)
    if locations is not None:
        for loc in locations:
            # a path is for copying: never wrapped
            out.write(f"{'found' if loc.found else 'absent':<7} {loc.agent:<12} {loc.path}\n")
    totals = doc["totals"]
    summary = (
        f"{totals['files']} files, {totals['sessions']} sessions, {totals['calls']:,} calls "
        f"({doc['duplicates_dropped']} duplicates dropped); {totals['unknown_files']} unknown "
        f"files skipped, {_empty(totals)}{totals['failed_files']} failed"
    )
    out.write(wrap_line(summary, width) + "\n\n")
    by = doc["by"]
    verdicts = totals.get("verdicts_compared") is not None
    reasoning = totals.get("reasoning_tokens") is not None
    rows = [
        _rollup_row(_key(row[by], by), row, by, tz, verdicts, reasoning) for row in doc["rollup"]
    ]
    total = _rollup_row("total", totals, by, tz, verdicts, reasoning)
    if by == "session":
        total[0], total[-3], total[-2], total[-1] = "total", "", "", ""
    rows.append(total)
    columns = _rollup_columns(by, verdicts, reasoning)
    for text in render(columns, rows, width, wrap=by in _LONG_KEYS, min_wrap=20):
        out.write(text + "\n")
    if totals["unpriced_calls"]:
        note = f"({totals['unpriced_calls']} calls with usage but no price: not in billed)"
        out.write(wrap_line(note, width) + "\n")
    if doc.get("sizes") == "bytes":
        note = (
            "(--sizes bytes: block sizes estimated from their bytes where every call reports "
            "usage; billed as reported; ideal, waste and tokens lost are estimates that may "
            "move by a few percent on single calls)"
        )
        out.write(wrap_line(note, width) + "\n")
    if doc["busters"]:
        out.write("\ncache busters (drifts and misses by cause and place, costliest first)\n")
        busters = [
            [
                row["kind"],
                row["cause"],
                f"{row['drifts']} ({row['material']})",
                str(row["sessions"]),
                _count(row["tokens"]),
                _money(row["cost_usd"]),
                "/".join(x for x in (row["part"], row["label"]) if x) or "-",
            ]
            for row in doc["busters"][:_TOP]
        ]
        for text in render(_BUSTER_COLUMNS, busters, width):
            out.write(text + "\n")
