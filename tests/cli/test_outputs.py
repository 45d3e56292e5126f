"""Every output file: never over an input, whole or not at all, CSV safe in a spreadsheet.

Issue 29, items 2 and 3. Each writer (``summary --csv`` / ``--parquet``, ``report -o``,
``check --sarif`` / ``--junit``, ``scan --report`` with the scan's per-session pages,
``scan --parquet``) is run with its output naming an input file as written, through ``..``, through a symlink and through a hard link: each is
refused in one line (exit 2) and the input is left as it was.

Failures while writing: a file-size limit is real (``RLIMIT_FSIZE`` in a child process:
the kernel refuses the write with ``EFBIG``), and so is ``/dev/full`` (``ENOSPC`` on a
direct write to a device). A full disk, a quota, a missing permission and a read-only
medium on a regular file are *simulated*: ``os.fsync`` (the last step of a text file's
write) or polars' writer is made to fail with that errno, after some bytes are written.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import cacheviz
from cacheviz import _writing
from cacheviz.cli import _app as app

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_sessions" / "append_only.jsonl"

# writer → (arguments with {input}, {folder} and {out}, the option named in the error)
WRITERS = {
    "summary-csv": (["summary", "{input}", "--csv", "{out}"], "--csv"),
    "summary-parquet": (["summary", "{input}", "--parquet", "{out}"], "--parquet"),
    "report": (["report", "{input}", "-o", "{out}"], "-o"),
    "check-sarif": (["check", "{input}", "--sarif", "{out}"], "--sarif"),
    "check-junit": (["check", "{input}", "--junit", "{out}"], "--junit"),
    "scan-report": (
        ["scan", "{folder}", "--report", "{out}", "--no-cache", "--jobs", "1"],
        "--report",
    ),
}


def _run(args: list[str], capsys) -> tuple[int, str]:
    status = app.main(args)
    return status, capsys.readouterr().err


def _args(writer: str, session: Path, out: str) -> list[str]:
    template, _ = WRITERS[writer]
    return [a.format(input=session, folder=session.parent, out=out) for a in template]


@pytest.fixture
def session(tmp_path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "session.jsonl"
    path.write_bytes(SAMPLE.read_bytes())
    return path


def _names_of_the_input(session: Path, how: str) -> str:
    """An output path that is the input, written ``how``."""
    if how == "as-given":
        return str(session)
    if how == "dotdot":
        return str(session.parent / ".." / session.parent.name / session.name)
    link = session.parent.parent / f"link-{how}.out"
    if how == "symlink":
        link.symlink_to(session)
    else:
        link.hardlink_to(session)
    return str(link)


@pytest.mark.parametrize("how", ["as-given", "dotdot", "symlink", "hardlink"])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_an_output_naming_the_input_is_refused(writer, how, session, capsys):
    before = session.read_bytes()
    out = _names_of_the_input(session, how)
    status, err = _run(_args(writer, session, out), capsys)
    assert status == 2
    _, option = WRITERS[writer]
    (line,) = err.splitlines()  # one line: the option, the path, why, what to do
    assert line.startswith(f"cacheviz: error: {option} {out}: the output would overwrite")
    assert line.endswith("; choose another output path")
    assert session.read_bytes() == before
    assert not list(session.parent.glob(".*.part"))
    if how == "symlink":
        assert Path(out).is_symlink()


def test_a_check_that_cannot_run_does_not_write_its_sarif_over_the_input(tmp_path, capsys):
    """``check`` writes SARIF / JUnit even when the transcript can't be read: not over it."""
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not a transcript\n")
    for option in ("--sarif", "--junit"):
        status, err = _run(["check", str(broken), option, str(broken)], capsys)
        assert status == 2
        assert "would overwrite the transcript" in err
        assert broken.read_text() == "not a transcript\n"
    sarif = tmp_path / "out.sarif"  # elsewhere, the failure is still written
    assert _run(["check", str(broken), "--sarif", str(sarif)], capsys)[0] == 2
    assert "results" in sarif.read_text()


def test_a_claude_code_sub_agent_log_is_an_input(tmp_path, capsys):
    session = tmp_path / "abc.jsonl"
    session.write_bytes(SAMPLE.read_bytes())
    agent = tmp_path / "abc" / "subagents" / "agent-1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_text("{}\n")
    for option in ("--csv", "--sarif"):
        command = "summary" if option == "--csv" else "check"
        status, err = _run([command, str(session), option, str(agent)], capsys)
        assert status == 2 and "whose files are read with it" in err
        assert agent.read_text() == "{}\n"


def test_scan_parquet_refuses_a_table_over_a_scanned_file(session, tmp_path, capsys):
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "calls.parquet").symlink_to(session)
    before = session.read_bytes()
    args = ["scan", str(session.parent), "--parquet", str(folder), "--no-cache", "--jobs", "1"]
    status, err = _run(args, capsys)
    assert status == 2
    assert f"--parquet {folder / 'calls.parquet'}: the output would overwrite" in err
    assert session.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["calls.parquet"]  # none written


def test_a_scan_session_page_never_overwrites_a_scanned_file(tmp_path, capsys):
    """The scan's per-session pages go in ``<report>_sessions/``: where page 1 goes, a
    symlink to a transcript the scan reads."""
    folder = tmp_path / "scan"
    pages = folder / "scan_sessions"
    pages.mkdir(parents=True)
    transcript = folder / "a.jsonl"
    transcript.write_bytes(SAMPLE.read_bytes())
    page = pages / "001.html"
    page.symlink_to(transcript)
    before = transcript.read_bytes()
    report = folder / "scan.html"
    args = ["scan", str(folder), "--report", str(report), "--no-cache", "--jobs", "1"]
    status, err = _run(args, capsys)
    assert status == 2
    assert f"--report {page}: the output would overwrite the transcript" in err
    assert transcript.read_bytes() == before and page.is_symlink()
    assert not report.exists()  # refused before anything is written


def test_a_report_written_into_the_scanned_folder_is_no_input_next_time(session, capsys):
    """A page of an earlier scan in the scanned folder is of no format: it may be replaced."""
    report = session.parent / "scan.html"
    args = ["scan", str(session.parent), "--report", str(report), "--no-cache", "--jobs", "1"]
    assert _run(args, capsys)[0] == 0
    first = report.read_text()
    assert _run(args, capsys)[0] == 0
    assert report.read_text() == first
    assert (session.parent / "scan_sessions" / "001.html").is_file()


def test_an_output_through_a_symlink_replaces_the_file_it_points_to(session, tmp_path, capsys):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert _run(["summary", str(session), "--csv", str(link)], capsys)[0] == 0
    assert link.is_symlink()
    assert target.read_text().startswith("call,")


# -- whole or not at all ------------------------------------------------------------------

# writer → its output (a file, or the --parquet folder), and what names it in the error
LIMITED = {
    "summary-csv": (["summary", "{input}", "--csv", "{out}"], "out.csv", "csv file"),
    "summary-parquet": (["summary", "{input}", "--parquet", "{out}"], "out.parquet", "parquet"),
    "report": (["report", "{input}", "-o", "{out}"], "out.html", "report"),
    "check-sarif": (["check", "{input}", "--sarif", "{out}"], "out.sarif", "SARIF file"),
    "check-junit": (["check", "{input}", "--junit", "{out}"], "out.xml", "JUnit file"),
    "scan-report": (
        ["scan", "{folder}", "--report", "{out}", "--no-cache", "--jobs", "1"],
        "out.html",
        "report",
    ),
    "scan-parquet": (
        ["scan", "{folder}", "--parquet", "{out}", "--no-cache", "--jobs", "1"],
        "tables",
        "parquet file",
    ),
}
LIMIT = 1024  # bytes a file may grow to in the child process (each output is larger)


def _limited(args: list[str], limit: int) -> subprocess.CompletedProcess:
    """Run the command line in a process whose files may not pass ``limit`` bytes."""
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        "from cacheviz.cli import main\n"
        f"sys.exit(main({args!r}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.parametrize("writer", list(LIMITED))
def test_a_file_size_limit_leaves_no_partial_file_and_says_so(writer, session, tmp_path):
    template, name, what = LIMITED[writer]
    out_folder = tmp_path / "out"
    out_folder.mkdir()
    out = out_folder / name
    args = [a.format(input=session, folder=session.parent, out=out) for a in template]
    unlimited = _limited(args, 1 << 40)
    assert unlimited.returncode in (0, 1), unlimited.stderr  # check: 1 on findings
    sizes = [p.stat().st_size for p in out_folder.rglob("*") if p.is_file()]
    assert max(sizes) > LIMIT  # the output is larger than the limit
    for path in sorted(out_folder.rglob("*"), reverse=True):  # start again, empty
        path.unlink() if path.is_file() else path.rmdir()
    if writer != "scan-parquet":
        out.write_text("the old file\n")
    done = _limited(args, LIMIT)
    assert done.returncode == 2, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("cacheviz: error: ")]
    assert what in line and "(the file would pass the file-size limit)" in line
    assert "raise the limit (ulimit -f)" in line
    left = [p for p in out_folder.rglob("*") if p.is_file()]
    assert not [p for p in left if p.name.endswith(".part")]  # no temporary file left
    assert all(p.stat().st_size <= LIMIT for p in left)
    if writer != "scan-parquet":
        assert out.read_text() == "the old file\n"  # the old one, whole
    if writer not in ("scan-parquet", "scan-report"):  # (there, a page or a table failed)
        assert line.endswith("(the old file is kept)")


def test_a_full_device_is_one_line(session, capsys):
    """``/dev/full``: a real ``ENOSPC`` on a device written directly (no file to rename)."""
    status, err = _run(["summary", str(session), "--csv", "/dev/full"], capsys)
    assert status == 2
    (line,) = err.splitlines()
    assert line.startswith("cacheviz: error: --csv /dev/full: can't write the csv file")
    assert "(no space left on the device)" in line
    assert Path("/dev/full").is_char_device()


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (errno.ENOSPC, "no space left on the device"),
        (errno.EDQUOT, "the disk quota is used up"),
        (errno.EFBIG, "the file would pass the file-size limit"),
        (errno.EACCES, "permission denied"),
        (errno.EROFS, "the file system is read-only"),
    ],
)
def test_a_failed_write_is_one_line_and_leaves_no_partial_file(
    code, reason, session, monkeypatch, capsys
):
    """Simulated: the write's last step fails with the errno (after the bytes went out)."""

    def fail(*_: object) -> None:
        raise OSError(code, os.strerror(code))

    out = session.parent.parent / "out.sarif"
    monkeypatch.setattr(os, "fsync", fail)
    status, err = _run(["check", str(session), "--sarif", str(out)], capsys)
    assert status == 2
    (line,) = err.splitlines()
    assert line.startswith(f"cacheviz: error: --sarif {out}: can't write the SARIF file ({reason})")
    assert line.endswith("(nothing was written)")
    assert sorted(p.name for p in out.parent.iterdir()) == ["logs"]  # no partial, no temporary


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names a descriptor's file")
def test_a_write_failing_midway_leaves_no_partial_file(session, monkeypatch, capsys):
    """Simulated: the file's bytes stop halfway on a full disk (a short write, then
    ``ENOSPC``), for a Parquet file and the scan's pages."""
    real = os.fdopen

    class HalfThenFull:
        def __init__(self, handle):
            self.file = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def write(self, data):
            self.file.write(bytes(data)[: len(data) // 2])
            self.file.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fdopen(fd, *args, **kwargs):
        handle = real(fd, *args, **kwargs)
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".part"):  # the output's temporary
            return HalfThenFull(handle)
        return handle

    out = session.parent.parent / "calls.parquet"
    monkeypatch.setattr(os, "fdopen", fdopen)
    status, err = _run(["summary", str(session), "--parquet", str(out)], capsys)
    monkeypatch.undo()
    assert status == 2
    assert "can't write the parquet file (no space left on the device)" in err
    assert not out.exists() and sorted(p.name for p in out.parent.iterdir()) == ["logs"]
    assert _run(["summary", str(session), "--parquet", str(out)], capsys)[0] == 0
    assert pl.read_parquet(out).equals(cacheviz.load(session).analyze().calls)


def test_a_new_file_gets_the_usual_permissions_and_a_replaced_one_keeps_its_own(tmp_path):
    umask = os.umask(0o022)
    _writing._umask.cache_clear()
    try:
        new = _writing.write(tmp_path / "new.txt", "x", what="file")
        assert new.stat().st_mode & 0o777 == 0o644
        old = tmp_path / "old.txt"
        old.write_text("y")
        old.chmod(0o600)
        _writing.write(old, "z", what="file")
        assert old.stat().st_mode & 0o777 == 0o600 and old.read_text() == "z"
    finally:
        os.umask(umask)
        _writing._umask.cache_clear()


# -- CSV a spreadsheet does not evaluate ---------------------------------------------------

HOSTILE = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


def test_summary_csv_text_cells_that_look_like_formulas_start_with_a_quote(
    write_log, tmp_path, capsys
):
    from cacheviz.formats.native import record_line

    lines = [
        record_line(
            {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": f"q{i}"}]},
            provider="anthropic",
            model=name,
            api="messages",
            ts=f"2026-01-01T00:00:0{i}Z",
            meta={"thread": name},
        )
        for i, name in enumerate(HOSTILE)
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "calls.csv"
    assert app.main(["summary", str(path), "--csv", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_bytes().decode("utf-8"), newline="")))
    assert [row["model"] for row in rows] == [f"'{name}" for name in HOSTILE]
    assert sorted(row["thread"] for row in rows) == sorted(f"'{name}" for name in HOSTILE)
    for row in rows:
        for cell in row.values():
            assert not cell.startswith(_writing.FORMULA_STARTS), cell
        assert int(row["call"]) >= 0 and int(row["input_tokens"]) > 0  # numbers stay numbers


def test_only_text_cells_are_quoted_a_negative_number_stays_a_number():
    frame = pl.DataFrame(
        {"text": ["-5", "=1", "ok", None, "a=b"], "n": [-5, 1, 2, 3, 4], "x": [-0.5] * 5}
    )
    safe = _writing.spreadsheet_safe(frame)
    assert safe["text"].to_list() == ["'-5", "'=1", "ok", None, "a=b"]
    assert safe["n"].to_list() == [-5, 1, 2, 3, 4] and safe["x"].to_list() == [-0.5] * 5
    assert safe.schema == frame.schema
    assert _writing.write_csv(frame, "/dev/null") == Path("/dev/null")
