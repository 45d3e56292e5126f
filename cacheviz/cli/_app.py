"""The ``cacheviz`` command line: the parser and the table of commands.

Each command is a module of this package (``summary``, ``simulate``, ``compare``,
``report``, ``check``, ``formats``, ``scan``, ``proxy``, ``replay``) with ``add_parser(commands)``,
its argparse setup, and ``run(args)``, its exit status; what they share is in
:mod:`cacheviz.cli._shared`.

Exit status: 0 on success, 2 when the input or the arguments are wrong (one line on
stderr saying where and what to do), 1 on an unexpected internal error or when
``cacheviz check`` finds a warning or an error.
"""

from __future__ import annotations

import argparse
import os
import sys

from cacheviz._util.visible import one_line, visible
from cacheviz.cli import _check as check
from cacheviz.cli import _compare as compare
from cacheviz.cli import _formats as formats
from cacheviz.cli import _proxy as proxy
from cacheviz.cli import _replay as replay
from cacheviz.cli import _report as report
from cacheviz.cli import _scan as scan
from cacheviz.cli import _simulate as simulate
from cacheviz.cli import _summary as summary
from cacheviz.cli._shared import (
    BREAKPOINT_STRATEGIES,
    FORMATS,
    THREAD_HELP,
    THREAD_MODES,
    TTL_CHOICES,
    formatter,
    refuse_overwriting_input,
)
from cacheviz.cli._summary import SUMMARY_COLUMNS, call_row
from cacheviz.errors import CacheVizError, CacheVizWarning

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any, TextIO

COMMANDS: dict[str, ModuleType] = {
    "summary": summary,
    "simulate": simulate,
    "compare": compare,
    "report": report,
    "check": check,
    "formats": formats,
    "scan": scan,
    "proxy": proxy,
    "replay": replay,
}
"""Each command's module, in the order ``cacheviz --help`` lists them."""
PLAIN = frozenset({"formats", "proxy"})
"""Commands whose output is written as is (no escaping of control characters)."""
OWN_ERRORS = frozenset({"scan"})
"""Commands that print their own errors and warnings; the others read one transcript,
and :func:`main` prints their warnings and their error (one line, exit 2)."""


def _version() -> str:
    from cacheviz._version import __version__

    return __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cacheviz",
        description="Inspect the prompt caching of an LLM agent session.",
        epilog="`cacheviz formats` lists the formats, --thread modes and --breakpoints strategies.",
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"cacheviz {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    command = COMMANDS[args.command]
    if args.command in PLAIN:
        return command.run(args)
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Visible(stdout), _Visible(stderr, keep_cr=True)
    try:
        if args.command in OWN_ERRORS:
            return command.run(args)
        return _run_on_transcript(command, args)
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _run_on_transcript(command: ModuleType, args: argparse.Namespace) -> int:
    """Run a command that reads a transcript: warnings, then errors as one line (exit 2)."""
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CacheVizWarning)
            refuse_overwriting_input(args)
            status = command.run(args)
        from cacheviz.cli._table import stderr_line

        for warning in caught:
            if issubclass(warning.category, CacheVizWarning):
                stderr_line(f"cacheviz: warning: {one_line(str(warning.message))}")
    except BrokenPipeError:
        raise  # the reader went away (`| head`): run() exits quietly
    except CacheVizError as exc:
        return _error(args, str(exc))
    except OSError as exc:  # name the file the error is about, not always the input
        where = exc.filename if exc.filename is not None else args.path
        return _error(args, f"{where}: {exc.strerror or exc}")
    except ValueError as exc:
        return _error(args, f"{args.path}: {exc}")
    return status


def _error(args: argparse.Namespace, message: str) -> int:
    """Print the one-line error; ``check`` still writes its SARIF / JUnit files. Exit 2."""
    print(f"cacheviz: error: {one_line(message)}", file=sys.stderr)
    if args.command == "check":
        check.write_failure(args, message)
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


# the names the parser offers (tests/cli/test_startup.py checks each against its
# registry) and summary's rows, read from here by the tests
__all__ = [
    "BREAKPOINT_STRATEGIES",
    "COMMANDS",
    "FORMATS",
    "SUMMARY_COLUMNS",
    "THREAD_HELP",
    "THREAD_MODES",
    "TTL_CHOICES",
    "call_row",
    "main",
    "run",
]


if __name__ == "__main__":
    run()
