"""``cacheviz summary``: per-call tokens, common prefix, drifts, misses and billed cost."""

from __future__ import annotations

import sys

from cacheviz.cli._shared import (
    dump,
    formatter,
    input_options,
    inputs_of,
    load_analysis,
    number,
    usd,
)
from cacheviz.cli._table import Column, ratio, render, width_of, wrap_line

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO

    from cacheviz.analysis import Analysis


def add_parser(commands: Any) -> None:
    """Add the ``summary`` command to the ``cacheviz`` parser."""
    summary = commands.add_parser(
        "summary",
        parents=[input_options()],
        formatter_class=formatter,
        help="per-call tokens, common prefix, drifts, misses and billed cost",
        description=(
            "Per call: tokens sent, the common prefix with earlier calls, the reported "
            "usage, billed cost and what broke the cache. "
            + " ".join(f"{m}." for m in MARKS.values())
        ),
    )
    summary.add_argument(
        "--json", action="store_true", help="print the calls as JSON (docs/format.md)"
    )
    summary.add_argument(
        "--all-drifts", action="store_true", help="also list the costless (folded) drifts"
    )
    summary.add_argument("--csv", metavar="PATH", help="also write the calls table as CSV")
    summary.add_argument("--parquet", metavar="PATH", help="also write the calls table as Parquet")
    summary.add_argument(
        "--follow",
        action="store_true",
        help="print each call as the file grows (Ctrl-C stops)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cacheviz summary``; return the exit status."""
    if args.follow:
        from cacheviz.cli._follow import follow

        follow(
            args.path,
            sys.stdout,
            columns=SUMMARY_COLUMNS,
            row_of=lambda call: call_row(call, all_drifts=args.all_drifts),
            fmt=args.format,
            thread=args.thread,
            encoding=args.encoding,
            totals_of=lambda doc: running_totals(doc, width_of(sys.stdout)),
        )
        return 0
    analysis = load_analysis(args)
    _export(analysis, args)
    doc = analysis.summary()
    if args.json:
        dump(doc)
    else:
        _print_table(doc, sys.stdout, all_drifts=args.all_drifts)
    return 0


SUMMARY_COLUMNS = (
    Column("#"),
    Column("thread", "<", drop=8, shrink=18),
    Column("tokens"),
    Column("prefix", drop=10),
    Column("new", drop=9),
    Column("hit", drop=4),
    Column("rep.in", drop=7),
    Column("rep.read", drop=5),
    Column("rep.write", drop=6),
    Column("billed", drop=2),
    Column("drift / miss", "<"),
)
"""Narrow, they give way as the README says: prefix and new tokens first, then the thread
is cut (to no fewer than 18 characters), then the reported usage, the hit ratio, billed."""


MARKS = {
    "✗": "✗ drift: bytes this thread already sent were changed (−tokens whose prefix it lost, "
    "what that cost)",
    "◌": "◌ miss: the provider read less than the common prefix offered (−tokens not read)",
    "⚑": "⚑ the provider's own verdict on the cache, and whether cacheviz agrees",
}
"""The legend of the drift / miss column's marks (printed under a table that uses them)."""


def legend(cells: list[str]) -> str | None:
    """One line saying what the marks in ``cells`` mean; ``None`` when there are none."""
    used = [text for mark, text in MARKS.items() if any(mark in cell for cell in cells)]
    return "legend: " + "; ".join(used) if used else None


def call_row(call: dict[str, Any], *, all_drifts: bool = False) -> list[str]:
    """The cells of one call of ``summary``'s table (see :data:`SUMMARY_COLUMNS`)."""
    reported = call["reported"] or {}
    marker = ""
    d = call["drift"]
    if d is not None and (all_drifts or d["material"] is not False):
        cost = "" if d["cost_usd"] is None else f", {usd(d['cost_usd'])}"
        marker = f"✗ {d['cause']} at {d['part']}/{d['label']} (−{d['tokens_lost']:,} tok{cost})"
    if call["miss"] is not None:
        m = call["miss"]
        marker += (
            f"{'; ' if marker else ''}◌ miss: {m['cause']} (−{m['shortfall_tokens']:,} tok read)"
        )
    if call.get("verdict_agrees") is not None:
        # a disagreement is news: say why (verdict.compare_verdict's one line)
        says = "agrees" if call["verdict_agrees"] else f"disagrees: {call.get('verdict_detail')}"
        marker += (
            f"{'; ' if marker else ''}⚑ provider: {call['provider_verdict']} (cacheviz {says})"
        )
    return [
        str(call["call"]),
        call["thread"],
        f"{call['input_tokens']:,}",
        f"{call['prefix_tokens']:,}",
        f"{call['new_tokens']:,}",
        ratio(call.get("hit_ratio")),
        number(reported.get("input_tokens")),
        number(reported.get("cache_read_tokens")),
        number(reported.get("cache_write_tokens")),
        usd(call["billed_usd"]),
        marker,
    ]


def _print_table(doc: dict[str, Any], out: TextIO, *, all_drifts: bool = False) -> None:
    calls = doc["calls"]
    width = width_of(out)

    def line(text: str) -> None:
        out.write(wrap_line(text, width, indent=6) + "\n")

    line(f"{doc['path']}  ({doc['format']}, {len(calls)} calls)")
    rows = [call_row(call, all_drifts=all_drifts) for call in calls]
    for text in render(SUMMARY_COLUMNS, rows, width):
        out.write(text + "\n")
    key = legend([row[-1] for row in rows])
    if key is not None:
        line(key)
    totals = {"input": 0, "prefix": 0, "new": 0}
    shown, folded, misses = [], [], []
    for call in calls:
        totals["input"] += call["input_tokens"]
        totals["prefix"] += call["prefix_tokens"]
        totals["new"] += call["new_tokens"]
        d = call["drift"]
        if d is not None and (all_drifts or d["material"] is not False):
            shown.append(call)
        elif d is not None:
            folded.append(call)
        if call["miss"] is not None:
            misses.append(call)
    if shown:
        line("drifts (what each break cost: as sent minus had the prefix been kept):")
        for call in shown:
            d = call["drift"]
            line(f"{call['call']:>4}  {d['cause']} [{usd(d['cost_usd'])}]: {d['detail']}")
    if folded:
        line(
            f"+{len(folded)} costless drift(s) folded (below the cacheable minimum, or nothing "
            "cached to lose; --all-drifts lists them)"
        )
    if misses:
        line("misses (the provider read less than the common prefix offered):")
        for call in misses:
            m = call["miss"]
            line(f"{call['call']:>4}  {m['cause']} [{usd(m['cost_usd'])}]: {m['detail']}")
    line(_total_line(doc, totals, len(shown), folded, misses))


def _total_line(
    doc: dict[str, Any], totals: dict[str, int], drifts: int, folded: list, misses: list
) -> str:
    calls = doc["calls"]
    share = totals["prefix"] / totals["input"] if totals["input"] else 0.0
    text = (
        f"total: {totals['input']:,} tokens, {totals['prefix']:,} in a common prefix "
        f"({share:.1%}), {totals['new']:,} new; {drifts} drift(s)"
    )
    if folded:
        text += f" (+{len(folded)} costless)"
    if misses:
        text += f", {len(misses)} miss(es)"
    if doc.get("billed_usd") is not None and doc.get("billed_scope") == "session":
        text += (
            f"; billed {usd(doc['billed_usd'])} (the session's reported usage per model at "
            "dated prices; no per-call usage in the log)"
        )
    elif doc.get("billed_usd") is not None:
        text += f"; billed {usd(doc['billed_usd'])} (reported usage at dated prices)"
    if doc.get("unpriced_models"):
        why = doc.get("unpriced_reasons") or {}
        shown = [f"{m} ({why[m]})" if why.get(m) else m for m in doc["unpriced_models"]]
        text += f"; no price for {', '.join(shown)}"
    if any(c["reconstructed"] for c in calls):
        text += "; requests rebuilt from the log, not the bytes sent"
    if any(c["unlogged_tokens"] is not None for c in calls):
        text += " (unlogged system + tools sized from reported usage)"
    text += _basis_note(doc.get("token_basis") or {}, calls)
    if doc["skipped_lines"]:
        text += f"; {doc['skipped_lines']} bad line(s) skipped"
    if doc["ignored_records"]:
        ignored = ", ".join(f"{n} {kind}" for kind, n in sorted(doc["ignored_records"].items()))
        text += f"; not API calls: {ignored}"
    return text + _headline(doc)


def running_totals(doc: dict[str, Any], width: int | None) -> str:
    """The totals ``summary --follow`` prints when stopped: billed, waste, hit ratio.

    The same figures, with the same definitions, as the last line of ``summary`` on the
    calls read so far.

    Parameters
    ----------
    doc : dict
        The summary document of the calls read so far.
    width : int or None
        The terminal's width (None: one line).

    Returns
    -------
    str
        The legend of the marks the rows used (when they used one), then the totals
        line, wrapped to ``width``.
    """
    calls = len(doc["calls"])
    billed = doc.get("billed_usd")
    text = f"totals of the {calls} call(s) read: billed "
    text += usd(billed) if billed is not None else "n/a (no reported usage)"
    key = legend([call_row(call)[-1] for call in doc["calls"]])
    lines = [] if key is None else [wrap_line(key, width, indent=6)]
    return "\n".join([*lines, wrap_line(text + _headline(doc), width, indent=6)])


def _basis_note(basis: dict[str, int], calls: list[dict[str, Any]]) -> str:
    """What the token figures are: calibrated to reported usage, exact, or estimated."""
    calibrated = basis.get("calibrated", 0) + basis.get("rescaled", 0)
    estimated = basis.get("estimated", 0)
    if calibrated and not estimated:
        return "; tokens in the provider's count (calibrated to its reported input)"
    if calibrated:
        return (
            f"; tokens in the provider's count on {calibrated} call(s) with usage, "
            f"estimated on {estimated} (o200k_base at the thread's rate)"
        )
    if not all(c["tokens_exact"] for c in calls):
        return "; counts approximate (model tokenizer not public, o200k_base used)"
    return ""


def _headline(doc: dict[str, Any]) -> str:
    """Waste and hit ratio, one definition each (cacheviz.money._metrics)."""
    # metrics imports polars: not at start-up
    from cacheviz.money._metrics import Waste, percent

    hit = doc.get("hit_ratio") or {}
    parts = []
    sums = doc.get("waste_of")
    if doc.get("waste_usd") is not None and sums:
        parts.append(Waste(doc["waste_usd"], **sums).text(usd))
    if doc.get("simulation_withheld"):
        parts.append(f"simulated cost withheld: {doc['simulation_withheld']}")
    if hit.get("scope") == "session":
        shown = percent(hit.get("tokens")) if hit.get("tokens") is not None else "n/a"
        parts.append(f"hit ratio {shown} of the session's reported input (per call: n/a)")
    elif hit.get("calls"):
        parts.append(
            f"hit ratio {percent(hit.get('tokens'))} of the reported input, "
            f"{percent(hit.get('requests'))} of calls"
        )
    else:
        parts.append("hit ratio n/a (no cache fields reported)")
    verdicts = doc.get("provider_verdicts") or {}
    if verdicts.get("compared"):
        parts.append(
            f"provider verdicts: cacheviz agrees on {verdicts['agree']} of the "
            f"{verdicts['compared']} compared ({percent(verdicts.get('agree_rate'))})"
        )
    return "".join(f"; {part}" for part in parts)


def _export(analysis: Analysis, args: argparse.Namespace) -> None:
    """``summary --csv`` / ``--parquet``: the calls frame (docs/format.md), as is.

    Written whole or not at all, never over the input (:mod:`cacheviz._writing`); in the
    CSV a text cell a spreadsheet would take for a formula starts with ``'``.
    """
    from cacheviz import _writing

    inputs = inputs_of(args)
    if args.csv is not None:
        _writing.write_csv(analysis.calls, args.csv, option="--csv", inputs=inputs)
        print(f"cacheviz: wrote {analysis.calls.height} calls to {args.csv}", file=sys.stderr)
    if args.parquet is not None:
        data = _writing.parquet(analysis.calls)
        _writing.write(args.parquet, data, what="parquet file", option="--parquet", inputs=inputs)
        print(f"cacheviz: wrote {analysis.calls.height} calls to {args.parquet}", file=sys.stderr)
