"""``summary --follow`` (a log being written, like tail -f) and ``--csv`` / ``--parquet``."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import polars as pl
import pytest

import cacheviz
from cacheviz import _schema
from cacheviz.cli import _app as app
from cacheviz.cli._follow import follow
from cacheviz.cli._summary import running_totals

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def _writer(path: Path, lines: list[str], done: threading.Event, pause: float) -> None:
    with path.open("a", encoding="utf-8") as out:
        for line in lines:
            half = len(line) // 2
            out.write(line[:half])  # a line lands in two writes: the half waits
            out.flush()
            time.sleep(pause)
            out.write(line[half:] + "\n")
            out.flush()
            time.sleep(pause)
    time.sleep(pause * 4)
    done.set()


def test_follow_prints_each_call_as_it_lands(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    lines = (SAMPLES / "environment_details.jsonl").read_text().splitlines()
    path = tmp_path / "live.jsonl"  # not there yet: follow waits for it
    done = threading.Event()
    writer = threading.Thread(target=_writer, args=(path, lines, done, 0.05))
    out = io.StringIO()
    writer.start()
    deadline = time.monotonic() + 120

    def stop() -> bool:  # the writer is done and every call printed (or time is up)
        rows = [r for r in out.getvalue().splitlines()[1:] if r[:4].strip().isdigit()]
        return (done.is_set() and len(rows) == len(lines)) or time.monotonic() > deadline

    printed = follow(
        path, out, columns=app.SUMMARY_COLUMNS, row_of=app.call_row, poll=0.02, stop=stop
    )
    writer.join()
    assert printed == len(lines) == 10
    rows = out.getvalue().splitlines()
    assert rows[0].split()[:3] == ["#", "thread", "tokens"]
    indexes = [int(r.split()[0]) for r in rows[1:] if r[:4].strip().isdigit()]
    assert indexes == list(range(10))  # each once, in order
    assert sum("env_details_stripped" in r for r in rows) == 3
    assert max(map(len, rows)) <= 100


def test_follow_stops_cleanly_on_ctrl_c(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    path.write_text((SAMPLES / "append_only.jsonl").read_text())

    def interrupt() -> bool:
        raise KeyboardInterrupt

    out = io.StringIO()
    assert follow(path, out, columns=app.SUMMARY_COLUMNS, row_of=app.call_row, stop=interrupt)
    assert "stopped after" in capsys.readouterr().err


def test_summary_follow_option_reaches_the_follower(tmp_path, monkeypatch):
    seen = {}

    def fake(path, out, **options):
        seen.update(options, path=path)
        return 0

    monkeypatch.setattr("cacheviz.cli._follow.follow", fake)
    target = tmp_path / "x.jsonl"
    assert app.main(["summary", "--follow", str(target), "--thread", "single"]) == 0
    assert seen["path"] == str(target) and seen["thread"] == "single"


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_summary_exports_the_calls_table(tmp_path, capsys, kind):
    target = tmp_path / f"calls.{kind}"
    sample = SAMPLES / "environment_details.jsonl"
    assert app.main(["summary", str(sample), f"--{kind}", str(target)]) == 0
    assert "wrote 10 calls" in capsys.readouterr().err
    frame = pl.read_csv(target) if kind == "csv" else pl.read_parquet(target)
    assert frame.columns == list(_schema.CALLS)
    assert frame.height == 10 and frame["call"].to_list() == list(range(10))
    if kind == "parquet":
        assert dict(frame.schema) == dict(_schema.CALLS)


def test_export_refuses_to_overwrite_the_input(tmp_path, capsys):
    path = tmp_path / "s.jsonl"
    path.write_text((SAMPLES / "append_only.jsonl").read_text())
    assert app.main(["summary", str(path), "--csv", str(path)]) == 2
    assert "would overwrite the transcript" in capsys.readouterr().err
    assert path.read_text() == (SAMPLES / "append_only.jsonl").read_text()


def test_export_to_a_missing_folder_is_one_line(tmp_path, capsys):
    sample = SAMPLES / "append_only.jsonl"
    assert app.main(["summary", str(sample), "--csv", str(tmp_path / "no" / "x.csv")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("cacheviz: error: ") and "can't write the csv file" in line


def test_ctrl_c_ends_the_command_cleanly(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    path = tmp_path / "s.jsonl"
    path.write_text((SAMPLES / "append_only.jsonl").read_text())
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "COLUMNS": "100"}
    process = subprocess.Popen(
        [sys.executable, "-m", "cacheviz", "summary", "--follow", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # a terminal's Ctrl-C: SIGINT with its default disposition (a background shell
        # would have it ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    lines = []
    while len(lines) < 13 and time.monotonic() < deadline:  # header + 12 calls
        lines.append(process.stdout.readline())
    process.send_signal(signal.SIGINT)
    rest, err = process.communicate(timeout=60)
    assert process.returncode == 0
    assert "Traceback" not in err
    # the closing line counts exactly the call lines printed, however the Ctrl-C fell
    printed = [line for line in lines[1:] + rest.splitlines() if line[:4].strip().isdigit()]
    assert f"stopped after {len(printed)} call(s)" in err
    assert [int(line.split()[0]) for line in printed] == list(range(12))


def _follow_until_sigint(path: Path, calls: int, columns: str) -> tuple[list[str], str]:
    """``summary --follow path`` in a subprocess, SIGINT once ``calls`` rows are out."""
    import os
    import signal
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env["COLUMNS"] = columns
    process = subprocess.Popen(
        [sys.executable, "-m", "cacheviz", "summary", "--follow", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    lines = []
    while len(lines) < calls + 1 and time.monotonic() < deadline:  # header + the calls
        lines.append(process.stdout.readline())
    process.send_signal(signal.SIGINT)
    rest, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in err
    return lines + rest.splitlines(), err


def test_ctrl_c_prints_the_running_totals_of_summary(tmp_path, capsys):
    from cacheviz.cli._shared import usd

    sample = SAMPLES / "reported_usage.jsonl"  # billed from reported usage, cache reads
    path = tmp_path / "s.jsonl"
    path.write_text(sample.read_text())
    out, _ = _follow_until_sigint(path, 15, "1000")
    (totals,) = [line for line in out if line.startswith("totals")]
    assert out[-1] == totals  # after the rows
    # the same figures, one definition each, as the summary of the whole file
    assert app.main(["summary", str(sample), "--json"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    assert doc["billed_usd"] and doc["waste_usd"] is not None
    assert totals.startswith(f"totals of the 15 call(s) read: billed {usd(doc['billed_usd'])}")
    assert f"waste {usd(doc['waste_usd'])} = billed" in totals
    assert "hit ratio " in totals and "hit ratio n/a" not in totals
    capsys.readouterr()
    assert app.main(["summary", str(sample)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    headline = totals[totals.index("; waste") :]
    assert last.endswith(headline)  # waste and hit ratio exactly as summary prints them


def test_ctrl_c_totals_fit_80_columns(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text((SAMPLES / "environment_details.jsonl").read_text())
    out, err = _follow_until_sigint(path, 10, "80")
    start = next(i for i, line in enumerate(out) if line.startswith("totals"))
    assert "billed n/a (no reported usage); waste $" in " ".join(" ".join(out[start:]).split())
    assert all(len(line) <= 80 for line in out[start:])
    assert all(len(line) <= 120 for line in err.splitlines())


def test_follow_prints_totals_when_stop_ends_it(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text((SAMPLES / "append_only.jsonl").read_text())
    out = io.StringIO()
    checks = iter([False, True])
    seen = []

    def totals_of(doc):
        seen.append(len(doc["calls"]))
        return "totals: seen"

    follow(
        path,
        out,
        columns=app.SUMMARY_COLUMNS,
        row_of=app.call_row,
        poll=0.01,
        stop=lambda: next(checks),
        totals_of=totals_of,
    )
    assert seen == [12] and out.getvalue().splitlines()[-1] == "totals: seen"


# -- issue 29 items 5 and 9: a rotated log, what can't be followed, an endless line ----------


def _rows(out: io.StringIO) -> list[int]:
    return [int(r.split()[0]) for r in out.getvalue().splitlines()[1:] if r[:4].strip().isdigit()]


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_follow_starts_again_when_the_log_is_truncated_or_rotated(tmp_path, capsys, how):
    lines = (SAMPLES / "environment_details.jsonl").read_text().splitlines()
    path = tmp_path / "live.jsonl"
    path.write_text("\n".join(lines[:4]) + "\n")
    out = io.StringIO()
    checks = [0]

    def stop() -> bool:
        checks[0] += 1
        if checks[0] == 3:  # after the first four calls were printed
            if how == "truncated":
                path.write_text("\n".join(lines[:2]) + "\n")  # shorter: cut and rewritten
            else:
                new = tmp_path / "new.jsonl"
                new.write_text("\n".join(lines[:6]) + "\n")
                new.replace(path)  # a new file under the same name (logrotate's create)
        return checks[0] >= 8

    printed = follow(
        path, out, columns=app.SUMMARY_COLUMNS, row_of=app.call_row, poll=0.01, stop=stop
    )
    err = capsys.readouterr().err
    again = [0, 1] if how == "truncated" else [0, 1, 2, 3, 4, 5]
    assert _rows(out) == [0, 1, 2, 3, *again]  # the new file's calls, from its first
    assert printed == len(again)
    [said] = [e for e in err.splitlines() if "from its start" in e]
    word = "truncated" if how == "truncated" else "replaced by a new file"
    assert said == f"cacheviz: {path} was {word}; following it again from its start"


@pytest.mark.parametrize("target", ["folder", "/dev/zero", "fifo"])
def test_follow_refuses_what_never_grows_in_one_line(tmp_path, capsys, target):
    import os

    if target == "folder":
        path = tmp_path
    elif target == "fifo":
        path = tmp_path / "pipe.jsonl"
        os.mkfifo(path)
    else:
        path = Path(target)
        if not path.exists():
            pytest.skip("no /dev/zero here")
    started = time.monotonic()
    status = app.main(["summary", str(path), "--follow"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and time.monotonic() - started < 30
    assert err[-1].startswith(f"cacheviz: error: {path}: --follow reads a file as it grows")


@pytest.mark.slow
def test_follow_skips_a_line_past_the_limit_unread(tmp_path, capsys, monkeypatch):
    """A 12 MiB line with the line limit lowered to 1 MiB: named, skipped, the calls
    around it printed."""
    monkeypatch.setenv("CACHEVIZ_MAX_LINE_MB", "1")
    lines = (SAMPLES / "environment_details.jsonl").read_text().splitlines()
    huge = '{"junk": "' + "x" * (12 << 20) + '"}'
    path = tmp_path / "live.jsonl"
    path.write_text("\n".join([*lines[:2], huge, *lines[2:4]]) + "\n")
    out = io.StringIO()
    checks = [0]

    def stop() -> bool:
        checks[0] += 1
        return checks[0] >= 2

    follow(path, out, columns=app.SUMMARY_COLUMNS, row_of=app.call_row, poll=0.01, stop=stop)
    assert _rows(out) == [0, 1, 2, 3]
    err = capsys.readouterr().err
    said = "cacheviz: skipped line 3: the line is 12.0 MiB, past the line length limit of 1 MiB"
    assert said in err and "CACHEVIZ_MAX_LINE_MB" in err


@pytest.mark.parametrize("window", [1 << 20, 4 << 20])
def test_a_line_past_the_limit_is_never_held_whole(tmp_path, window):
    """The line is read through the window and only counted: the memory of the read
    stays near the window (held whole, the 24 MiB line would take 24 MiB at least)."""
    import tracemalloc

    from cacheviz.formats import _lines

    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * (24 << 20) + b'\n{"b": 2}\n{"c": 3')
    token = _lines.MAX_LINE.set(1 << 20)
    tracemalloc.start()
    try:
        with path.open("rb") as handle:
            got = [
                (offset, raw.length if isinstance(raw, _lines.Overlong) else bytes(raw), ended)
                for offset, raw, ended in _lines._file_lines(handle, path.stat().st_size, window)
            ]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        _lines.MAX_LINE.reset(token)
    start = 9 + (24 << 20) + 1
    assert got == [
        (0, b'{"a": 1}', True),
        (9, 24 << 20, True),
        (start, b'{"b": 2}', True),
        (start + 9, b'{"c": 3', False),
    ]
    assert peak < window + (2 << 20)


def test_follow_names_threads_as_summary_does_and_explains_its_marks(realdata, tmp_path):
    # issue 33, items 7 and 10: one naming scheme (no `sidechain:6340ddef` in the follow
    # view), and the legend of the drift / miss marks when following stops
    (source,) = (realdata / "claude_code_jsonl").glob("d-kimuson*5c0375b4*.jsonl")
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    out = io.StringIO()
    checks = iter([False, True])
    follow(
        path,
        out,
        columns=app.SUMMARY_COLUMNS,
        row_of=app.call_row,
        poll=0.01,
        stop=lambda: next(checks),
        totals_of=lambda doc: running_totals(doc, None),
    )
    lines = out.getvalue().splitlines()
    summary = cacheviz.load(path).analyze().calls
    named = {line.split()[1] for line in lines[1:] if line[:3].strip().isdigit()}
    assert "sidechain" not in out.getvalue()
    assert named == {name.split()[0] for name in summary["thread"]} == {"main", "sub-agent:"}
    assert lines[-1].startswith("totals of the 20 call(s) read")
    # a session with a miss: the legend comes with the totals
    path = tmp_path / "usage.jsonl"
    path.write_text((SAMPLES / "reported_usage.jsonl").read_text())
    out = io.StringIO()
    checks = iter([False, True])
    follow(
        path,
        out,
        columns=app.SUMMARY_COLUMNS,
        row_of=app.call_row,
        poll=0.01,
        stop=lambda: next(checks),
        totals_of=lambda doc: running_totals(doc, None),
    )
    lines = out.getvalue().splitlines()
    assert any("◌ miss: ttl_expired" in line for line in lines)
    assert lines[-2].startswith("legend: ◌ miss: the provider read less")
