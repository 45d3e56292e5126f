"""The live inspector's Python side: it follows a recorder or a log file and sends only the
new calls' rows (an ``append`` message) when the earlier rows are unchanged."""

import io
import json
import time
from pathlib import Path

import polars as pl
import pytest

import cacheviz
from cacheviz.ui import _timeline as timeline_view
from cacheviz.ui._detail import drift_detail
from cacheviz.ui._shape import shape_runs
from cacheviz.ui.live import WAITING, LiveInspector

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def _table(buffer):
    return pl.read_ipc_stream(io.BytesIO(bytes(buffer)))


def _lines(name="append_only.jsonl"):
    return (SAMPLES / name).read_text(encoding="utf-8").splitlines()


def _live(source):
    live = LiveInspector(source, poll=60)
    live.stop()  # the tests drive refresh() themselves
    return live


def test_waits_then_builds_then_appends_only_the_new_rows(fake_comm):
    lines = _lines()
    assert len(lines) >= 4
    rec = cacheviz.record()
    live = _live(rec)
    assert live.box.children[0].value == WAITING
    rec.writer.write(lines[0])
    assert live.refresh() == "built"
    inspector = live.box.inspector
    comm = inspector.comm = fake_comm
    for line in lines[1:]:
        rec.writer.write(line)
    assert live.refresh() == "appended"

    [(message, buffers)] = comm.sent  # one message, nothing else re-sent
    assert message["method"] == "custom"
    assert message["content"]["type"] == "append"
    full = cacheviz.load(SAMPLES / "append_only.jsonl").analyze()
    assert message["content"]["meta"]["n_calls"] == full.calls.height
    timeline, shape, costs = (_table(b) for b in buffers)
    assert timeline.equals(timeline_view.timeline(full).slice(1))
    assert shape.equals(shape_runs(full).filter(pl.col("call") >= 1))
    assert costs["call"].to_list() == list(range(1, full.calls.height))
    # the Python side's state follows: a new view gets the whole session
    assert _table(inspector._timeline).equals(timeline_view.timeline(full))
    assert inspector.meta["n_calls"] == full.calls.height
    assert inspector.analysis.calls.height == full.calls.height
    assert live.refresh() == "unchanged"


def test_a_call_that_sorts_before_others_resends_the_whole_state(tmp_path, fake_comm):
    lines = _lines()
    log = tmp_path / "run.jsonl"
    log.write_text(lines[0] + "\n" + lines[2] + "\n")
    live = _live(log)
    assert live.refresh() == "unchanged"  # built by the constructor
    comm = live.inspector.comm = fake_comm
    with log.open("a") as handle:  # a long call sent earlier ends last
        handle.write(lines[1] + "\n")
    assert live.refresh() == "replaced"
    updates = [data for data, _ in comm.sent if data["method"] == "update"]
    sent = {key for data in updates for key in data["state"]}
    sent |= {path[0] for data in updates for path in data.get("buffer_paths", [])}
    assert sent >= {"_timeline", "_shape", "_costs", "meta"}
    assert not [m for m, _ in comm.methods() if m == "custom"]
    assert _table(live.inspector._timeline)["call"].to_list() == [0, 1, 2]


def test_the_thread_follows_a_recorder(tmp_path):
    lines = _lines()
    rec = cacheviz.record()
    live = rec.inspect()
    try:
        rec.writer.write(lines[0])
        deadline = time.monotonic() + 30
        while live.inspector is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live.inspector is not None
        assert live.inspector.analysis.calls.height == 1
    finally:
        live.stop()


def test_live_by_path_through_cacheviz_inspect(tmp_path):
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(_lines()[:2]) + "\n")
    live = cacheviz.inspect(live=log)
    live.stop()
    assert live.inspector.analysis.calls.height == 2
    assert json.loads(json.dumps(live.inspector.meta))["n_calls"] == 2


def test_the_controls_are_followed(tmp_path):
    lines = _lines()
    rec = cacheviz.record()
    for line in lines[:2]:
        rec.writer.write(line)
    live = _live(rec)
    live.inspector.resimulate("openai", "gpt-5")
    rec.writer.write(lines[2])
    assert live.refresh() == "appended"
    assert live.inspector.simulation.provider == "openai"
    assert live.inspector.meta["target"]["provider"] == "openai"


@pytest.mark.parametrize("broken", ["", "not json\n"])
def test_a_log_without_a_whole_call_waits(tmp_path, broken):
    log = tmp_path / "run.jsonl"
    log.write_text(broken)
    live = _live(log)
    assert live.inspector is None
    assert live.box.children[0].value == WAITING


def test_a_detail_in_the_live_inspector_does_not_build_the_segments_frame(tmp_path):
    path = tmp_path / "live.jsonl"
    lines = _lines("compaction.jsonl")
    path.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    live = _live(path)
    assert live.inspector is not None
    with path.open("a", encoding="utf-8") as out:
        out.write("\n".join(lines[3:]) + "\n")
    assert live.refresh() == "appended"
    inspector = live.box.inspector
    last = inspector.analysis.calls.height - 1
    assert last == len(lines) - 1
    inspector.selected_call = last
    detail = inspector._detail
    assert detail["segments"] and "error" not in detail
    assert getattr(inspector.analysis, "_segments", None) is None
    full = cacheviz.load(SAMPLES / "compaction.jsonl").analyze()
    full.segments  # noqa: B018 - the detail read from the frame
    assert detail["source"] == "live.jsonl"  # the file the call came from
    expected = drift_detail(full, last, simulation=inspector.simulation)
    assert detail == {**expected, "source": "live.jsonl"}
