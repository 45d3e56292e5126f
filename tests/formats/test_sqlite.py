"""SQLite stores are read without a byte written beside them, on read-only media too."""

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import cacheviz
from cacheviz.errors import UnknownFormatError
from cacheviz.formats import _sqlite

T0 = 1_781_674_674_000


def _step(n: int) -> list[tuple[str, str, str, dict]]:
    """The rows of one finished step: (table, id, message id, data)."""
    tokens = {"input": 10 + n, "output": 2, "reasoning": 0, "cache": {"read": 100, "write": 0}}
    return [
        ("message", f"msg_{n:03d}", "", {"role": "user", "time": {"created": T0 + n}}),
        ("part", f"prt_{n:03d}a", f"msg_{n:03d}", {"type": "text", "text": f"question {n}"}),
        (
            "message",
            f"msg_{n:03d}b",
            "",
            {
                "role": "assistant",
                "modelID": "claude-sonnet-4-5",
                "providerID": "anthropic",
                "time": {"created": T0 + n + 1},
                "tokens": tokens,
            },
        ),
        ("part", f"prt_{n:03d}b", f"msg_{n:03d}b", {"type": "step-start"}),
        ("part", f"prt_{n:03d}c", f"msg_{n:03d}b", {"type": "step-finish", "tokens": tokens}),
    ]


def _insert(con: sqlite3.Connection, n: int) -> None:
    for table, rid, message, data in _step(n):
        if table == "message":
            con.execute(
                "insert into message values (?, 'ses', ?, ?, ?)",
                (rid, T0 + n, T0, json.dumps(data)),
            )
        else:
            con.execute(
                "insert into part values (?, ?, 'ses', ?, ?, ?)",
                (rid, message, T0 + n, T0, json.dumps(data)),
            )


def _wal_db(path: Path, steps: int, *, keep_open: bool) -> sqlite3.Connection | None:
    """An OpenCode-shaped database in WAL mode.

    With ``keep_open`` its rows stay in the ``-wal`` (the agent is still running).
    """
    con = sqlite3.connect(path)
    con.execute("pragma journal_mode = wal")
    con.execute("pragma wal_autocheckpoint = 0")
    con.executescript(
        "create table session (id text primary key, parent_id text);"
        "create table message (id text primary key, session_id text, time_created integer,"
        " time_updated integer, data text);"
        "create table part (id text primary key, message_id text, session_id text,"
        " time_created integer, time_updated integer, data text);"
        "insert into session values ('ses', null);"
    )
    con.commit()
    if keep_open:
        con.execute("pragma wal_checkpoint(truncate)")  # the schema in the main file ...
    for n in range(steps):
        _insert(con, n)
        con.commit()  # ... the steps only in the -wal
    if keep_open:
        return con
    con.close()
    return None


def _listing(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file of ``folder``: (size, mtime ns, sha256) by name."""
    out = {}
    for p in sorted(folder.iterdir()):
        info = p.stat()
        out[p.name] = (info.st_size, info.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _freeze(folder: Path) -> None:
    for p in folder.iterdir():
        p.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)


def _thaw(folder: Path) -> None:
    folder.chmod(stat.S_IRWXU)
    for p in folder.iterdir():
        p.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_a_live_wal_database_in_a_read_only_folder_is_read_whole_and_left_as_it_was(tmp_path):
    folder = tmp_path / "opencode"
    folder.mkdir()
    db = folder / "opencode.db"
    writer = _wal_db(db, 3, keep_open=True)
    try:
        assert (folder / "opencode.db-wal").stat().st_size > 0  # the steps are in the log only
        direct = sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True)
        assert direct.execute("select count(*) from part").fetchone()[0] == 0
        direct.close()
        _freeze(folder)
        before = _listing(folder)
        session = cacheviz.load(db)
        assert _listing(folder) == before  # no file created, none changed (the -shm either)
    finally:
        _thaw(folder)
        assert writer is not None
        writer.close()
    assert [c.usage.input_tokens for c in session.calls] == [110, 111, 112]


def test_a_closed_wal_database_gets_no_wal_or_shm_beside_it(tmp_path):
    db = tmp_path / "kilo.db"
    _wal_db(db, 2, keep_open=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kilo.db"]
    with sqlite3.connect(db) as check:  # WAL mode is kept in the file's header
        assert check.execute("pragma journal_mode").fetchone()[0] == "wal"
    (tmp_path / "kilo.db-wal").unlink(missing_ok=True)
    (tmp_path / "kilo.db-shm").unlink(missing_ok=True)
    _freeze(tmp_path)
    try:
        before = _listing(tmp_path)
        assert len(cacheviz.load(db).calls) == 2
        assert cacheviz.formats.detect(db) == "opencode"
        assert _listing(tmp_path) == before == {"kilo.db": before["kilo.db"]}
    finally:
        _thaw(tmp_path)


_MOUNT_READ_ONLY = """
set -e
mount --bind "$FOLDER" "$FOLDER"
mount -o remount,bind,ro "$FOLDER"
if touch "$FOLDER/probe" 2>/dev/null; then echo "still writable"; exit 3; fi
exec "$PYTHON" -c 'import cacheviz, sys; print(len(cacheviz.load(sys.argv[1]).calls))' "$DB"
"""


@pytest.mark.parametrize("live", [False, True], ids=["checkpointed", "wal-holds-data"])
def test_a_wal_database_on_a_read_only_mount_is_read(tmp_path, live):
    """A read-only file system (enforced for root too): a bind mount in a user namespace."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        pytest.skip("needs util-linux unshare (Linux)")
    probe = subprocess.run([unshare, "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"user namespaces unavailable here: {probe.stderr.decode().strip()}")
    folder = tmp_path / "media"
    folder.mkdir()
    db = folder / "opencode.db"
    writer = _wal_db(db, 3, keep_open=live)
    try:
        before = _listing(folder)
        env = {**os.environ, "FOLDER": str(folder), "DB": str(db), "PYTHON": sys.executable}
        done = subprocess.run(
            [unshare, "-rm", "sh", "-c", _MOUNT_READ_ONLY],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split()[-1] == "3"
        assert _listing(folder) == before
    finally:
        if writer is not None:
            writer.close()


def test_an_sqlite_database_of_another_kind_names_its_tables(tmp_path):
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as con:
        con.executescript("create table sessions (id); create table api_calls (n);")
    con.close()
    with pytest.raises(
        UnknownFormatError, match=r"an SQLite database of a kind cacheviz does not "
    ):
        cacheviz.load(db)
    with pytest.raises(UnknownFormatError, match=r"\(tables: api_calls, sessions\)"):
        cacheviz.load(db)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]


def test_the_helper_reads_a_hot_rollback_journal_from_a_copy(tmp_path):
    """A ``-journal`` left by a crashed writer is rolled back in the copy, not in place."""
    db = tmp_path / "x.db"
    with sqlite3.connect(db) as con:
        con.executescript("create table t (v); insert into t values (1);")
    con.close()
    original = db.read_bytes()
    (tmp_path / "x.db-journal").write_bytes(b"\0" * 512)  # not a valid hot journal: ignored
    with _sqlite.open_read_only(db) as conn:
        assert conn.execute("select v from t").fetchall() == [(1,)]
    assert db.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.db", "x.db-journal"]


# -- issue 29 items 6, 7, 8: limits shared by every SQLite reader ------------------------

_ENDLESS = (
    "with recursive r(n) as (select 0 union all select n + 1 from r) select 'm' || n, 'ses', n, "
    "'{}' from r"
)


def _endless_opencode(path: Path) -> None:
    """An OpenCode database whose `message` is a recursive view that never ends."""
    con = sqlite3.connect(path)
    con.executescript(
        "create table session (id text primary key, parent_id text);"
        "insert into session values ('ses', null);"
        f"create view message (id, session_id, time_created, data) as {_ENDLESS};"
        "create table part (id text primary key, message_id text, session_id text,"
        " time_created integer, time_updated integer, data text);"
    )
    con.close()


def test_a_view_that_never_ends_stops_at_the_sql_time_limit(tmp_path, monkeypatch):
    import time

    from cacheviz._limits import LimitError

    db = tmp_path / "opencode.db"
    _endless_opencode(db)
    monkeypatch.setenv("CACHEVIZ_MAX_SQL_SECONDS", "0.5")
    started = time.monotonic()
    with pytest.raises(LimitError) as caught:
        cacheviz.load(db, format="opencode")
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert "\n" not in message and str(db) in message
    assert "SQL time limit of 0.5" in message and "CACHEVIZ_MAX_SQL_SECONDS" in message


def test_a_query_giving_rows_without_end_stops_at_the_row_limit(tmp_path, monkeypatch):
    """claude-tap's `record_blobs` as an endless view (its query has no ORDER BY: rows
    come at once, and never stop)."""
    from cacheviz._limits import LimitError

    db = tmp_path / "traces.sqlite3"
    con = sqlite3.connect(db)
    con.executescript(
        "create table sessions (id text primary key, started_at text);"
        "create table records (session_id text, record_index integer, turn integer,"
        " timestamp text, payload_json text);"
        "insert into sessions values ('s', '2026-04-01T08:00:00+00:00');"
        "create view record_blobs (session_id, hash, payload_json) as "
        "with recursive r(n) as (select 0 union all select n + 1 from r)"
        " select 's', 'sha256:' || n, '{}' from r;"
    )
    ref = {"__claude_tap_blob_ref__": {"hash": "sha256:x"}}
    compact = {
        "__claude_tap_compact_record__": {"version": 1, "refs": [{"path": "/request/body"}]},
        "record": {"timestamp": "2026-04-01T08:00:01+00:00", "request": {"body": ref}},
    }
    con.execute("insert into records values ('s', 1, 1, 't', ?)", (json.dumps(compact),))
    con.commit()
    con.close()
    monkeypatch.setenv("CACHEVIZ_MAX_SQL_ROWS", "1000")
    with pytest.raises(LimitError, match=r"more rows than the SQL rows limit of 1000"):
        cacheviz.load(db, format="claude-tap")


@pytest.mark.slow
def test_scan_goes_on_past_an_endless_store_and_names_it(tmp_path, monkeypatch):
    from cacheviz.scanning import scan

    _endless_opencode(tmp_path / "opencode.db")
    good = tmp_path / "good" / "kilo.db"
    good.parent.mkdir()
    _wal_db(good, 2, keep_open=False)
    monkeypatch.setenv("CACHEVIZ_MAX_SQL_SECONDS", "0.5")
    result = scan([tmp_path], cache=False, jobs=1)
    assert result.calls.height == 2  # the good store is read
    [error] = result.failed["error"].to_list()
    assert error.startswith(str(tmp_path / "opencode.db")) and "SQL time limit" in error


def test_reading_wal_stores_in_a_scan_leaves_their_folders_as_they_were(tmp_path):
    """Issue 29 item 6: the scan's walk, detection and both SQLite readers (OpenCode,
    claude-tap) create and change no file beside a WAL-mode store."""
    from cacheviz.scanning import scan

    _wal_db(tmp_path / "opencode.db", 2, keep_open=False)
    tap = tmp_path / "tap" / "traces.sqlite3"
    tap.parent.mkdir()
    con = sqlite3.connect(tap)
    con.execute("pragma journal_mode = wal")
    con.executescript(
        "create table sessions (id text primary key, started_at text);"
        "create table records (session_id text, record_index integer, turn integer,"
        " timestamp text, payload_json text);"
        "insert into sessions values ('s', '2026-04-01T08:00:00+00:00');"
    )
    record = {
        "timestamp": "2026-04-01T08:00:01+00:00",
        "duration_ms": 10,
        "request": {
            "method": "POST",
            "path": "/v1/messages",
            "body": {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]},
        },
        "response": {"status": 200, "body": {"usage": {"input_tokens": 5, "output_tokens": 1}}},
    }
    con.execute("insert into records values ('s', 1, 1, 't', ?)", (json.dumps(record),))
    con.commit()
    con.close()

    def tree():
        return {
            str(p.relative_to(tmp_path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(tmp_path.rglob("*"))
            if p.is_file()
        }

    before = tree()
    assert sorted(before) == ["opencode.db", "tap/traces.sqlite3"]
    result = scan([tmp_path], cache=False, jobs=1)
    assert tree() == before  # no -wal, no -shm, no byte changed
    assert sorted(result.files["format"].drop_nulls().to_list()) == ["claude-tap", "opencode"]


@pytest.mark.slow
def test_scan_gives_up_a_session_past_its_time_and_names_it(tmp_path, monkeypatch, capsys):
    """Issue 29 item 7: ``--timeout`` (here 2 s; the SQL limit far above it) stops
    the endless store, names it on stderr, counts it as failed, and scans the rest."""
    from cacheviz.cli import _app as app

    _endless_opencode(tmp_path / "opencode.db")
    good = tmp_path / "good" / "kilo.db"
    good.parent.mkdir()
    _wal_db(good, 2, keep_open=False)
    monkeypatch.setenv("CACHEVIZ_MAX_SQL_SECONDS", "600")
    cacheviz.load(good).analyze()  # tokenizer and prices loaded before the clock runs
    status = app.main(["scan", str(tmp_path), "--no-cache", "--jobs", "1", "--timeout", "2"])
    out, err = capsys.readouterr()
    assert status == 0
    [failed] = [line for line in err.splitlines() if line.startswith("cacheviz: failed:")]
    assert str(tmp_path / "opencode.db") in failed
    assert "took longer than 2 s" in failed and "--timeout" in failed
    assert "1 failed" in out and "2 calls" in out
