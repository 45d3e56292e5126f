"""Open an agent's SQLite database without writing a byte into its folder.

Every reader of an SQLite store (OpenCode and Kilo's ``opencode.db`` / ``kilo.db``,
claude-tap's ``traces.sqlite3``) opens it through :func:`open_read_only`:

* with no journal beside it holding data (no ``-wal``, or an empty one, and no hot
  ``-journal``), the file is opened read-only and **immutable**
  (``file:…?mode=ro&immutable=1``): SQLite takes no lock and creates no ``-wal`` /
  ``-shm``, so a WAL-mode database is readable on read-only media and its folder is left
  as it was. (Opened with ``mode=ro`` alone, a WAL-mode database gets a ``-wal`` and a
  ``-shm`` created beside it, and cannot be opened at all where the folder is read-only.)
* when a ``-wal`` holds data (the agent is running, or was killed before a checkpoint),
  or a hot ``-journal`` lies beside it, the database and its journal are copied to a
  private temporary folder and the copy is opened: what the log holds and the database
  does not yet is read, and the original's ``-shm`` is never opened (a reader of a WAL
  database writes its read marks there). The copy is removed when the block ends.

Either way no file beside the input is created or changed.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MAGIC = b"SQLite format 3\x00"
_JOURNALS = ("-wal", "-journal")


def is_sqlite(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts like an SQLite database."""
    return head.startswith(MAGIC)


def _pending(path: Path) -> list[Path]:
    """The journals beside ``path`` that hold data the database file may not have yet."""
    out = []
    for suffix in _JOURNALS:
        journal = path.with_name(path.name + suffix)
        try:
            if journal.is_file() and journal.stat().st_size > 0:
                out.append(journal)
        except OSError:
            continue
    return out


def _checked(conn: sqlite3.Connection) -> sqlite3.Connection:
    """``conn`` after one read (SQLite opens lazily: a bad file fails here, not later)."""
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        raise
    return conn


@contextmanager
def open_read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the database ``path`` that writes nothing beside it.

    Immutable and read-only when no journal holds data; otherwise a private snapshot of
    the database and its ``-wal`` (or hot ``-journal``), so uncommitted-to-the-file
    pages are read too. See the module docstring.

    Raises
    ------
    sqlite3.Error
        When the file is not an SQLite database or SQLite cannot read it.
    OSError
        When the file or its journal cannot be read or copied.
    """
    journals = _pending(path)
    if not journals:
        uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
        conn = _checked(sqlite3.connect(uri, uri=True))
        try:
            yield conn
        finally:
            conn.close()
        return
    with tempfile.TemporaryDirectory(prefix="cacheviz-sqlite-") as folder:
        copy = Path(folder) / "snapshot.db"
        # the log first: a checkpoint between the two copies then leaves the database
        # copy holding what the log copy does (the other way round, it could lose it)
        for journal in journals:
            suffix = journal.name[len(path.name) :]
            shutil.copyfile(journal, copy.with_name(copy.name + suffix))
        shutil.copyfile(path, copy)
        conn = _checked(sqlite3.connect(copy))  # applies the log to the copy, never the original
        try:
            yield conn
        finally:
            conn.close()


def tables(path: Path) -> list[str] | None:
    """The table names of the SQLite database ``path`` (``None``: it cannot be read)."""
    try:
        with open_read_only(path) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except (sqlite3.Error, OSError):
        return None
    return sorted(str(row[0]) for row in rows)
