"""The live inspector's state, extended call by call, equals the state built from a full
analysis of the same lines; the widget is sent only the new rows."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import polars as pl
import pytest
from live_sessions import session_lines
from polars.testing import assert_frame_equal

from cacheviz.errors import CacheVizWarning
from cacheviz.formats import native
from cacheviz.ui import _state as state
from cacheviz.ui._live_state import LiveState
from cacheviz.ui.live import LiveInspector

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def _sample(name: str) -> list[str]:
    return (SAMPLES / name).read_text(encoding="utf-8").splitlines(keepends=True)


def _full_state(
    path: Path, target: state.Target | None, targets: tuple[str, ...] | None = None
) -> state.InspectorState:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        analysis = native.read(path, errors="skip").analyze()
    return state.build(analysis, target, targets=targets)


def assert_same_state(got: state.InspectorState, want: state.InspectorState) -> None:
    for name in ("timeline", "shape", "costs"):
        assert_frame_equal(getattr(got, name), getattr(want, name))
    assert (got.compare is None) == (want.compare is None)
    if want.compare is not None:
        assert_frame_equal(got.compare, want.compare)
    assert (got.simulation is None) == (want.simulation is None)
    if want.simulation is not None:
        assert_frame_equal(got.simulation.calls, want.simulation.calls)
    assert got.meta == want.meta
    assert got.status == want.status
    assert got.target == want.target
    assert got.targets == want.targets
    assert got.ttl_seconds == want.ttl_seconds


TARGETS = {
    "recorded": None,
    "openai": state.Target("openai", "gpt-4o"),
    "anthropic-1h": state.Target("anthropic", None, ttl="1h"),
    "vllm": state.Target("vllm"),
}
CASES = [
    ("reported_usage.jsonl", "recorded"),
    ("side_calls.jsonl", "openai"),
    ("compaction.jsonl", "anthropic-1h"),
    ("sliding_window.jsonl", "vllm"),
    (0, "recorded"),
    (5, "openai"),
    (2, "anthropic-1h"),
]


@pytest.mark.parametrize(("source", "target"), CASES, ids=[f"{s}-{t}" for s, t in CASES])
@pytest.mark.slow
def test_after_every_append_the_state_is_the_full_one(tmp_path, source, target):
    lines = _sample(source) if isinstance(source, str) else session_lines(source, 24)
    chosen = TARGETS[target]
    log = tmp_path / "run.jsonl"
    log.write_text("", encoding="utf-8")
    live = LiveState(log)
    live.choose(chosen, None)
    grew = 0
    for line in lines:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        before = live.state.timeline.height if live.state is not None else 0
        got, appended = live.update()
        if got is None:
            continue
        assert_same_state(got, _full_state(log, chosen))
        if appended and got.timeline.height > before:
            grew += 1
            timeline, shape, costs = live.delta
            assert timeline["call"].to_list() == list(range(before, got.timeline.height))
            assert costs["call"].to_list() == list(range(before, got.timeline.height))
            assert shape["call"].min() >= before
    assert grew >= len(lines) // 2  # most appends only grew the tables


def _table(buffer) -> pl.DataFrame:
    return pl.read_ipc_stream(io.BytesIO(bytes(buffer)))


def test_the_widget_follows_with_only_the_new_rows(tmp_path, fake_comm):
    lines = session_lines(1, 20)
    log = tmp_path / "run.jsonl"
    log.write_text(lines[0], encoding="utf-8")
    live = LiveInspector(log, poll=60)
    live.stop()
    inspector = live.box.inspector
    inspector._message(None, {"type": "compare"})  # the comparison, once the view asks
    comm = inspector.comm = fake_comm
    for line in lines[1:]:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        comm.sent.clear()
        outcome = live.refresh()
        # the comparison keeps the targets of the first analysis (state.rebuild)
        want = _full_state(log, None, inspector.targets)
        shown = inspector.state
        assert_same_state(shown, want)
        # the Python side's traits hold the whole state, for a view opened later
        assert _table(inspector._timeline).equals(want.timeline)
        assert _table(inspector._shape).equals(want.shape)
        assert _table(inspector._costs).equals(want.costs)
        assert inspector.meta == want.meta
        if outcome == "appended":
            [(message, buffers)] = [m for m in comm.sent if m[0]["method"] == "custom"]
            assert message["content"]["type"] == "append"
            timeline = _table(buffers[0])
            assert timeline.height == want.timeline.height - timeline["call"][0]
            assert_frame_equal(
                timeline, want.timeline.filter(pl.col("call") >= timeline["call"][0])
            )
    assert live.updates["appended"] >= len(lines) // 2


def test_a_target_picked_in_the_widget_is_followed(tmp_path):
    lines = _sample("reported_usage.jsonl")
    log = tmp_path / "run.jsonl"
    log.write_text("".join(lines[:4]), encoding="utf-8")
    live = LiveInspector(log, poll=60)
    live.stop()
    inspector = live.box.inspector
    inspector._message(None, {"type": "compare"})  # the comparison, once the view asks
    inspector.resimulate("openai", "gpt-4o")
    for line in lines[4:]:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        assert live.refresh() == "appended"
        want = _full_state(log, state.Target("openai", "gpt-4o"), inspector.targets)
        assert_same_state(inspector.state, want)


def test_an_arrow_stream_grows_by_record_batches():
    from cacheviz.ui._shared import ipc
    from cacheviz.ui.widget import _ipc_append

    first = pl.DataFrame(
        {"call": [0, 1], "cost": [0.5, None]}, schema={"call": pl.Int32, "cost": pl.Float64}
    )
    more = pl.DataFrame({"call": [2], "cost": [1.25]}, schema=first.schema)
    grown = _ipc_append(ipc(first), more)
    assert grown is not None
    assert _table(grown).equals(pl.concat([first, more]))
    other = more.with_columns(pl.col("call").cast(pl.Int64))
    assert _ipc_append(ipc(first), other) is None  # another schema: serialized again


REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"


@pytest.mark.realdata
def test_another_format_is_analysed_in_full_and_its_rows_compared(tmp_path):
    """A Claude Code transcript (not the request log): the whole log is analysed again."""
    source = (
        REALDATA
        / "claude_code_jsonl"
        / "chiphuyen__sniffly__ba79134d-b6e9-4867-af0c-6941038c9e4b.jsonl"
    )
    if not source.is_file():
        pytest.skip("no ../shared/realdata")
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    log = tmp_path / "session.jsonl"
    cut = len(lines) // 2
    log.write_text("".join(lines[:cut]), encoding="utf-8")
    live = LiveInspector(log, poll=60)
    live.stop()
    assert live.inspector is not None
    live.inspector._message(None, {"type": "compare"})  # the comparison, once the view asks
    assert not live.live.log.incremental
    assert live.refresh() == "unchanged"  # nothing written: not analysed again
    reloads = live.live.log.reloads
    with log.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines[cut:]))
    assert live.refresh() in ("appended", "replaced")
    assert live.live.log.reloads == reloads + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        from cacheviz.formats import load

        analysis = load(log, errors="skip").analyze()
    want = state.build(analysis, live.inspector.state.target, targets=live.inspector.targets)
    assert_same_state(live.inspector.state, want)
