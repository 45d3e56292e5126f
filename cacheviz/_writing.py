"""Where an output file may go, and how every one is written: one guard for every writer.

Every file cacheviz writes for a user goes through :func:`write` (or :func:`write_csv`):
``report -o``, ``summary --csv`` / ``--parquet``, ``check --sarif`` / ``--junit`` (also
when the check could not run), ``scan --report`` / ``--parquet``, the scan's
per-session inspector pages, and their library functions
(:func:`cacheviz.ui.report.write_report`, :func:`cacheviz.ui._scan.write_scan_report`,
:meth:`cacheviz.scanning._result.ScanResult.write_parquet`,
:func:`cacheviz.check._output.write_sarif`, ...).

- **Never over an input.** An output is refused, before anything is written, when it is
  a file being read — however it is named: through a symlink, ``..``, or a hard link
  (the same inode) — or lies in a folder whose files are read with the transcript (a
  folder given as the input, a Claude Code session's ``subagents/``). See :class:`Inputs`.
- **Whole or not at all.** The file is written to a temporary file beside it, then
  renamed over it (``os.replace``). A full disk (``ENOSPC``), a quota (``EDQUOT``), a
  file-size limit (``EFBIG``), a missing permission (``EACCES``) or a read-only medium
  (``EROFS``) leaves no partial file and the old one, if any, as it was, and is one line
  (:class:`cacheviz.errors.CacheVizError`): the option, the path, why, what to do.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from cacheviz.errors import CacheVizError

# Why a write failed, and what to do, by errno.
_REASONS = {
    errno.ENOSPC: ("no space left on the device", "free some space or write to another disk"),
    errno.EDQUOT: ("the disk quota is used up", "free some space or write to another disk"),
    errno.EFBIG: (
        "the file would pass the file-size limit",
        "raise the limit (ulimit -f) or write to another disk",
    ),
    errno.EACCES: ("permission denied", "choose a folder you can write to"),
    errno.EPERM: ("permission denied", "choose a folder you can write to"),
    errno.EROFS: ("the file system is read-only", "choose a folder on a writable disk"),
    errno.ENOENT: ("the folder does not exist", "check that the folder exists and is writable"),
    errno.ENOTDIR: ("a part of the path is not a folder", "check the path"),
    errno.EISDIR: ("it is a folder", "give a file name"),
}


@dataclass(frozen=True)
class Inputs:
    """What a command reads: files, and folders whose files it reads (outputs stay out)."""

    files: tuple[Path, ...] = ()
    folders: tuple[Path, ...] = ()
    shown: dict[Path, str] = field(default_factory=dict, compare=False)
    """How an input is named in the error (the path as the user gave it)."""

    @classmethod
    def transcript(cls, path: str | Path) -> Inputs:
        """What reading the transcript ``path`` reads.

        The file, or the folder; and a Claude Code session's sub-agent logs
        (``<session>/subagents/``).
        """
        source = Path(path)
        if source.is_dir():
            return cls(folders=(source,), shown={source: str(path)})
        return cls(
            files=(source,),
            folders=(source.parent / source.stem / "subagents",),
            shown={source: str(path)},
        )

    @classmethod
    def of(cls, paths: Iterable[str | Path]) -> Inputs:
        """The files and folders ``paths`` (a scan's: each unit it read)."""
        given = [Path(p) for p in paths]
        folders = tuple(p for p in given if p.is_dir())
        files = tuple(p for p in given if not p.is_dir())
        return cls(files=files, folders=folders, shown={p: str(p) for p in given})

    @cached_property
    def _resolved(self) -> dict[Path, Path]:
        return {_resolve(p): p for p in self.files}

    @cached_property
    def _inodes(self) -> dict[tuple[int, int], Path]:
        found = {}
        for path in self.files:
            with contextlib.suppress(OSError, ValueError):
                stat = path.stat()
                found[(stat.st_dev, stat.st_ino)] = path
        return found

    @cached_property
    def _folders(self) -> list[tuple[Path, Path]]:
        return [(_resolve(folder), folder) for folder in self.folders]

    def overwritten(self, target: Path) -> str | None:
        """Why writing ``target`` would overwrite an input (None: it would not)."""
        resolved = _resolve(target)
        source = self._resolved.get(resolved)
        if source is None:
            with contextlib.suppress(OSError, ValueError):
                stat = target.stat()  # a hard link (or a path the resolution missed)
                source = self._inodes.get((stat.st_dev, stat.st_ino))
        if source is not None:
            return f"the output would overwrite the transcript being read ({self._name(source)})"
        for folder, given in self._folders:
            if folder in resolved.parents:
                return (
                    "the output would overwrite the transcript being read: it is in "
                    f"{self._name(given)}, whose files are read with it"
                )
        return None

    def _name(self, path: Path) -> str:
        return self.shown.get(path, str(path))


def _resolve(path: Path) -> Path:
    """``path`` absolute, through every symlink and ``..`` that exists."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: as written
        return path.absolute()


def _where(path: str | Path, option: str | None) -> str:
    return f"{option} {path}" if option else str(path)


def guard(target: str | Path, inputs: Inputs | None, *, option: str | None = None) -> None:
    """Refuse ``target`` when it would overwrite one of ``inputs`` (see :class:`Inputs`).

    Raises
    ------
    CacheVizError
        One line: the option, the path, which input it would overwrite, what to do.
    """
    if inputs is None:
        return
    why = inputs.overwritten(Path(target))
    if why is not None:
        msg = f"{_where(target, option)}: {why}; choose another output path"
        raise CacheVizError(msg)


def write(
    target: str | Path,
    content: str | bytes,
    *,
    what: str,
    option: str | None = None,
    inputs: Inputs | None = None,
) -> Path:
    """Write ``content`` to ``target`` whole or not at all; return ``target``.

    ``content`` is text (UTF-8) or bytes (a frame's Parquet: :func:`parquet`); ``what``
    names the file in an error ("report", "csv file"), ``option`` the command-line option
    that chose the path. A symlink is kept: the file it points to is replaced. A device
    or a pipe (``/dev/stdout``) is written as it is.

    Raises
    ------
    CacheVizError
        When the output would overwrite an input (:func:`guard`), or cannot be written:
        one line, and no partial file is left.
    """
    path = Path(target)
    guard(path, inputs, option=option)
    final = Path(os.path.realpath(path))
    if final.exists() and not final.is_file() and not final.is_dir():
        return _write_through(path, final, content, what, option)  # /dev/stdout, a pipe
    try:
        if final.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        # beside it (a rename within one file system); a long name is cut to stay valid
        prefix = f".{final.name[:100]}."
        handle, name = tempfile.mkstemp(prefix=prefix, suffix=".part", dir=final.parent)
    except OSError as exc:
        raise _failed(exc, path, what, option) from None
    temporary = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(_bytes(content))
            out.flush()
            os.fsync(out.fileno())
        temporary.chmod(_mode(final))
        temporary.replace(final)
    except OSError as exc:
        _discard(temporary)
        raise _failed(exc, path, what, option) from None
    except BaseException:
        _discard(temporary)
        raise
    return path


def _discard(temporary: Path) -> None:
    with contextlib.suppress(OSError):
        temporary.unlink()


def _bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def _write_through(
    path: Path, final: Path, content: str | bytes, what: str, option: str | None
) -> Path:
    """Write to a device or a pipe as it is: there is no file to put in its place."""
    try:
        with final.open("wb") as out:
            out.write(_bytes(content))
    except OSError as exc:
        raise _failed(exc, path, what, option, partial=True) from None
    return path


def make_folder(folder: str | Path, *, what: str, option: str | None = None) -> Path:
    """Create ``folder`` (and its parents) for outputs; one line when it can't be."""
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _failed(exc, path, what, option) from None
    return path


def _mode(final: Path) -> int:
    """The new file's permissions: the old file's, else what ``open`` would give."""
    try:
        return final.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


@functools.cache
def _umask() -> int:
    """The process's umask (read by setting it: once)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _failed(
    exc: OSError, path: Path, what: str, option: str | None, *, partial: bool = False
) -> CacheVizError:
    reason, advice = _REASONS.get(exc.errno or 0, (exc.strerror or str(exc), "check the path"))
    if partial:  # a device or a pipe: what was written is gone to it
        kept = "the output is incomplete"
    else:
        kept = "the old file is kept" if path.exists() else "nothing was written"
    return CacheVizError(
        f"{_where(path, option)}: can't write the {what} ({reason}); {advice} ({kept})"
    )


# A text cell a spreadsheet would read as a formula (OWASP's list: = + - @, tab, CR).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(frame: Any) -> Any:
    """``frame`` with every text cell that starts like a formula prefixed with ``'``.

    A spreadsheet opening the CSV evaluates ``=HYPERLINK(…)`` or ``@SUM(…)`` in a cell;
    with the quote it shows the text. Only text columns change: a negative number in a
    number column stays a number.
    """
    import polars as pl

    pattern = "^[" + "".join("\\" + c if c in "-\\^]" else c for c in FORMULA_STARTS) + "]"
    pattern = pattern.replace("\t", "\\t").replace("\r", "\\r")
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(
        pl.when(pl.col(name).str.contains(pattern))
        .then(pl.lit("'") + pl.col(name))
        .otherwise(pl.col(name))
        .alias(name)
        for name in text
    )


def write_csv(
    frame: Any,
    target: str | Path,
    *,
    option: str | None = None,
    inputs: Inputs | None = None,
) -> Path:
    """Write ``frame`` as CSV (:func:`spreadsheet_safe`, then :func:`write`)."""
    text = spreadsheet_safe(frame).write_csv()
    return write(target, text, what="csv file", option=option, inputs=inputs)


def parquet(frame: Any) -> bytes:
    """``frame`` as a Parquet file's bytes (written by :func:`write`: its errors are ours)."""
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()
