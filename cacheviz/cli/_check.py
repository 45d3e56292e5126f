"""``cacheviz check``: lint against the cache layout rules (exit 1 on findings)."""

from __future__ import annotations

import sys
from pathlib import Path

from cacheviz._util.visible import one_line
from cacheviz.cli._shared import dump, formatter, input_options, load_analysis
from cacheviz.cli._table import short_paths, width_of, wrap_line
from cacheviz.errors import CacheVizError

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def add_parser(commands: Any) -> None:
    """Add the ``check`` command to the ``cacheviz`` parser."""
    check = commands.add_parser(
        "check",
        parents=[input_options()],
        formatter_class=formatter,
        help="lint against the cache layout rules (exit 1 on findings)",
    )
    check.add_argument("--json", action="store_true", help="print the findings as JSON")
    check.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 (code scanning)")
    check.add_argument("--junit", metavar="FILE", help="also write JUnit XML")
    check.add_argument(
        "--allow", action="append", default=[], metavar="RULE", help="ignore a rule (repeatable)"
    )


def run(args: argparse.Namespace) -> int:
    """Print the findings, write SARIF / JUnit when asked; 1 when warnings or errors."""
    from cacheviz._version import __version__
    from cacheviz.check import check
    from cacheviz.check._output import write_junit, write_sarif

    analysis = load_analysis(args)
    result = check(analysis, allow=args.allow)
    result.path = args.path
    for name, write in (
        ("sarif", lambda path: write_sarif(result, path, __version__, option="--sarif")),
        ("junit", lambda path: write_junit(result, path, option="--junit")),
    ):
        if getattr(args, name):
            try:
                write(getattr(args, name))
            except CacheVizError:
                setattr(args, name, None)  # not written again as the failure's report
                raise
    if args.json:
        dump(result.to_dict())
        return result.exit_status
    width = width_of(sys.stdout)
    for finding in result.findings:
        cost = "" if finding.cost_usd is None else f", costs ${finding.cost_usd:,.4f}"
        print(wrap_line(f"{finding.severity}: {finding.rule} (calls {finding.calls}{cost})", width))
        print(wrap_line(f"  {finding.message}", width))
    failing = sum(f.severity != "info" for f in result.findings)
    where = short_paths(str(args.path))
    total = f"{where}: {len(result.findings)} finding(s), {failing} warning(s)/error(s)"
    print(wrap_line(total, width))
    return result.exit_status


def write_failure(args: argparse.Namespace, message: str) -> None:
    """When the check could not run: still write the SARIF / JUnit files asked for.

    They carry ``message`` as the failure, so code scanning and CI show why; a file that
    would overwrite the input is not written (``message`` says so already).
    """
    if not (args.sarif or args.junit):
        return
    import json

    from cacheviz import _writing
    from cacheviz._version import __version__
    from cacheviz.check._output import failed_junit, failed_sarif
    from cacheviz.cli._shared import inputs_of

    inputs = inputs_of(args)
    files = []
    if args.sarif:
        doc = failed_sarif(message, args.path, __version__)
        files.append((args.sarif, "--sarif", "SARIF file", json.dumps(doc, indent=1) + "\n"))
    if args.junit:
        files.append((args.junit, "--junit", "JUnit file", failed_junit(message, args.path)))
    for target, option, what, text in files:
        if inputs is not None and inputs.overwritten(Path(target)) is not None:
            continue
        try:
            _writing.write(target, text, what=what, option=option)
        except CacheVizError as exc:
            print(f"cacheviz: error: {one_line(str(exc))}", file=sys.stderr)
