"""The shape runs and content rows read per call (ui/segment_rows.py) are the frame's.

:func:`cacheviz.ui._segment_rows.segment_rows` replaces, for the inspector and the report,
the segments frame (one row per call and segment) by a walk of each call's blocks past
what it shares with the thread's previous call, and :func:`~cacheviz.ui._segment_rows.
call_rows` does the same for the one call whose detail is shown. Here both are compared
with what the segments frame gives (the rows of every call, and the detail documents),
on the samples, on every file of ../shared/realdata, and on generated sessions (threads,
edits, compactions, reordered tools, reported usage).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import cacheviz
from cacheviz.errors import CacheVizError, CacheVizWarning
from cacheviz.ui import _content as content
from cacheviz.ui._detail import drift_detail
from cacheviz.ui._segment_rows import call_rows, report_rows, segment_rows
from cacheviz.ui._shape import shape_runs
from cacheviz.ui.report import TEXT_CHARS

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_sessions").glob("*.jsonl"))
REALDATA = ROOT.parent / "shared" / "realdata"


def _frame_views(analysis: Any) -> tuple[Any, list[tuple[Any, ...]], list[int]]:
    """The shape runs, listed rows and calls with rows, read from the segments frame."""
    segments = analysis.segments  # built: views read it from now on
    listed = list(content._shown(segments).iter_rows())
    calls = segments["call"].unique(maintain_order=True).to_list()
    return shape_runs(analysis), listed, calls


def _detail_calls(analysis: Any, most: int | None) -> list[int]:
    """Every call, or ``most`` of them: each drift's, the first, the last, evenly between."""
    n = analysis.calls.height
    if most is None or n <= most:
        return list(range(n))
    drifts = sorted(set(analysis.drifts["call"].to_list()))[: most // 2]
    step = max(1, n // (most - len(drifts)))
    return sorted({*drifts, *range(0, n, step), n - 1})


def _details(analysis: Any, calls: list[int]) -> list[dict[str, Any]]:
    simulation = analysis.own_simulation
    return [drift_detail(analysis, call, simulation=simulation) for call in calls]


def _check(analysis: Any, details: int | None = None) -> None:
    """The per-call readings against the frame's; ``details``: how many calls' detail
    documents to compare (all by default; every call's rows are compared)."""
    rows = segment_rows(analysis)
    assert rows is not None
    chosen = _detail_calls(analysis, details)
    own_rows = [call_rows(analysis, call) for call in range(analysis.calls.height)]
    own_details = _details(analysis, chosen)
    assert analysis._segments is None  # neither built the frame
    shape, listed, calls = _frame_views(analysis)
    # every call's rows are the frame's, and so is each detail (now read from the frame)
    assert own_rows == [content.frame_rows(analysis, call) for call in range(len(own_rows))]
    assert _details(analysis, chosen) == own_details
    assert_frame_equal(rows.shape, shape)
    assert rows.listed == listed
    assert rows.calls == calls
    # the content browser from either gives the same documents and texts
    texts: dict[str, str] = {}
    frame_texts: dict[str, str] = {}
    assert content.all_contents(analysis, texts, TEXT_CHARS, rows=rows) == content.all_contents(
        analysis, frame_texts, TEXT_CHARS
    )
    assert list(texts.items()) == list(frame_texts.items())


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
@pytest.mark.slow
def test_segment_rows_are_the_frames_on_samples(path: Path) -> None:
    _check(cacheviz.load(path).analyze())


def _realdata() -> list[Path]:
    if not REALDATA.is_dir():
        return []
    return sorted(p for p in REALDATA.rglob("*") if p.is_file() and p.suffix != ".md")


@pytest.mark.realdata
@pytest.mark.parametrize("path", _realdata(), ids=lambda p: p.name[:60])
def test_segment_rows_are_the_frames_on_realdata(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        try:
            analysis = cacheviz.load(path).analyze()
        except CacheVizError:
            pytest.skip("not a transcript on its own (a sidecar file)")
    _check(analysis, details=30)


def test_the_report_does_not_build_the_segments_frame(monkeypatch) -> None:
    """And its data is the same as when it is read from the frame."""
    from cacheviz.ui.report import read_details, report_data

    analysis = cacheviz.load(SAMPLES[0]).analyze()
    data = report_data(analysis)
    assert analysis._segments is None
    monkeypatch.setattr("cacheviz.ui._segment_rows.report_rows", lambda analysis: None)
    framed = cacheviz.load(SAMPLES[0]).analyze()
    from_frame = report_data(framed)
    assert framed._segments is not None
    assert read_details(from_frame) == read_details(data)
    assert {k: v for k, v in from_frame.items() if k != "details_gz"} == {
        k: v for k, v in data.items() if k != "details_gz"
    }


def test_offsets_that_do_not_match_the_blocks_fall_back_to_the_frame() -> None:
    analysis = cacheviz.load(SAMPLES[0]).analyze()
    expected, _, _ = _frame_views(cacheviz.load(SAMPLES[0]).analyze())
    analysis.offsets[1] = analysis.offsets[1][:-1]
    assert segment_rows(analysis) is None
    assert report_rows(analysis) is None
    analysis.offsets[1] = cacheviz.load(SAMPLES[0]).analyze().offsets[1]
    assert_frame_equal(shape_runs(analysis, None), expected)


_TOOLS = [
    {"name": f"tool_{i}", "description": f"does thing {i} " * (i + 1), "input_schema": {}}
    for i in range(5)
]
_MODELS = ["claude-sonnet-4-5", "claude-haiku-4-5"]
_SYSTEMS = ["You are a careful agent. " * 30, "You are a careful agent, v2. " * 30]

_step = st.tuples(
    st.sampled_from(
        ["append", "append", "append", "edit", "truncate", "tools", "system", "model", "param"]
    ),
    st.integers(0, 40),
    st.sampled_from(["main", "main", "side"]),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(_step, min_size=1, max_size=14), usage=st.booleans())
@pytest.mark.slow
def test_segment_rows_are_the_frames_on_generated_sessions(
    write_log, anthropic_body, steps, usage
) -> None:
    """Two threads whose histories grow, get edited, compacted, their tools, system,
    model and a cache-keyed parameter changed; with and without reported usage
    (calibrated offsets)."""
    state = {
        name: {"messages": [], "tools": list(_TOOLS), "system": 0, "model": 0, "choice": 0}
        for name in ("main", "side")
    }
    bodies = []
    reported = []
    for n, (op, k, thread) in enumerate(steps):
        own = state[thread]
        history = own["messages"]
        if op == "edit" and history:
            i = k % len(history)
            history[i] = {**history[i], "content": f"{history[i]['content']} (edited {n})"}
        elif op == "truncate" and len(history) > 2:
            del history[: 1 + k % (len(history) - 1)]
        elif op == "tools":
            tools = own["tools"]
            own["tools"] = tools[k % len(tools) :] + tools[: k % len(tools)]
        elif op == "system":
            own["system"] = 1 - own["system"]
        elif op == "model":  # another model's cache: nothing of the prefix is cached
            own["model"] = 1 - own["model"]
        elif op == "param":  # a keyed parameter: the messages are no longer cached
            own["choice"] = 1 - own["choice"]
        first = f"{thread} task: " + "word " * (20 + k)
        if not history:
            history.append({"role": "user", "content": first})
        history.append({"role": "assistant", "content": f"step {n} " + "reply " * k})
        history.append({"role": "user", "content": f"result {n} " + "data " * (k + 3)})
        system = [{"type": "text", "text": _SYSTEMS[own["system"]]}]
        model = _MODELS[own["model"]]
        body = anthropic_body(list(history), system=system, tools=own["tools"], model=model)
        if own["choice"]:
            body["tool_choice"] = {"type": "any"}
        bodies.append(body)
        total = 400 + 50 * n + 7 * k
        reported.append(
            {"input_tokens": total // 3, "cache_read_input_tokens": total - total // 3}
            if usage and k % 3
            else None
        )
    path = write_log(bodies, usage=reported)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        analysis = cacheviz.load(path).analyze()
    _check(analysis)
