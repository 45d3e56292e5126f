"""The ``cacheviz`` command line.

Exit status: 0 on success, 2 when the input or the arguments are wrong (one line on
stderr saying where and what to do), 1 on an unexpected internal error or when
``cacheviz check`` finds a warning or an error.
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

from cacheviz import providers
from cacheviz._visible import visible
from cacheviz.analysis import Analysis
from cacheviz.errors import CacheVizError, CacheVizWarning, SimulationError
from cacheviz.formats import READERS, _folders, load
from cacheviz.formats._lines import PROGRESS
from cacheviz.thread import THREAD_MODES


def _input_options() -> argparse.ArgumentParser:
    """Options every command that reads a transcript shares."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("path", help="transcript file or folder (format auto-detected)")
    common.add_argument("--json", action="store_true", help="print the JSON document")
    common.add_argument("--format", choices=sorted(READERS), help="force the transcript format")
    common.add_argument(
        "--errors",
        choices=("raise", "skip"),
        default="raise",
        help="stop at the first bad line (default) or skip bad lines and report how many",
    )
    common.add_argument("--thread", choices=THREAD_MODES, default="auto", help="how to group calls")
    common.add_argument("--encoding", help="force a tiktoken encoding (e.g. cl100k_base)")
    return common


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cacheviz", description="Inspect the prompt caching of an LLM agent session."
    )
    parser.add_argument("--version", action="version", version=f"cacheviz {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    common = _input_options()
    summary = commands.add_parser(
        "summary",
        parents=[common],
        help="per-call tokens, common prefix, new tokens, drifts, misses and billed cost",
    )
    summary.add_argument(
        "--all-drifts", action="store_true", help="also list the costless (folded) drifts"
    )
    simulate = commands.add_parser(
        "simulate", parents=[common], help="replay the session under a provider's caching rules"
    )
    simulate.add_argument(
        "--provider",
        help=f"{', '.join(providers.ids())} (default: the recorded provider)",
    )
    simulate.add_argument("--model", help="price and simulate every call as this model")
    simulate.add_argument("--ttl", choices=("5m", "1h"), help="override the breakpoints' TTL")
    simulate.add_argument(
        "--breakpoints",
        choices=("recorded", "auto", "kilocode", "none"),
        help="Anthropic: the request's own breakpoints, or a what-if strategy",
    )
    simulate.add_argument("--prices", help="a price file (cacheviz JSON or LiteLLM's)")
    simulate.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any other simulator parameter (repeatable), e.g. retention=24h",
    )
    compare = commands.add_parser(
        "compare", parents=[common], help="the session's cost under several providers"
    )
    compare.add_argument(
        "--targets",
        help="comma-separated provider:model, e.g. anthropic:claude-sonnet-4-5,openai:gpt-5 "
        "(default: the recorded models and one comparable model per major provider)",
    )
    compare.add_argument("--prices", help="a price file (cacheviz JSON or LiteLLM's)")
    compare.add_argument("--ttl", choices=("5m", "1h"), help="TTL for simulators that take one")
    report = commands.add_parser(
        "report", parents=[common], help="write a self-contained HTML report (opens offline)"
    )
    report.add_argument("-o", "--output", help="the .html file to write (default: <input>.html)")
    report.add_argument("--provider", help="the provider whose costs the report shows")
    report.add_argument("--model", help="price every call as this model")
    report.add_argument(
        "--no-redact",
        action="store_true",
        help="keep secrets in the report (local debugging only; never share the file)",
    )
    _check_parser(commands, common)
    commands.add_parser("formats", help="list the transcript formats cacheviz reads")
    from cacheviz.cli.scan import add_parser as add_scan

    add_scan(commands)
    _add_proxy_command(commands)
    return parser


def _add_proxy_command(commands: Any) -> None:
    """``cacheviz proxy``: record an agent's calls (docs/recording.md)."""
    proxy = commands.add_parser(
        "proxy", help="a local reverse proxy that records every provider call to a log"
    )
    proxy.add_argument("--upstream", required=True, help="e.g. https://api.anthropic.com")
    proxy.add_argument("--port", type=int, default=8787, help="port to listen on (8787)")
    proxy.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    proxy.add_argument("-o", "--output", required=True, help="the request log to append to")
    proxy.add_argument("--thread", help="a thread hint written as meta.thread on every line")
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
        help="seconds of silence allowed from the upstream or a caller sending (300)",
    )
    proxy.add_argument(
        "--no-redact", action="store_true", help="keep secrets in bodies (default: redacted)"
    )


def _check_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    check = commands.add_parser(
        "check",
        parents=[common],
        help="lint the session against the cache layout rules (exit 1 on findings)",
    )
    check.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 (code scanning)")
    check.add_argument("--junit", metavar="FILE", help="also write JUnit XML")
    check.add_argument(
        "--allow", action="append", default=[], metavar="RULE", help="ignore a rule (repeatable)"
    )


def _run_check(args: argparse.Namespace, analysis: Analysis) -> int:
    """Print the findings, write SARIF / JUnit when asked; 1 when warnings or errors."""
    from cacheviz import __version__
    from cacheviz.check import check
    from cacheviz.check.output import write_junit, write_sarif

    result = check(analysis, allow=args.allow)
    result.path = args.path
    if args.sarif:
        write_sarif(result, args.sarif, __version__)
    if args.junit:
        write_junit(result, args.junit)
    if args.json:
        _dump(result.to_dict())
        return result.exit_status
    for finding in result.findings:
        cost = "" if finding.cost_usd is None else f", costs ${finding.cost_usd:,.4f}"
        print(f"{finding.severity}: {finding.rule} (calls {finding.calls}{cost})")
        print(f"  {finding.message}")
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


def _print_table(doc: dict[str, Any], out: TextIO, *, all_drifts: bool = False) -> None:
    calls = doc["calls"]
    width = max([6, *(len(c["thread"]) for c in calls)])
    header = (
        f"{'#':>4}  {'thread':<{width}} {'tokens':>9} {'prefix':>9} {'new':>8}  "
        f"{'rep.in':>8} {'rep.read':>8} {'rep.write':>9} {'billed':>9}  drift / miss"
    )
    out.write(f"{doc['path']}  ({doc['format']}, {len(calls)} calls)\n{header}\n")
    totals = {"input": 0, "prefix": 0, "new": 0}
    shown, folded, misses = [], [], []
    for call in calls:
        totals["input"] += call["input_tokens"]
        totals["prefix"] += call["prefix_tokens"]
        totals["new"] += call["new_tokens"]
        reported = call["reported"] or {}
        marker = ""
        d = call["drift"]
        if d is not None and (all_drifts or d["material"] is not False):
            shown.append(call)
            cost = "" if d["cost_usd"] is None else f", {_usd(d['cost_usd'])}"
            marker = f"✗ {d['cause']} at {d['part']}/{d['label']} (−{d['tokens_lost']:,} tok{cost})"
        elif d is not None:
            folded.append(call)
        if call["miss"] is not None:
            misses.append(call)
            m = call["miss"]
            marker += f"{'; ' if marker else ''}◌ miss: {m['cause']} (−{m['tokens']:,} tok read)"
        out.write(
            f"{call['index']:>4}  {call['thread']:<{width}} {call['input_tokens']:>9,} "
            f"{call['prefix_tokens']:>9,} {call['new_tokens']:>8,}  "
            f"{_fmt(reported.get('input_tokens')):>8} {_fmt(reported.get('cache_read_tokens')):>8} "
            f"{_fmt(reported.get('cache_write_tokens')):>9} {_usd(call['billed_usd']):>9}  "
            f"{marker}\n"
        )
    if shown:
        out.write("drifts (what each break cost: as sent minus had the prefix been kept):\n")
        for call in shown:
            d = call["drift"]
            out.write(f"{call['index']:>4}  {d['cause']} [{_usd(d['cost_usd'])}]: {d['detail']}\n")
    if folded:
        out.write(
            f"+{len(folded)} costless drift(s) folded (below the cacheable minimum, or nothing "
            "cached to lose; --all-drifts lists them)\n"
        )
    if misses:
        out.write("misses (the provider read less than the common prefix offered):\n")
        for call in misses:
            m = call["miss"]
            out.write(f"{call['index']:>4}  {m['cause']} [{_usd(m['cost_usd'])}]: {m['detail']}\n")
    share = totals["prefix"] / totals["input"] if totals["input"] else 0.0
    out.write(
        f"total: {totals['input']:,} tokens, {totals['prefix']:,} in a common prefix "
        f"({share:.1%}), {totals['new']:,} new; {len(shown)} drift(s)"
    )
    if folded:
        out.write(f" (+{len(folded)} costless)")
    if misses:
        out.write(f", {len(misses)} miss(es)")
    if doc.get("billed_usd") is not None:
        out.write(f"; billed {_usd(doc['billed_usd'])} (reported usage at dated prices)")
    if doc.get("unpriced_models"):
        out.write(f"; no price for {', '.join(doc['unpriced_models'])}")
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


def _version() -> str:
    from cacheviz import __version__

    return __version__


def session_file(path: Path) -> tuple[Path, str | None]:
    """The transcript a folder stands for, and a note saying which (None: unchanged).

    See :func:`cacheviz.formats._folders.session_file` (``load`` reads folders alike).
    """
    resolved = _folders.session_file(path)
    return resolved.path, resolved.note


def _input(args: argparse.Namespace) -> Path:
    path, note = session_file(Path(args.path))
    if note:
        print(f"cacheviz: {note}", file=sys.stderr)
    return path


def _load(args: argparse.Namespace) -> Analysis:
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


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.4f}"


def _print_simulation(doc: dict[str, Any], out: TextIO) -> None:
    out.write(f"{doc['provider']} ({doc['model'] or 'recorded models'})\n")
    out.write(
        f"{'#':>4}  {'model':<26} {'input':>9} {'read':>9} {'write':>8} {'uncached':>9} "
        f"{'output':>7} {'cost':>10}  {'rep.read':>8} {'rep.write':>9}  verdict\n"
    )
    for call in doc["calls"]:
        reported = call["reported"] or {}
        out.write(
            f"{call['index']:>4}  {call['model'][:26]:<26} {call['input_tokens']:>9,} "
            f"{call['cache_read_tokens']:>9,} {call['cache_write_tokens']:>8,} "
            f"{call['uncached_tokens']:>9,} {_fmt(call['output_tokens']):>7} "
            f"{_money(call['cost_usd']):>10}  {_fmt(reported.get('cache_read_tokens')):>8} "
            f"{_fmt(reported.get('cache_write_tokens')):>9}  {call['verdict']}\n"
        )
    out.write(f"total: {_money(doc['total_cost_usd'])}; ideal (new tokens only): ")
    out.write(f"{_money(doc['ideal_cost_usd'])}")
    if doc["score"] is not None:
        out.write(f"; matches the reported hits on {doc['score']:.0%} of calls")
    if doc["token_scale"] is not None:
        out.write(f"; provider tokens / cacheviz tokens = {doc['token_scale']:.3f}")
    out.write("\n")
    if doc["price_source"]:
        out.write(f"prices: {doc['price_source']}\n")


def _print_compare(frame: Any, out: TextIO) -> None:
    out.write(
        f"{'target':<36} {'read':>10} {'write':>9} {'uncached':>10} {'cost':>11} {'ideal':>11}\n"
    )
    for row in frame.iter_rows(named=True):
        out.write(
            f"{row['target'][:36]:<36} {row['cache_read_tokens']:>10,} "
            f"{row['cache_write_tokens']:>9,} {row['uncached_tokens']:>10,} "
            f"{_money(row['cost_usd']):>11} {_money(row['ideal_cost_usd']):>11}\n"
        )


def _refuse_overwriting_input(args: argparse.Namespace) -> None:
    """Refuse an output path that resolves to the input (or a file read with it)."""
    output = getattr(args, "output", None)
    if output is None or args.path == "-":
        return
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
            "choose another -o path"
        )
        raise CacheVizError(msg)


def _run(args: argparse.Namespace) -> int:
    _refuse_overwriting_input(args)
    analysis = _load(args)
    if args.command == "check":
        return _run_check(args, analysis)
    if args.command == "summary":
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
            _print_simulation(result.to_dict(), sys.stdout)
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


def _recorded_provider(analysis: Analysis) -> str:
    """The provider the session was recorded with, when one simulator covers it."""
    recorded = analysis.calls["provider"].unique().to_list()
    if len(recorded) == 1 and providers.known(recorded[0]) is not None:
        return str(providers.known(recorded[0]))
    msg = (
        f"--provider: the session was recorded with {', '.join(sorted(map(str, recorded)))}; "
        f"choose one of {', '.join(providers.ids())}"
    )
    raise SimulationError(msg)


def _dump(doc: dict[str, Any]) -> None:
    json.dump(doc, sys.stdout, ensure_ascii=False, indent=1, default=str)
    sys.stdout.write("\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "proxy":
        from cacheviz.recording.proxy import main as proxy

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
        width = max(map(len, READERS)) + 1
        for name, module in READERS.items():
            print(f"{name:<{width}} {module.DESCRIPTION}")
        return 0
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Visible(stdout), _Visible(stderr, keep_cr=True)
    if args.command == "scan":
        from cacheviz.cli.scan import run as run_scan

        try:
            return run_scan(args)
        finally:
            sys.stdout, sys.stderr = stdout, stderr
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
        from cacheviz import __version__
        from cacheviz.check.output import failed_junit, failed_sarif

        try:
            if args.sarif:
                doc = failed_sarif(message, args.path, __version__)
                Path(args.sarif).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
            if args.junit:
                Path(args.junit).write_text(failed_junit(message, args.path), encoding="utf-8")
        except OSError as exc:
            print(f"cacheviz: error: can't write the report file: {exc}", file=sys.stderr)
    return 2


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
