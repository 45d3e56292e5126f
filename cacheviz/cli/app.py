"""The ``cacheviz`` command line.

Exit status: 0 on success, 2 when the input or the arguments are wrong (one line on
stderr saying where and what to do), 1 on an unexpected internal error or when
``cacheviz check`` finds a warning or an error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cacheviz._util.visible import visible
from cacheviz.cli.table import Column, ratio, render, width_of, wrap_line
from cacheviz.errors import CacheVizError, CacheVizWarning, SimulationError

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

    from cacheviz.analysis import Analysis

# What the parser offers, without importing the readers, polars or the analysis to parse
# the arguments (``cacheviz --version`` answers in ~35 ms of imports);
# tests/cli/test_startup.py checks each against its registry.


class _Formats:
    """The ``--format`` choices: the reader names, looked up only when checked.

    argparse tests a value with ``in`` and lists the choices in its error and in help;
    with a ``metavar`` it does not iterate them to build the parser.
    """

    @staticmethod
    def _names() -> list[str]:
        from cacheviz.formats import READERS

        return sorted(READERS)

    def __contains__(self, value: object) -> bool:
        return value in self._names()

    def __iter__(self):  # noqa: ANN204 - an iterator of names
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


FORMATS = _Formats()
"""``sorted(cacheviz.formats.READERS)``, imported when ``--format`` is given."""
THREAD_MODES = ("auto", "model+prefix", "model", "single")
"""``cacheviz.prefix._thread.THREAD_MODES``."""


TTL_CHOICES = ("5m", "1h")
"""``cacheviz.providers.rule_choices("ttl")``, restated so parsing imports no provider."""
BREAKPOINT_STRATEGIES = {
    "recorded": "the request's own cache_control breakpoints (default)",
    "auto": "end of tools, end of system, the last two messages",
    "kilocode": "the first two system blocks and the last two messages (KiloCode)",
    "none": "no breakpoint: nothing is cached",
}
THREAD_HELP = {
    "auto": "the transcript's own threads, else by which conversation a call continues",
    "model+prefix": "one thread per model and system + tools (any change starts one)",
    "model": "one thread per model",
    "single": "every call in one thread",
}
JSON_HELP = {
    "summary": "print the calls as JSON (docs/format.md)",
    "simulate": "print the simulation as JSON",
    "compare": "print the comparison as JSON",
    "check": "print the findings as JSON",
}


def _formatter(prog: str) -> argparse.HelpFormatter:
    """Help with the option and what it does on one line."""
    return argparse.HelpFormatter(prog, max_help_position=30)


def _input_options() -> argparse.ArgumentParser:
    """Options every command that reads a transcript shares."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("path", help="transcript file or folder (format auto-detected)")
    common.add_argument(
        "--format",
        choices=FORMATS,
        metavar="NAME",
        help="read as this format (names: cacheviz formats)",
    )
    common.add_argument(
        "--errors",
        choices=("raise", "skip"),
        default="raise",
        help="stop at the first bad line, or skip and count",
    )
    common.add_argument(
        "--thread",
        choices=THREAD_MODES,
        default="auto",
        metavar="MODE",
        help="group calls into threads (modes: cacheviz formats)",
    )
    common.add_argument("--encoding", help="count tokens with this tiktoken encoding")
    return common


def _add_json(parser: argparse.ArgumentParser, command: str) -> None:
    parser.add_argument("--json", action="store_true", help=JSON_HELP[command])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cacheviz",
        description="Inspect the prompt caching of an LLM agent session.",
        epilog="`cacheviz formats` lists the formats, --thread modes and --breakpoints strategies.",
        formatter_class=_formatter,
    )
    parser.add_argument("--version", action="version", version=f"cacheviz {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _input_options()
    summary = commands.add_parser(
        "summary",
        parents=[common],
        formatter_class=_formatter,
        help="per-call tokens, common prefix, drifts, misses and billed cost",
    )
    _add_json(summary, "summary")
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
    simulate = commands.add_parser(
        "simulate",
        parents=[common],
        formatter_class=_formatter,
        help="replay the session under a provider's caching rules",
    )
    _add_json(simulate, "simulate")
    simulate.add_argument("--provider", help="whose rules to replay (default: the recorded one)")
    simulate.add_argument("--model", help="price and simulate every call as this model")
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
    compare = commands.add_parser(
        "compare",
        parents=[common],
        formatter_class=_formatter,
        help="the session's cost under several providers",
    )
    _add_json(compare, "compare")
    compare.add_argument(
        "--targets",
        metavar="P:M,...",
        help="provider:model,... (default: recorded + one each)",
    )
    compare.add_argument("--prices", help="a price file (cacheviz JSON or LiteLLM's)")
    compare.add_argument("--ttl", choices=TTL_CHOICES, help="TTL for simulators that take one")
    report = commands.add_parser(
        "report",
        parents=[common],
        formatter_class=_formatter,
        help="write a self-contained HTML report (opens offline)",
    )
    report.add_argument(
        "-o", "--output", metavar="FILE", help="the .html to write (default: <input>.html)"
    )
    report.add_argument("--provider", help="the provider whose costs the report shows")
    report.add_argument("--model", help="price every call as this model")
    report.add_argument(
        "--no-redact",
        action="store_true",
        help="keep secrets in the report (never share it)",
    )
    _check_parser(commands, common)
    commands.add_parser(
        "formats", help="list the formats, --thread modes and --breakpoints strategies"
    )
    from cacheviz.cli.scan import add_parser as add_scan

    add_scan(commands)
    _add_proxy_command(commands)
    return parser


def _add_proxy_command(commands: Any) -> None:
    """``cacheviz proxy``: record an agent's calls (docs/recording.md)."""
    proxy = commands.add_parser(
        "proxy",
        formatter_class=_formatter,
        help="a local reverse proxy that records every provider call to a log",
    )
    proxy.add_argument("--upstream", required=True, help="e.g. https://api.anthropic.com")
    proxy.add_argument("--port", type=int, default=8787, help="port to listen on (8787)")
    proxy.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    proxy.add_argument(
        "-o", "--output", metavar="FILE", required=True, help="the request log to append to"
    )
    proxy.add_argument("--thread", metavar="NAME", help="write meta.thread NAME on every line")
    proxy.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds to reach the upstream (10)",
    )
    proxy.add_argument(
        "--read-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds of silence allowed (300)",
    )
    proxy.add_argument(
        "--no-redact", action="store_true", help="keep secrets in bodies (default: redacted)"
    )


def _check_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    check = commands.add_parser(
        "check",
        parents=[common],
        formatter_class=_formatter,
        help="lint against the cache layout rules (exit 1 on findings)",
    )
    _add_json(check, "check")
    check.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 (code scanning)")
    check.add_argument("--junit", metavar="FILE", help="also write JUnit XML")
    check.add_argument(
        "--allow", action="append", default=[], metavar="RULE", help="ignore a rule (repeatable)"
    )


def _run_check(args: argparse.Namespace, analysis: Analysis) -> int:
    """Print the findings, write SARIF / JUnit when asked; 1 when warnings or errors."""
    from cacheviz._version import __version__
    from cacheviz.check import check
    from cacheviz.check._output import write_junit, write_sarif

    result = check(analysis, allow=args.allow)
    result.path = args.path
    if args.sarif:
        write_sarif(result, args.sarif, __version__)
    if args.junit:
        write_junit(result, args.junit)
    if args.json:
        _dump(result.to_dict())
        return result.exit_status
    width = width_of(sys.stdout)
    for finding in result.findings:
        cost = "" if finding.cost_usd is None else f", costs ${finding.cost_usd:,.4f}"
        print(wrap_line(f"{finding.severity}: {finding.rule} (calls {finding.calls}{cost})", width))
        print(wrap_line(f"  {finding.message}", width))
    failing = sum(f.severity != "info" for f in result.findings)
    print(f"{args.path}: {len(result.findings)} finding(s), {failing} warning(s)/error(s)")
    return result.exit_status


def _rules(args: argparse.Namespace) -> dict[str, Any]:
    rules: dict[str, Any] = {}
    for item in args.rule:
        name, sep, value = item.partition("=")
        if not sep or not name:
            msg = f"--rule {item!r}: expected NAME=VALUE"
            raise SimulationError(msg)
        rules[name.strip()] = _value(value.strip())
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


def _fmt(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.4f}"


SUMMARY_COLUMNS = (
    Column("#"),
    Column("thread", "<", shrink=12),
    Column("tokens"),
    Column("prefix", drop=5),
    Column("new", drop=6),
    Column("hit", drop=3),
    Column("rep.in", drop=9),
    Column("rep.read", drop=7),
    Column("rep.write", drop=8),
    Column("billed", drop=2),
    Column("drift / miss", "<"),
)


def call_row(call: dict[str, Any], *, all_drifts: bool = False) -> list[str]:
    """The cells of one call of ``summary``'s table (see :data:`SUMMARY_COLUMNS`)."""
    reported = call["reported"] or {}
    marker = ""
    d = call["drift"]
    if d is not None and (all_drifts or d["material"] is not False):
        cost = "" if d["cost_usd"] is None else f", {_usd(d['cost_usd'])}"
        marker = f"✗ {d['cause']} at {d['part']}/{d['label']} (−{d['tokens_lost']:,} tok{cost})"
    if call["miss"] is not None:
        m = call["miss"]
        marker += (
            f"{'; ' if marker else ''}◌ miss: {m['cause']} (−{m['shortfall_tokens']:,} tok read)"
        )
    if call.get("verdict_agrees") is not None:
        says = "agrees" if call["verdict_agrees"] else "disagrees"
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
        _fmt(reported.get("input_tokens")),
        _fmt(reported.get("cache_read_tokens")),
        _fmt(reported.get("cache_write_tokens")),
        _usd(call["billed_usd"]),
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
            line(f"{call['call']:>4}  {d['cause']} [{_usd(d['cost_usd'])}]: {d['detail']}")
    if folded:
        line(
            f"+{len(folded)} costless drift(s) folded (below the cacheable minimum, or nothing "
            "cached to lose; --all-drifts lists them)"
        )
    if misses:
        line("misses (the provider read less than the common prefix offered):")
        for call in misses:
            m = call["miss"]
            line(f"{call['call']:>4}  {m['cause']} [{_usd(m['cost_usd'])}]: {m['detail']}")
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
    if doc.get("billed_usd") is not None:
        text += f"; billed {_usd(doc['billed_usd'])} (reported usage at dated prices)"
    if doc.get("unpriced_models"):
        text += f"; no price for {', '.join(doc['unpriced_models'])}"
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
    from cacheviz.money._metrics import percent  # metrics imports polars: not at start-up

    hit = doc.get("hit_ratio") or {}
    parts = []
    if doc.get("waste_usd") is not None:
        base = "billed" if doc.get("billed_usd") is not None else "simulated"
        spent = _usd(doc.get(f"{base}_usd"))
        parts.append(
            f"waste {_usd(doc['waste_usd'])} = {base} {spent} − ideal {_usd(doc['ideal_usd'])}"
        )
    if hit.get("calls"):
        parts.append(
            f"hit ratio {percent(hit.get('tokens'))} of the reported input, "
            f"{percent(hit.get('requests'))} of calls"
        )
    else:
        parts.append("hit ratio n/a (no cache fields reported)")
    verdicts = doc.get("provider_verdicts") or {}
    if verdicts.get("agree") or verdicts.get("disagree"):
        parts.append(
            f"provider verdicts: cacheviz agrees on {verdicts['agree']}, "
            f"disagrees on {verdicts['disagree']}"
        )
    return "".join(f"; {part}" for part in parts)


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


def _version() -> str:
    from cacheviz._version import __version__

    return __version__


def session_file(path: Path) -> tuple[Path, str | None]:
    """The transcript a folder stands for, and a note saying which (None: unchanged).

    See :func:`cacheviz.formats._folders.session_file` (``load`` reads folders alike).
    """
    from cacheviz.formats import _folders

    resolved = _folders.session_file(path)
    return resolved.path, resolved.note


def _input(args: argparse.Namespace) -> Path:
    path, note = session_file(Path(args.path))
    if note:
        print(f"cacheviz: {note}", file=sys.stderr)
    return path


def _load(args: argparse.Namespace) -> Analysis:
    from cacheviz.formats import load
    from cacheviz.formats._lines import PROGRESS

    args.path = str(_input(args))
    token = None
    if sys.stderr.isatty() and Path(args.path).is_file():
        token = PROGRESS.set(_Progress(f"reading {Path(args.path).name}"))
    try:
        session = load(args.path, args.format, errors=args.errors)
    finally:
        if token is not None:
            PROGRESS.reset(token)
    return session.analyze(thread=args.thread, encoding=args.encoding)


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
    doc: dict[str, Any], out: TextIO, billed: list[float | None] | None = None
) -> None:
    """The simulated calls, each with what the provider billed for it beside its cost."""
    width = width_of(out)
    out.write(f"{doc['provider']} ({doc['model'] or 'recorded models'})\n")
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
                _fmt(call["output_tokens"]),
                _usd(call["cost_usd"]),
                _usd(billed[call["call"]]),
                _fmt(reported.get("cache_read_tokens")),
                _fmt(reported.get("cache_write_tokens")),
                call["verdict"],
            ]
        )
    for text in render(SIMULATION_COLUMNS, rows, width):
        out.write(text + "\n")
    total = f"total: {_usd(doc['total_cost_usd'])}; ideal (new tokens only): "
    total += f"{_usd(doc['ideal_usd'])}"
    if doc["score"] is not None:
        total += f"; matches the reported hits on {doc['score']:.0%} of calls"
    if doc["token_scale"] is not None:
        total += f"; provider tokens / cacheviz tokens = {doc['token_scale']:.3f}"
    out.write(wrap_line(total, width) + "\n")
    if doc["price_source"]:
        out.write(wrap_line(f"prices: {doc['price_source']}", width) + "\n")


def _print_compare(frame: Any, out: TextIO) -> None:
    out.write(
        f"{'target':<36} {'read':>10} {'write':>9} {'uncached':>10} {'cost':>11} {'ideal':>11}\n"
    )
    for row in frame.iter_rows(named=True):
        out.write(
            f"{row['target'][:36]:<36} {row['cache_read_tokens']:>10,} "
            f"{row['cache_write_tokens']:>9,} {row['uncached_tokens']:>10,} "
            f"{_usd(row['cost_usd']):>11} {_usd(row['ideal_usd']):>11}\n"
        )


def _refuse_overwriting_input(args: argparse.Namespace) -> None:
    """Refuse an output path that resolves to the input (or a file read with it)."""
    for output in (getattr(args, name, None) for name in ("output", "csv", "parquet")):
        if output is not None and args.path != "-":
            _refuse(args, output)


def _refuse(args: argparse.Namespace, output: str) -> None:
    target = Path(output).resolve()
    source = Path(args.path).resolve()
    # a folder's files, and a Claude Code session's sub-agent logs, are inputs too
    folder = source if source.is_dir() else source.parent / source.stem / "subagents"
    same = target == source or folder in target.parents
    if not same and target.exists():
        try:
            same = target.samefile(source)  # a hard link
        except OSError:
            same = False
    if same:
        msg = (
            f"{output}: the output would overwrite the transcript being read ({args.path}); "
            "choose another output path"
        )
        raise CacheVizError(msg)


def _run(args: argparse.Namespace) -> int:
    _refuse_overwriting_input(args)
    if args.command == "summary" and args.follow:
        from cacheviz.cli.follow import follow

        follow(
            args.path,
            sys.stdout,
            columns=SUMMARY_COLUMNS,
            row_of=lambda call: call_row(call, all_drifts=args.all_drifts),
            fmt=args.format,
            thread=args.thread,
            encoding=args.encoding,
        )
        return 0
    analysis = _load(args)
    if args.command == "check":
        return _run_check(args, analysis)
    if args.command == "summary":
        _export(analysis, args)
        doc = analysis.summary()
        if args.json:
            _dump(doc)
        else:
            _print_table(doc, sys.stdout, all_drifts=args.all_drifts)
    elif args.command == "simulate":
        provider = args.provider or _recorded_provider(analysis)
        result = analysis.simulate(provider, args.model, prices=args.prices, **_rules(args))
        if args.json:
            _dump(result.to_dict())
        else:
            _print_simulation(result.to_dict(), sys.stdout, analysis.calls["billed_usd"].to_list())
    elif args.command == "report":
        from cacheviz.redact import redaction
        from cacheviz.ui.report import write_report

        source = Path(args.path)
        default = source.with_suffix(".html") if source.is_file() else Path(f"{source}.html")
        output = args.output or default
        try:
            with redaction(enabled=not args.no_redact):
                written = write_report(analysis, output, provider=args.provider, model=args.model)
        except OSError as exc:
            msg = (
                f"{output}: can't write the report ({exc.strerror or exc}); "
                "check that the folder exists and is writable"
            )
            raise CacheVizError(msg) from None
        size = written.stat().st_size
        print(f"{written}  {size / 1e6:.1f} MB, {analysis.calls.height} calls, opens offline")
    else:
        if args.targets:
            targets = [t.strip() for t in args.targets.split(",") if t.strip()]
        else:
            from cacheviz.ui.state import comparison_targets

            targets = comparison_targets(analysis)
        rules = {"ttl": args.ttl} if args.ttl else {}
        frame = analysis.compare(targets, prices=args.prices, **rules)
        if args.json:
            _dump({"targets": frame.to_dicts()})
        else:
            _print_compare(frame, sys.stdout)
    return 0


def _export(analysis: Analysis, args: argparse.Namespace) -> None:
    """``summary --csv`` / ``--parquet``: the calls frame (docs/format.md), as is."""
    for target, kind in ((args.csv, "csv"), (args.parquet, "parquet")):
        if target is None:
            continue
        try:
            if kind == "csv":
                analysis.calls.write_csv(target)
            else:
                analysis.calls.write_parquet(target)
        except OSError as exc:
            msg = (
                f"{target}: can't write the {kind} file ({exc.strerror or exc}); "
                "check that the folder exists and is writable"
            )
            raise CacheVizError(msg) from None
        print(f"cacheviz: wrote {analysis.calls.height} calls to {target}", file=sys.stderr)


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


def _dump(doc: dict[str, Any]) -> None:
    import json

    # one write: the stream's control-character filter runs once, not per JSON token
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=1, default=str) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "proxy":
        from cacheviz.recording._proxy import main as proxy

        return proxy(
            args.upstream,
            args.output,
            args.port,
            args.host,
            thread=args.thread,
            redact=not args.no_redact,
            connect_timeout=args.connect_timeout,
            read_timeout=args.read_timeout,
        )
    if args.command == "formats":
        _print_formats(sys.stdout)
        return 0
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Visible(stdout), _Visible(stderr, keep_cr=True)
    if args.command == "scan":
        from cacheviz.cli.scan import run as run_scan

        try:
            return run_scan(args)
        finally:
            sys.stdout, sys.stderr = stdout, stderr
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CacheVizWarning)
            status = _run(args)
        for warning in caught:
            if issubclass(warning.category, CacheVizWarning):
                print(f"cacheviz: warning: {warning.message}", file=sys.stderr)
    except BrokenPipeError:
        raise  # the reader went away (`| head`): run() exits quietly
    except CacheVizError as exc:
        return _error(args, str(exc))
    except OSError as exc:  # name the file the error is about, not always the input
        where = exc.filename if exc.filename is not None else args.path
        return _error(args, f"{where}: {exc.strerror or exc}")
    except ValueError as exc:
        return _error(args, f"{args.path}: {exc}")
    finally:
        sys.stdout, sys.stderr = stdout, stderr
    return status


def _error(args: argparse.Namespace, message: str) -> int:
    """Print the one-line error; ``check`` still writes its SARIF / JUnit files. Exit 2."""
    print(f"cacheviz: error: {message}", file=sys.stderr)
    if args.command == "check" and (args.sarif or args.junit):
        import json

        from cacheviz._version import __version__
        from cacheviz.check._output import failed_junit, failed_sarif

        try:
            if args.sarif:
                doc = failed_sarif(message, args.path, __version__)
                Path(args.sarif).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
            if args.junit:
                Path(args.junit).write_text(failed_junit(message, args.path), encoding="utf-8")
        except OSError as exc:
            print(f"cacheviz: error: can't write the report file: {exc}", file=sys.stderr)
    return 2


def _print_formats(out: TextIO) -> None:
    """``cacheviz formats``: the choices of --format, --thread and --breakpoints."""
    from cacheviz import providers
    from cacheviz.formats import READERS

    out.write("formats (--format NAME; detected from the file when not given):\n")
    width = max(14, *map(len, READERS))
    for name, module in READERS.items():
        out.write(f"  {name:<{width}} {module.DESCRIPTION}\n")
    out.write("\nthread modes (--thread MODE):\n")
    for name, text in THREAD_HELP.items():
        out.write(f"  {name:<14} {text}\n")
    out.write("\nproviders (simulate --provider, compare --targets provider:model):\n")
    out.write(f"  {', '.join(providers.ids())}\n")
    out.write("\nbreakpoint strategies (simulate --breakpoints HOW, Anthropic):\n")
    for name, text in BREAKPOINT_STRATEGIES.items():
        out.write(f"  {name:<14} {text}\n")


class _Visible:
    """A text stream that shows control and bidi characters as escapes (see ``visible``)."""

    def __init__(self, stream: TextIO, *, keep_cr: bool = False) -> None:
        self.stream = stream
        self.keep_cr = keep_cr

    def write(self, text: str) -> int:
        return self.stream.write(visible(text, keep_cr=self.keep_cr))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def run() -> None:
    """Console-script entry point."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `cacheviz summary x | head`: exit quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = 0
    sys.exit(status)


if __name__ == "__main__":
    run()
