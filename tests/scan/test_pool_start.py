"""The scan pool's transport and start (issue 32): rows back as Arrow IPC, the fork server
started before the walk when the scan looks big and cold, every helper process waited for."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import cacheviz
from cacheviz import _schema
from cacheviz.cli import main
from cacheviz.scanning import _child
from cacheviz.scanning import _pool as pool_module
from cacheviz.scanning import _scanner as scanner_module
from cacheviz.scanning._walk import Unit
from cacheviz.scanning._worker import frames, run_batch, run_unit, table

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
FORKSERVER = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="no fork server here"
)
SCHEMAS = {
    "calls": _schema.SCAN_CALLS,
    "drifts": _schema.SCAN_DRIFTS,
    "misses": _schema.SCAN_MISSES,
}


def _units(names: list[str]) -> list[Unit]:
    return [Unit(SAMPLES / n, (SAMPLES / n,), "samples") for n in names]


def test_a_batch_sends_its_rows_as_arrow_ipc_equal_to_the_lists() -> None:
    """The frames read back from a batch equal the frames built from the units' lists."""
    names = ["sliding_window.jsonl", "append_only.jsonl", "reported_usage.jsonl"]
    listed = [run_unit(u) for u in _units(names)]
    batch = pickle.loads(pickle.dumps(run_batch(_units(names), [None] * len(names))))
    assert [r.path for r in batch.results] == [r.path for r in listed]
    assert all(r.calls is None and r.drifts is None and r.misses is None for r in batch.results)
    assert all(type(data) is bytes for data in batch.tables.values())  # no Python rows pickled
    read = frames([batch])
    by_path = sorted(listed, key=lambda r: r.path)  # what the scanner's tables are ordered by
    for name, schema in SCHEMAS.items():
        expected = table(name, [rows for r in by_path if (rows := getattr(r, name)) is not None])
        assert dict(read[name].schema) == schema
        assert read[name].n_chunks() == 1
        assert_frame_equal(read[name], expected, check_exact=True)
    assert read["calls"].height > 0 and read["drifts"].height > 0


def test_times_go_in_as_microseconds_with_the_values_polars_gives_datetimes() -> None:
    """``table`` builds the time column from integers: the frame polars builds from the
    datetime objects themselves, value for value (rows of every real file and sample)."""
    real = Path(__file__).resolve().parents[3] / "shared" / "realdata"
    paths = sorted(SAMPLES.glob("*.jsonl")) + sorted(real.glob("*/*.jsonl"))
    listed = [run_unit(Unit(p, (p,), "x")) for p in paths]
    parts = [r.calls for r in listed if r.calls is not None]
    assert sum(len(p["ts"]) for p in parts) > 0
    parts.append({**{c: v[:1] for c, v in parts[0].items()}, "ts": [None]})  # no time
    columns = {c: [v for part in parts for v in part[c]] for c in _schema.SCAN_CALLS}
    direct = _schema.frame(_schema.SCAN_CALLS, columns)
    assert_frame_equal(table("calls", parts), direct, check_exact=True)


def test_batches_keep_each_units_rows_together_and_in_order() -> None:
    """Units of several batches, out of path order: by path, each unit's rows as it gave them."""
    first = run_batch(_units(["sliding_window.jsonl", "append_only.jsonl"]), [None, None])
    second = run_batch(_units(["compaction.jsonl"]), [None])
    read = frames([first, second])
    calls = read["calls"]
    assert calls["path"].to_list() == sorted(calls["path"].to_list())
    for path, rows in calls.group_by("path", maintain_order=True):
        assert rows["call"].to_list() == list(range(rows.height)), path


def test_a_fork_server_is_started_early_only_for_a_big_cold_scan(tmp_path, monkeypatch) -> None:
    started: list[bool] = []
    monkeypatch.setattr(_child, "start_server", lambda: started.append(True) or True)
    folder = tmp_path / "p" / "q"
    folder.mkdir(parents=True)
    small = folder / "one.jsonl"
    shutil.copy(SAMPLES / "append_only.jsonl", small)
    assert not _child.start_early([small], 2, cold=True)  # one file: no pool
    assert not _child.start_early([small, small], 2, cold=True)  # under POOL_BYTES
    assert not _child.start_early([tmp_path], 2, cold=True)  # a folder under POOL_BYTES
    monkeypatch.setattr(_child, "POOL_BYTES", small.stat().st_size + 1)
    assert not _child.start_early([tmp_path], 2, cold=True)
    assert not _child.start_early([small], 2, cold=True)  # one file, however big
    (folder / "two.jsonl").write_bytes(b"x")
    assert not _child.start_early([tmp_path], 1, cold=True)  # one worker
    assert not _child.start_early([tmp_path], 2, cold=False)  # something cached
    assert started == []
    assert _child.start_early([tmp_path], 2, cold=True)  # enough in the folder's files
    assert _child.start_early(None, 2, cold=True)  # the agents' default folders
    assert started == [True, True]


def test_a_big_folder_is_looked_through_only_so_far(tmp_path, monkeypatch) -> None:
    for i in range(30):
        (tmp_path / f"f{i:02d}").write_bytes(b"")
    monkeypatch.setattr(_child, "_LOOK", 10)
    assert _child._at_least([tmp_path], 1)  # 10 entries seen: taken as big
    monkeypatch.setattr(_child, "_LOOK", 100)
    assert not _child._at_least([tmp_path], 1)


def test_a_cache_is_cold_until_its_checksums_are_written(tmp_path) -> None:
    assert _child.cold(False, None)
    assert _child.cold(tmp_path / "cache", None)
    folder = tmp_path / "p"
    folder.mkdir()
    shutil.copy(SAMPLES / "append_only.jsonl", folder / "a.jsonl")
    cacheviz.scan([folder], cache=tmp_path / "cache", jobs=1)
    assert not _child.cold(tmp_path / "cache", None)


def _children() -> set[int]:
    """This process's child processes, zombies included (``/proc``)."""
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text()
        out |= {int(pid) for pid in text.split()}
    return out


def _server_pid() -> int | None:
    from multiprocessing import forkserver

    return forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]


def _projects(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    for i, name in enumerate(["sliding_window", "append_only", "compaction", "side_calls"]):
        (root / f"p{i % 2}").mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLES / f"{name}.jsonl", root / f"p{i % 2}" / f"{name}.jsonl")
    return root


@FORKSERVER
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")
@pytest.mark.slow
def test_the_server_runs_during_the_walk_and_nothing_is_left_after(tmp_path, monkeypatch) -> None:
    """A pooled scan from the command line: its fork server was started before the walk,
    and afterwards no process it started is left (running, or a zombie)."""
    if _server_pid() is not None:
        pytest.skip("a fork server of this process runs already")
    root = _projects(tmp_path)
    walk = scanner_module.walk
    during: list[int | None] = []

    def watched(*args, **kwargs):
        during.append(_server_pid())
        return walk(*args, **kwargs)

    monkeypatch.setattr(scanner_module, "walk", watched)
    monkeypatch.setattr(pool_module, "POOL_BYTES", 0)  # a pool even for this little work
    monkeypatch.setattr(_child, "POOL_BYTES", 0)  # and its server started early
    before = _children()
    assert main(["scan", str(root), "--no-cache", "--jobs", "2", "--json"]) == 0
    assert during and during[0] is not None
    assert _server_pid() is None
    assert _children() <= before


@FORKSERVER
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")
def test_an_early_server_is_killed_when_the_scan_turns_out_small(tmp_path, monkeypatch) -> None:
    if _server_pid() is not None:
        pytest.skip("a fork server of this process runs already")
    folder = tmp_path / "p"
    folder.mkdir()
    shutil.copy(SAMPLES / "append_only.jsonl", folder / "a.jsonl")

    def no_pool(workers: int) -> None:
        raise AssertionError("a pool was started for a small scan")

    monkeypatch.setattr(pool_module, "_spawned", no_pool)
    walk = scanner_module.walk
    during: list[int | None] = []

    def watched(*args, **kwargs):
        during.append(_server_pid())
        return walk(*args, **kwargs)

    monkeypatch.setattr(scanner_module, "walk", watched)
    execute = pool_module.execute
    after: list[int | None] = []

    def run(*args, **kwargs):
        ran = execute(*args, **kwargs)
        after.append(_server_pid())
        return ran

    monkeypatch.setattr(pool_module, "execute", run)
    monkeypatch.setattr(_child, "POOL_BYTES", 1)  # started early; the pool's 8 MB: serial
    before = _children()
    result = cacheviz.scan([folder], cache=False, jobs=2)
    assert result.calls.height > 0
    assert during and during[0] is not None  # a folder: started before the walk
    assert after == [None]  # stopped as soon as the scan ran in this process
    assert _server_pid() is None
    assert _children() <= before


@FORKSERVER
@pytest.mark.slow
def test_the_pooled_tables_equal_the_serial_ones(tmp_path, monkeypatch) -> None:
    root = _projects(tmp_path)
    local = cacheviz.scan([root], cache=False, jobs=1)
    monkeypatch.setattr(pool_module, "POOL_BYTES", 0)
    pooled = cacheviz.scan([root], cache=False, jobs=2)
    assert local.drifts.height > 0
    for name in ("calls", "sessions", "busters", "files"):  # ordered by the scan itself
        assert_frame_equal(getattr(local, name), getattr(pooled, name), check_exact=True)
    for name in ("drifts", "misses"):
        left, right = getattr(local, name), getattr(pooled, name)
        key = [c for c in left.columns if left.schema[c] != pl.Float64]
        assert_frame_equal(left.sort(key), right.sort(key), check_exact=True)
