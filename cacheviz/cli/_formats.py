"""``cacheviz formats``: the choices of ``--format``, ``--thread`` and ``--breakpoints``."""

from __future__ import annotations

import sys

from cacheviz.cli._shared import BREAKPOINT_STRATEGIES, THREAD_HELP

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO


def add_parser(commands: Any) -> None:
    """Add the ``formats`` command to the ``cacheviz`` parser."""
    commands.add_parser(
        "formats", help="list the formats, --thread modes and --breakpoints strategies"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cacheviz formats``; return the exit status."""
    _print_formats(sys.stdout)
    return 0


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
