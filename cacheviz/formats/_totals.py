"""Helpers of the readers of agents' SQLite session stores that keep session totals only.

Hermes Agent and Goose keep per session a running total of tokens (and, for Hermes, an
API-call count), never per call. Their readers rebuild the conversation as calls with
usage not reported and bill the totals at the session's scope
(``Session.session_usage``); these are the pieces they share, with Crush's reader (its
``detect``, rows within the shared SQL limits, messages by session, the one error line).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats import _sqlite
from cacheviz.formats._body import provider_for
from cacheviz.model import Call, SessionUsage, Usage


def rows(con: sqlite3.Connection, sql: str) -> list[dict[str, Any]]:
    """The rows of ``sql`` as dicts by column name, within the shared SQL limits.

    Read through :func:`cacheviz.formats._sqlite.rows` (the row and time limits of
    :func:`~cacheviz.formats._sqlite.open_read_only`), a row a dict of its columns.
    """
    con.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in _sqlite.rows(con, sql)]
    finally:
        con.row_factory = None


def by_session(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``messages`` grouped by their ``session_id`` (as text), each group in the rows' order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in messages:
        grouped.setdefault(str(row["session_id"]), []).append(row)
    return grouped


def tables(
    path: Path,
    agent: str,
    queries: Mapping[str, str],
    optional: Mapping[str, str] | None = None,
) -> dict[str, list[dict[str, Any]] | None]:
    """The rows of each query, read in one read-only, immutable session of ``path``.

    ``optional`` maps a table name to its query, run only when the store has that table
    (else its rows are ``None``: an older schema). An SQLite error is
    :func:`unreadable`'s one line naming ``agent``.
    """
    try:
        with _sqlite.open_read_only(path) as con:
            out: dict[str, list[dict[str, Any]] | None] = {
                name: rows(con, sql) for name, sql in queries.items()
            }
            for table, sql in (optional or {}).items():
                out[table] = rows(con, sql) if has_table(con, table) else None
    except sqlite3.Error as exc:
        raise unreadable(agent, path, exc) from None
    return out


def unreadable(agent: str, path: Path, exc: sqlite3.Error) -> TranscriptError:
    """The one-line error of a session store SQLite could not read (what, and what to do)."""
    msg = (
        f"can't read the {agent} database ({exc}); "
        f"pass the {agent} store itself, or a copy taken while {agent} is not writing it"
    )
    return TranscriptError(msg, path=path)


def holds_tables(path: Path, head: bytes, wanted: Mapping[str, frozenset[str]]) -> bool:
    """Whether ``path`` is an SQLite database whose tables hold at least ``wanted``'s columns.

    What a session store's ``detect`` asks (``{"sessions": {...}, "messages": {...}}``);
    opened read-only and immutable, an unreadable file is not one.
    """
    if path.is_dir() or not _sqlite.is_sqlite(head):
        return False
    try:
        with _sqlite.open_read_only(path) as con:
            return all(columns(con, table) >= need for table, need in wanted.items())
    except (sqlite3.Error, OSError):
        return False


def columns(con: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table`` (empty when there is no such table)."""
    return {str(row[1]) for row in con.execute(f"pragma table_info({table})")}


def has_table(con: sqlite3.Connection, table: str) -> bool:
    """Whether the database has ``table``."""
    found = con.execute(
        "select 1 from sqlite_master where type = 'table' and name = ?", (table,)
    ).fetchone()
    return found is not None


def epoch(value: Any) -> datetime | None:
    """A Unix time (seconds, or milliseconds past 1e12) or an SQLite ``YYYY-MM-DD hh:mm:ss``."""
    if isinstance(value, str) and value.strip():
        try:
            ts = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    seconds = value / 1000 if value > 1e12 else value
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def count(value: Any, where: str) -> int | None:
    """A token count of a column; ``None`` when null.

    Raises
    ------
    ValueError
        When the value is not a whole number from 0 to 999,999,999,999.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10**12:
        msg = f"column `{where}` is {value!r}; expected a whole number of tokens"
        raise ValueError(msg)
    return value


def vendor(model: str, fallback: Any, default: str) -> str:
    """The provider whose prices apply: from the model, else the store's, else ``default``."""
    guessed = provider_for(model)
    if guessed != "unknown":
        return guessed
    return fallback if isinstance(fallback, str) and fallback else default


def runs_by_thread(calls: list[Call]) -> list[list[Call]]:
    """The calls of each thread (one stored session each), in the order read.

    A store's sessions are written apart (a sub-agent's while its parent waits): each is
    a run of its own, merged with the others by request time
    (:meth:`~cacheviz.formats._lines.LineReader.session`).
    """
    runs: dict[str | None, list[Call]] = {}
    for call in calls:
        runs.setdefault(call.thread_hint, []).append(call)
    return list(runs.values())


def total(values: list[int | None]) -> int | None:
    """The sum of the counts reported (``None`` when none is)."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def summed(usages: list[SessionUsage]) -> Usage | None:
    """The totals of every session's usage (``Session.reported_totals``)."""
    if not usages:
        return None
    every = [u.usage for u in usages]
    return Usage(
        input_tokens=total([u.input_tokens for u in every]),
        cache_read_tokens=total([u.cache_read_tokens for u in every]),
        cache_write_tokens=total([u.cache_write_tokens for u in every]),
        output_tokens=total([u.output_tokens for u in every]),
        provenance="derived" if any(u.provenance == "derived" for u in every) else "reported",
    )
