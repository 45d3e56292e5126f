"""``scan`` under odd trees, damaged caches, torn files and bad options."""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest

import cacheviz
from cacheviz.cli import main
from cacheviz.formats.native import record_line

USAGE = {
    "input_tokens": 10,
    "cache_creation_input_tokens": 2000,
    "cache_read_input_tokens": 0,
    "output_tokens": 5,
}


def _lines(n: int = 3, tag: str = "a") -> list[str]:
    """``n`` calls of one thread in the cacheviz request log (no response ids)."""
    out = []
    for call in range(n):
        messages = []
        for i in range(call + 1):
            messages += [
                {"role": "user", "content": f"{tag} question {i}"},
                {"role": "assistant", "content": f"answer {i}"},
            ]
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 8,
            "system": "You are careful. " * 50,
            "messages": messages[:-1],
        }
        out.append(
            record_line(
                body,
                provider="anthropic",
                model="claude-sonnet-4-5",
                api="messages",
                ts=f"2026-01-0{call + 1}T10:00:00Z",
                usage=USAGE,
            )
        )
    return out


def _write(path, n=3, tag="a", *, end="\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(_lines(n, tag)) + end, encoding="utf-8")
    return path


def _scan(*paths, **options):
    options.setdefault("cache", False)
    options.setdefault("jobs", 1)
    options.setdefault("progress", False)
    return cacheviz.scan(list(paths), **options)


def _status(result):
    return dict(zip(result.files["path"], result.files["status"], strict=True))


# -- item 4: one file reached two ways counts once --------------------------------------------


def test_the_same_folder_by_two_paths_counts_once(tmp_path, monkeypatch):
    _write(tmp_path / "logs" / "s.jsonl")
    monkeypatch.chdir(tmp_path)
    once = _scan("logs")
    twice = _scan("logs", tmp_path / "logs")
    assert twice.calls.height == once.calls.height == 3
    assert twice.to_dict()["totals"]["billed_usd"] == once.to_dict()["totals"]["billed_usd"]


def test_a_symlinked_file_and_a_copy_count_once(tmp_path):
    session = _write(tmp_path / "logs" / "s.jsonl")
    (tmp_path / "logs" / "link.jsonl").symlink_to(session)
    (tmp_path / "logs" / "copy.jsonl").write_bytes(session.read_bytes())
    result = _scan(tmp_path / "logs")
    assert result.calls.height == 3
    statuses = _status(result)
    assert sorted(statuses.values()).count("duplicate") == 2, statuses


# -- item 5: a damaged cache table is rebuilt ---------------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "drop_column", "drop_rows"])
def test_a_damaged_cache_table_is_rebuilt(tmp_path, damage):
    _write(tmp_path / "logs" / "s.jsonl")
    cache = tmp_path / "cache"
    first = _scan(tmp_path / "logs", cache=cache)
    assert first.calls.height == 3
    table = next(cache.rglob("calls.parquet"))
    if damage == "truncate":
        table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    elif damage == "drop_column":
        frame = pl.read_parquet(table)
        frame.drop(frame.columns[-1]).write_parquet(table)
    else:
        pl.read_parquet(table).head(1).write_parquet(table)
    with pytest.warns(cacheviz.CacheVizWarning, match="damaged"):
        rebuilt = _scan(tmp_path / "logs", cache=cache)
    cached = _scan(tmp_path / "logs", cache=cache)  # and right on the next run, from the cache
    for again in (rebuilt, cached):
        assert again.calls.height == 3
        assert again.to_dict()["totals"]["billed_usd"] == first.to_dict()["totals"]["billed_usd"]


def test_the_cache_is_written_through_a_temporary_file(tmp_path):
    _write(tmp_path / "logs" / "s.jsonl")
    cache = tmp_path / "cache"
    _scan(tmp_path / "logs", cache=cache)
    leftovers = [p for p in cache.rglob("*") if ".tmp" in p.name]
    assert leftovers == []


# -- item 6: a symlinked project folder is followed ---------------------------------------------


def test_a_symlinked_project_folder_is_followed_and_a_loop_is_not(tmp_path):
    real = tmp_path / "elsewhere" / "proj"
    _write(real / "s.jsonl")
    root = tmp_path / "projects"
    root.mkdir()
    (root / "proj").symlink_to(real, target_is_directory=True)
    (real / "loop").symlink_to(root, target_is_directory=True)
    result = _scan(root)
    assert result.calls.height == 3


# -- item 7: a half-written last line -----------------------------------------------------------


def test_a_session_being_written_counts_its_complete_lines(tmp_path):
    path = tmp_path / "logs" / "s.jsonl"
    lines = _lines(3)
    path.parent.mkdir()
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2], "utf-8")
    result = _scan(tmp_path / "logs")
    assert result.calls.height == 2
    [row] = result.files.iter_rows(named=True)
    assert row["status"] == "ok"
    assert any("line 3" in w and "incomplete" in w for w in row["warnings"]), row
    assert "--errors" not in json.dumps(row)


def test_load_skips_a_torn_last_line_with_a_note(tmp_path):
    path = tmp_path / "s.jsonl"
    lines = _lines(3)
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:50], encoding="utf-8")
    with pytest.warns(cacheviz.CacheVizWarning, match="line 3.*incomplete"):
        session = cacheviz.load(path)
    assert len(session.calls) == 2


def test_a_bad_line_in_the_middle_still_fails(tmp_path):
    path = tmp_path / "s.jsonl"
    lines = _lines(3)
    path.write_text("\n".join([lines[0], lines[1][:50], lines[2]]) + "\n", encoding="utf-8")
    with pytest.raises(cacheviz.TranscriptError, match=r"s\.jsonl:2: "):
        cacheviz.load(path)


# -- item 10: non-UTF-8 file names --------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses non-UTF-8 names")
@pytest.mark.parametrize("cache", [True, False])
def test_a_non_utf8_file_name_is_shown_escaped(tmp_path, capsys, cache):
    folder = tmp_path / "logs"
    _write(folder / "good.jsonl")
    name = os.fsdecode(b"bad-\xff\xfe.jsonl")
    _write(folder / name, tag="b")
    args = ["scan", str(folder), "--json", "--jobs", "1"]
    if not cache:
        args.append("--no-cache")
    os.environ["CACHEVIZ_CACHE_DIR"] = str(tmp_path / "cache")
    try:
        assert main(args) == 0
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["calls"] == 6
    assert doc["totals"]["sessions"] == 2


# -- item 15: --jobs ----------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", ["0", "-3", "many"])
def test_jobs_below_one_is_a_usage_error(tmp_path, capsys, jobs):
    _write(tmp_path / "s.jsonl")
    with pytest.raises(SystemExit) as exit_info:
        main(["scan", str(tmp_path), "--jobs", jobs, "--no-cache"])
    assert exit_info.value.code == 2
    assert "--jobs" in capsys.readouterr().err


# -- item 17: FIFOs, devices ---------------------------------------------------------------------


def test_a_fifo_and_a_link_to_a_device_are_skipped_with_a_reason(tmp_path):
    folder = tmp_path / "logs"
    _write(folder / "good.jsonl")
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    result = _scan(folder)  # would hang reading either
    assert result.calls.height == 3
    rows = {os.path.basename(r["path"]): r for r in result.files.iter_rows(named=True)}
    assert rows["pipe.jsonl"]["status"] == "skipped"
    assert "not a regular file" in rows["pipe.jsonl"]["error"]
    assert rows["zero.jsonl"]["status"] == "skipped"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_links_to_proc_the_root_or_above_are_not_walked_and_are_counted(tmp_path):
    """Issue 29 item 9: a link to /proc/self, /, /dev or a folder above the scanned one
    would walk the whole file system (or never end); each is skipped, with why, and a
    link to a project kept elsewhere is still followed."""
    folder = tmp_path / "scan" / "logs"
    _write(folder / "good.jsonl")
    _write(tmp_path / "elsewhere" / "kept.jsonl", tag="k")
    (folder / "proc").symlink_to("/proc/self", target_is_directory=True)
    (folder / "everything").symlink_to("/", target_is_directory=True)
    (folder / "devices").symlink_to("/dev", target_is_directory=True)
    (folder / "up").symlink_to(tmp_path, target_is_directory=True)
    (folder / "project").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    result = _scan(folder)
    assert result.calls.height == 6  # good.jsonl and the linked project's kept.jsonl
    rows = {os.path.basename(r["path"]): r for r in result.files.iter_rows(named=True)}
    for name in ("proc", "everything", "devices", "up"):
        assert rows[name]["status"] == "skipped", name
    assert "kernel" in rows["proc"]["error"] and "kernel" in rows["devices"]["error"]
    assert "above the scanned folder" in rows["everything"]["error"]
    assert "above the scanned folder" in rows["up"]["error"]


# -- item 22: the scan page escapes control and bidi characters ---------------------------------


def test_the_scan_page_shows_control_and_bidi_characters_escaped(tmp_path):
    from cacheviz.ui._scan import scan_data, scan_html

    name = "evil\x1b[31m\x07\u202eld.jsonl"
    _write(tmp_path / "logs" / name)
    page = scan_html(scan_data(_scan(tmp_path / "logs")))
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in page


# -- item 24: --since/--until/--tz --------------------------------------------------------------


def test_since_with_a_time_is_honoured(tmp_path, capsys):
    _write(tmp_path / "s.jsonl")  # calls at 10:00 on Jan 1, 2, 3
    assert main(["scan", str(tmp_path), "--json", "--no-cache", "--since", "2026-01-02T11:00"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["calls"] == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--since", "2026-01-03", "--until", "2026-01-01"], "--since"),
        (["--tz", ""], "--tz"),
        (["--since", "yesterday"], "--since"),
    ],
)
def test_bad_time_options_are_one_line_errors(tmp_path, capsys, args, needle):
    _write(tmp_path / "s.jsonl")
    assert main(["scan", str(tmp_path), "--no-cache", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cacheviz: error:") and needle in err and "\n" not in err


# -- item 21: a killed worker --------------------------------------------------------------------


@pytest.mark.slow
def test_a_killed_worker_fails_its_file_only(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(__file__))  # the workers import it too
    import _killer

    from cacheviz.scanning import _pool as pool

    folder = tmp_path / "logs"
    for i in range(4):
        _write(folder / f"s{i}.jsonl", tag=f"t{i}")
    _write(folder / "kill-me.jsonl", tag="k")
    monkeypatch.setattr(pool, "run_batch", _killer.run_batch)
    monkeypatch.setattr(pool, "POOL_BYTES", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cacheviz.CacheVizWarning)  # no "main guard" warning
        result = _scan(folder, jobs=2)
    assert result.calls.height == 12
    [failed] = result.failed.iter_rows(named=True)
    assert failed["path"].endswith("kill-me.jsonl")
    assert "worker process" in failed["error"] and "died" in failed["error"]


@pytest.mark.slow
def test_a_killed_worker_is_named_on_stderr_counted_and_the_scan_goes_on(
    tmp_path, monkeypatch, capsys
):
    """Issue 29 item 10: ``cacheviz scan`` names the file whose worker was killed (SIGKILL,
    as the out-of-memory killer sends) in one line on stderr and counts it as failed."""
    monkeypatch.syspath_prepend(os.path.dirname(__file__))  # the workers import it too
    import _killer

    from cacheviz.scanning import _pool as pool

    folder = tmp_path / "logs"
    for i in range(4):
        _write(folder / f"s{i}.jsonl", tag=f"t{i}")
    killer = _write(folder / "kill-me.jsonl", tag="k")
    monkeypatch.setattr(pool, "run_batch", _killer.run_batch)
    monkeypatch.setattr(pool, "POOL_BYTES", 0)
    assert main(["scan", str(folder), "--no-cache", "--jobs", "2"]) == 0
    out, err = capsys.readouterr()
    [line] = [e for e in err.splitlines() if str(killer) in e]
    assert line.startswith(f"cacheviz: failed: {killer}: the worker process reading it died")
    assert "4 files" in out and "1 failed" in out and "12 calls" in out  # 4 read, 1 failed


# -- issue 29 item 14: a folder chain 1,500 levels deep ---------------------------------------


@pytest.mark.slow  # 7 s on a loaded machine
def test_a_folder_chain_1500_deep_is_walked_without_a_traceback(tmp_path):
    """The walk kept one generator frame per level: Python's recursion limit at ~1,000."""
    root = tmp_path / "root"
    root.mkdir()
    here = os.open(root, os.O_RDONLY)
    try:
        for _ in range(1500):  # by descriptor: the whole path is longer than one name
            os.mkdir("d", dir_fd=here)
            deeper = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = deeper
        log = os.open("s.jsonl", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=here)
        os.write(log, ("\n".join(_lines(3, "a")) + "\n").encode())
        os.close(log)
    finally:
        os.close(here)
    try:
        result = _scan(root)
    finally:
        _remove_deep(root)  # pytest's own clean-up of old temp folders recurses: it would fail
    assert result.files["status"].to_list() == ["ok"]
    assert result.calls.height == 3


def _remove_deep(top):
    """Remove a folder tree of any depth, by descriptors (no recursion, no long paths)."""
    stack = [(os.open(top, os.O_RDONLY), None, "")]  # (folder, its parent, its name there)
    while stack:
        here, parent, name = stack[-1]
        folders = []
        for entry in os.scandir(here):
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                os.unlink(entry.name, dir_fd=here)
        if folders:
            stack.append((os.open(folders[0], os.O_RDONLY, dir_fd=here), here, folders[0]))
            continue
        stack.pop()
        os.close(here)
        if parent is not None:
            os.rmdir(name, dir_fd=parent)
    os.rmdir(top)
