"""What the ``cacheviz`` commands share: the input options, loading, output helpers.

Each command is a module of this package with ``add_parser(commands)`` (its argparse
setup) and ``run(args)`` (its exit status); :mod:`cacheviz.cli._app` assembles them.
Parsing the arguments imports nothing heavy: readers, polars and the analysis are
imported when a command runs.
"""

from __future__ import annotations

import argparse
import sys
from functools import cache
from pathlib import Path

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    from typing import Any

    from cacheviz._writing import Inputs
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


def formatter(prog: str) -> argparse.HelpFormatter:
    """Help with the option and what it does on one line."""
    return argparse.HelpFormatter(prog, max_help_position=30)


@cache
def input_options() -> argparse.ArgumentParser:
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


def number(value: int | None) -> str:
    """A count with thousands separators, ``-`` when unknown."""
    return "-" if value is None else f"{value:,}"


def usd(value: float | None) -> str:
    """Dollars to four decimals, ``-`` when unknown."""
    return "-" if value is None else f"${value:,.4f}"


_DUMP_BATCH = 1 << 20
"""Characters of JSON joined per write by :func:`dump`."""


def dump(doc: dict[str, Any]) -> None:
    """Print ``doc`` as indented JSON (``--json``).

    The text of ``json.dumps(doc, ensure_ascii=False, indent=1, default=str)``, written in
    pieces of about :data:`_DUMP_BATCH` characters as it is encoded: ``json.dumps`` with
    an indent keeps every token of the document in a list and joins them into one string,
    which the stream then encodes whole (a few times the text at once, the peak memory of
    ``summary --json`` on a big session). Batched, the stream's control-character filter
    still runs on a few big writes, not per JSON token.
    """
    import json

    encoder = json.JSONEncoder(ensure_ascii=False, indent=1, default=str)
    write = sys.stdout.write
    batch: list[str] = []
    size = 0
    for piece in encoder.iterencode(doc):
        batch.append(piece)
        size += len(piece)
        if size >= _DUMP_BATCH:
            write("".join(batch))
            batch.clear()
            size = 0
    batch.append("\n")
    write("".join(batch))


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


def session_file(path: Path) -> tuple[Path, str | None]:
    """The transcript a folder stands for, and a note saying which (None: unchanged).

    See :func:`cacheviz.formats._folders.session_file` (``load`` reads folders alike).
    """
    from cacheviz.formats import _folders

    resolved = _folders.session_file(path)
    return resolved.path, resolved.note


def input_path(args: argparse.Namespace) -> Path:
    """The transcript file ``args.path`` names (a folder: its session file, said on stderr)."""
    path, note = session_file(Path(args.path))
    if note:
        from cacheviz.cli._table import stderr_line

        stderr_line(f"cacheviz: {note}")
    return path


def load_analysis(args: argparse.Namespace) -> Analysis:
    """The analysis of the transcript ``args.path`` names (a folder: its session file)."""
    from cacheviz.formats import load
    from cacheviz.formats._lines import PROGRESS

    args.path = str(input_path(args))
    token = None
    if sys.stderr.isatty() and Path(args.path).is_file():
        token = PROGRESS.set(_Progress(f"reading {Path(args.path).name}"))
    try:
        session = load(args.path, args.format, errors=args.errors)
    finally:
        if token is not None:
            PROGRESS.reset(token)
    return session.analyze(thread=args.thread, encoding=args.encoding)


OUTPUTS = {
    "output": "-o",
    "csv": "--csv",
    "parquet": "--parquet",
    "sarif": "--sarif",
    "junit": "--junit",
}
"""The output options of the commands that read one transcript, by ``args`` name."""


def inputs_of(args: argparse.Namespace) -> Inputs | None:
    """What the command reads (None: standard input), for :func:`cacheviz._writing.guard`."""
    from cacheviz._writing import Inputs

    path = getattr(args, "path", None)
    return None if path in (None, "-") else Inputs.transcript(path)


def refuse_overwriting_input(args: argparse.Namespace) -> None:
    """Refuse, before reading, an output path that would overwrite the input.

    The file, through a symlink or a hard link, or a file read with it: one guard for
    every output option (:func:`cacheviz._writing.guard`).
    """
    from cacheviz._writing import guard

    inputs = inputs_of(args)
    for name, option in OUTPUTS.items():
        output = getattr(args, name, None)
        if output is not None:
            guard(output, inputs, option=option)


def default_output(args: argparse.Namespace, suffix: str) -> Path:
    """Where a command writes its file without ``-o``: the working folder, named from the input.

    ``<input stem><suffix>`` in the current working directory, never beside the input (a
    Claude Code session's folder belongs to the agent); when that name is taken, the first free
    ``<stem>-2<suffix>``, ``<stem>-3<suffix>``... so nothing is overwritten silently. Refuses (a
    :class:`CacheVizError`) a name that would overwrite the input.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line; ``args.path`` is the input (``-``: standard input).
    suffix : str
        The file's extension, with its dot (``".html"``).

    Returns
    -------
    Path
        A path in the working folder that does not exist yet.
    """
    stem = "stdin" if args.path == "-" else (Path(args.path).stem or Path(args.path).name)
    candidate = Path(f"{stem}{suffix}")
    number = 1
    while candidate.exists() or candidate.is_symlink():
        number += 1
        candidate = Path(f"{stem}-{number}{suffix}")
    from cacheviz._writing import guard

    guard(candidate, inputs_of(args))
    return candidate
