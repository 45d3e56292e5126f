"""``cacheviz report``: write a self-contained HTML report (:mod:`cacheviz.ui.report`)."""

from __future__ import annotations

import sys

from cacheviz.cli._shared import default_output, formatter, input_options, inputs_of, load_analysis

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def add_parser(commands: Any) -> None:
    """Add the ``report`` command to the ``cacheviz`` parser."""
    report = commands.add_parser(
        "report",
        parents=[input_options()],
        formatter_class=formatter,
        help="write a self-contained HTML report (opens offline)",
    )
    report.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="the .html to write (default: ./<input name>.html)",
    )
    report.add_argument("--provider", help="the provider whose costs the report shows")
    report.add_argument("--model", help="price every call as this model")
    report.add_argument(
        "--no-redact",
        action="store_true",
        help="keep secrets in the report (never share it)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cacheviz report``; return the exit status."""
    from cacheviz.redact import redaction
    from cacheviz.ui.report import write_report

    inputs = inputs_of(args)  # the path as given: a folder's files are inputs too
    analysis = load_analysis(args)
    output = args.output or default_output(args, ".html")
    with redaction(enabled=not args.no_redact):
        written = write_report(
            analysis,
            output,
            provider=args.provider,
            model=args.model,
            option="-o" if args.output else None,
            inputs=inputs if args.output else None,  # the default never exists yet
        )
    size = written.stat().st_size
    if not args.output:
        where = f"{written} in the current folder (-o to choose another path)"
        print(f"cacheviz: report written to {where}", file=sys.stderr)
    print(f"{written}  {size / 1e6:.1f} MB, {analysis.calls.height} calls, opens offline")
    return 0
