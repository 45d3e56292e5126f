"""One read per file: a session's content hash comes from its reader's own read (issue 32)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cacheviz.formats import _lines
from cacheviz.scanning._walk import Unit
from cacheviz.scanning._worker import content_hash, run_unit

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def _unit(path: Path) -> Unit:
    return Unit(path, (path,), "project")


@pytest.mark.parametrize("name", ["append_only.jsonl", "compaction.jsonl"])
def test_the_hash_fed_by_the_read_is_the_files_hash(tmp_path: Path, monkeypatch, name) -> None:
    path = tmp_path / name
    shutil.copy(SAMPLES / name, path)
    separate: list[tuple[Path, ...]] = []

    def counted(members: tuple[Path, ...]) -> str:
        separate.append(members)
        return content_hash(members)

    monkeypatch.setattr("cacheviz.scanning._worker.content_hash", counted)
    result = run_unit(_unit(path))
    assert result.status == "ok"
    assert result.content_hash == content_hash((path,))
    assert separate == []  # the file was not read a second time to hash it


def test_a_read_that_stops_early_is_hashed_apart(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"{not json\n" + (SAMPLES / "append_only.jsonl").read_bytes())
    result = run_unit(_unit(path))
    assert result.content_hash == content_hash((path,))
    assert _lines.READ_TAP.get() is None  # reset after the unit


def test_a_missing_file_fails_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "gone.jsonl"
    result = run_unit(_unit(path))
    assert result.status == "failed" and result.content_hash == ""
    assert result.error is not None and "No such file" in result.error


def test_one_unit_is_analysed_without_a_pool(tmp_path: Path, monkeypatch) -> None:
    import cacheviz
    from cacheviz.scanning import _pool

    path = tmp_path / "one.jsonl"
    shutil.copy(SAMPLES / "append_only.jsonl", path)

    def no_pool(workers: int) -> None:
        raise AssertionError("a pool was started for one unit")

    monkeypatch.setattr(_pool, "POOL_BYTES", 0)  # however big the unit
    monkeypatch.setattr(_pool, "_spawned", no_pool)
    result = cacheviz.scan([path], cache=False, jobs=2)
    assert result.calls.height > 0
