"""Tables and lines that fit the terminal: columns dropped by priority, the last one wrapped.

The width is ``COLUMNS`` when set, else the terminal's when the output is one, else
unlimited (a pipe or a file gets every column on one line). ``--json`` is for machines;
this is for people.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

_EMPTY = frozenset({"", "-", "n/a"})
MIN_WRAP = 30  # narrowest the wrapped last column gets before more columns are dropped


def width_of(out: TextIO) -> int | None:
    """Characters per line for ``out``: ``COLUMNS``, the terminal's, or ``None`` (no limit)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    isatty = getattr(out, "isatty", None)
    if isatty is not None and isatty():
        return shutil.get_terminal_size().columns
    return None


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its header, alignment, and when it gives way (``drop``: higher goes first).

    ``drop=0`` columns always keep their width. At its turn (``drop``) a column is
    dropped, or, with ``shrink``, cut (with ``…`` at its end) down to no fewer than
    ``shrink`` characters; room left once the rest fits goes back to it first.
    """

    header: str
    align: str = ">"
    drop: int = 0
    shrink: int | None = None


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def fit_columns(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int | None,
    *,
    wrap: bool = True,
    min_wrap: int = MIN_WRAP,
) -> tuple[list[int], list[int]]:
    """Which columns to show (their indexes) and their widths.

    With ``wrap``, the last column takes what is left (at least ``min_wrap``) and
    wraps. Columns with nothing in them go first; then, by ``drop`` (highest first),
    each column is dropped, or cut down to its ``shrink``, until the rest fits. Room
    left over brings back a dropped column that fits (the last to go first), then
    widens the cut columns again (up to their full width), then the last one.
    """
    natural = [max([len(c.header), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    shown = list(range(len(columns)))
    sizes = list(natural)
    if width is None:
        return shown, sizes
    last = len(columns) - 1 if wrap else None

    def used() -> int:
        fixed = [i for i in shown if i != last]
        total = sum(sizes[i] for i in fixed) + max(0, len(shown) - 1)
        if last is not None:
            total += min(natural[last], min_wrap) + 1  # two spaces before the last one
        return total

    by_turn = sorted(
        (i for i, c in enumerate(columns) if c.drop > 0 and i != last),
        key=lambda i: -columns[i].drop,
    )
    for i in by_turn:  # columns with nothing in them ("-", "n/a") go first
        if used() > width and columns[i].shrink is None and all(r[i] in _EMPTY for r in rows):
            shown.remove(i)
    for i in by_turn:
        if used() <= width:
            break
        if i not in shown:
            continue
        floor = columns[i].shrink
        if floor is None:
            shown.remove(i)
        else:
            sizes[i] = max(min(floor, natural[i]), sizes[i] - (used() - width))
    for i in reversed(by_turn):  # room left: a dropped column that fits comes back
        if i not in shown and not all(r[i] in _EMPTY for r in rows):
            shown.append(i)
            shown.sort()
            if used() > width:
                shown.remove(i)
    for i in shown:  # then the cut columns get it back
        if sizes[i] < natural[i] and used() < width:
            sizes[i] = min(natural[i], sizes[i] + width - used())
    if last is not None:
        rest = width - (used() - min(natural[last], min_wrap))
        sizes[last] = max(min_wrap, min(natural[last], rest)) if rest > 0 else natural[last]
    return shown, sizes


def format_row(
    columns: Sequence[Column],
    shown: Sequence[int],
    sizes: Sequence[int],
    row: Sequence[str],
    *,
    wrap: bool = True,
) -> list[str]:
    """One row laid out by :func:`fit_columns`: one line, or more when the last one wraps."""
    last = len(columns) - 1 if wrap else None
    cells = []
    indent = 0
    tail: list[str] = [""]
    for i in shown:
        if i == last:
            tail = textwrap.wrap(row[i], sizes[i], break_on_hyphens=False) or [""]
            break
        cells.append(f"{_cut(row[i], sizes[i]):{columns[i].align}{sizes[i]}}")
    head = " ".join(cells)
    if last is not None and last in shown:
        head += "  "
        indent = len(head)
    return [(head + tail[0]).rstrip(), *(" " * indent + more for more in tail[1:])]


def render(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int | None,
    *,
    wrap: bool = True,
    min_wrap: int = MIN_WRAP,
) -> list[str]:
    """The header and the rows as lines that fit ``width`` (see :func:`fit_columns`)."""
    shown, sizes = fit_columns(columns, rows, width, wrap=wrap, min_wrap=min_wrap)
    lines = []
    for row in [[c.header for c in columns], *rows]:
        lines.extend(format_row(columns, shown, sizes, row, wrap=wrap))
    return lines


def wrap_line(text: str, width: int | None, indent: int = 4) -> str:
    """``text`` wrapped to ``width`` with a hanging indent (unchanged without a width)."""
    if width is None or len(text) <= width:
        return text
    return textwrap.fill(
        text,
        width,
        subsequent_indent=" " * indent,
        break_on_hyphens=False,
        break_long_words=True,
    )


def short_paths(text: str) -> str:
    """``text`` with absolute paths shortened: the working folder's relative, the home's ``~``."""
    cwd, home = str(Path.cwd()), str(Path.home())
    if len(cwd) > 1:
        text = text.replace(cwd + os.sep, "")
    if len(home) > 1:
        text = text.replace(home + os.sep, "~" + os.sep)
    return text


def stderr_line(text: str, out: TextIO | None = None) -> None:
    """Write a ``cacheviz: warning: …`` line to stderr: short paths, wrapped to its width."""
    stream = sys.stderr if out is None else out
    stream.write(wrap_line(short_paths(text), width_of(stream), indent=4) + "\n")


def ratio(value: float | None) -> str:
    """A hit ratio as a percentage, ``n/a`` when nothing was reported."""
    return "n/a" if value is None else f"{value:.0%}"
