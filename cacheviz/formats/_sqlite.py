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

Every query stops at the shared limits (:mod:`cacheviz._limits`): the whole read of a
store within ``CACHEVIZ_MAX_SQL_SECONDS`` (SQLite's progress handler interrupts even a
recursive view that never ends), and no more than ``CACHEVIZ_MAX_SQL_ROWS`` rows from a
query read through :func:`rows`.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cacheviz._limits import SQL_ROWS, SQL_SECONDS, LimitError

MAGIC = b"SQLite format 3\x00"
_JOURNALS = ("-wal", "-journal")
_STEPS = 10_000  # SQLite machine steps between two looks at the clock


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


def _limited(conn: sqlite3.Connection, path: Path) -> Callable[[], bool]:
    """Stop ``conn``'s queries once the store has been read for :data:`SQL_SECONDS`.

    SQLite calls the handler every few thousand steps of its machine, inside any query
    (a recursive view that never ends included); a true answer interrupts the query.
    Returns whether the limit was hit.
    """
    deadline = time.monotonic() + SQL_SECONDS.value()
    hit = [False]

    def check() -> int:
        if time.monotonic() > deadline:
            hit[0] = True
            return 1
        return 0

    conn.set_progress_handler(check, _STEPS)
    return lambda: hit[0]


def _limit_error(path: Path, exc: BaseException, timed_out: bool) -> LimitError | None:
    if timed_out:
        return LimitError(
            f"{path}: reading the SQLite store takes longer than the {SQL_SECONDS.shown()} "
            "(a view that never ends?)"
        )
    del exc
    return None


def rows(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> Iterator[Any]:
    """The rows of ``sql``, one at a time, within the limits of :func:`open_read_only`.

    Raises
    ------
    LimitError
        Past :data:`~cacheviz._limits.SQL_ROWS` rows, or when the store's read passed
        :data:`~cacheviz._limits.SQL_SECONDS`: one line naming the file and the limit
        (not an ``sqlite3.Error``: a reader's handler of a bad store does not take it).
    """
    path, timed_out = _open.get(id(conn), (Path("the SQLite store"), lambda: False))
    limit = int(SQL_ROWS.value())
    try:
        for count, row in enumerate(conn.execute(sql, params), 1):
            if count > limit:
                msg = f"{path}: a query gives more rows than the {SQL_ROWS.shown()}"
                raise LimitError(msg)
            yield row
    except sqlite3.OperationalError as exc:
        raise _limit_error(path, exc, timed_out()) or exc from None


_open: dict[int, tuple[Path, Callable[[], bool]]] = {}  # connections open, by id


@contextmanager
def open_read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the database ``path`` that writes nothing beside it.

    Immutable and read-only when no journal holds data; otherwise a private snapshot of
    the database and its ``-wal`` (or hot ``-journal``), so uncommitted-to-the-file
    pages are read too. See the module docstring. Queries stop at the shared limits
    (:data:`~cacheviz._limits.SQL_SECONDS` for the whole read, and
    :data:`~cacheviz._limits.SQL_ROWS` through :func:`rows`).

    Raises
    ------
    sqlite3.Error
        When the file is not an SQLite database or SQLite cannot read it.
    LimitError
        When the read passes a limit: one line naming the file and the limit.
    OSError
        When the file or its journal cannot be read or copied.
    """
    journals = _pending(path)
    if not journals:
        uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
        conn = _checked(sqlite3.connect(uri, uri=True))
        timed_out = _limited(conn, path)
        _open[id(conn)] = (path, timed_out)
        try:
            yield conn
        except sqlite3.Error as exc:
            raise _limit_error(path, exc, timed_out()) or exc from None
        finally:
            _open.pop(id(conn), None)
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
        timed_out = _limited(conn, path)
        _open[id(conn)] = (path, timed_out)
        try:
            yield conn
        except sqlite3.Error as exc:
            raise _limit_error(path, exc, timed_out()) or exc from None
        finally:
            _open.pop(id(conn), None)
            conn.close()


def tables(path: Path) -> list[str] | None:
    """The table names of the SQLite database ``path`` (``None``: it cannot be read)."""
    try:
        with open_read_only(path) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except (sqlite3.Error, OSError):
        return None
    return sorted(str(row[0]) for row in rows)
