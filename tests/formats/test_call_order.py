"""Issue 29 item 12: a record's clock never reorders a session silently.

Built from the audit's description: one record with a clock 2 minutes behind used to be
sorted before the calls written above it, creating a phantom side call and 2.5x the
waste; ``--follow`` printed one row twice and never the late one.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest

import cacheviz
from cacheviz.cli import _app as app
from cacheviz.cli._follow import follow
from cacheviz.errors import CacheVizWarning
from cacheviz.formats._lines import call_order
from cacheviz.formats.native import record_line
from cacheviz.model import Call

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
SYSTEM = "You are a careful coding agent. Follow the repository's conventions. " * 40


def _bodies(n: int) -> list[dict]:
    """A conversation growing by one turn per call (each call extends the one before)."""
    messages: list[dict] = []
    bodies = []
    for i in range(n):
        messages = [*messages, {"role": "user", "content": f"step {i}: " + "details " * 60}]
        bodies.append(
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 1024,
                "system": [{"type": "text", "text": SYSTEM}],
                "messages": messages,
            }
        )
        messages = [*messages, {"role": "assistant", "content": f"done {i}"}]
    return bodies


def _line(body: dict, seconds: float, *, duration_ms: float | None = None) -> str:
    ts = (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
    line = record_line(body, provider="anthropic", model=body["model"], api="messages", ts=ts)
    if duration_ms is None:
        return line
    record = json.loads(line)
    record["response"] = {"duration_ms": duration_ms}
    return json.dumps(record)


def _write(tmp_path, name: str, lines: list[str]):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_record_two_minutes_behind_keeps_its_place_and_is_named(tmp_path):
    bodies = _bodies(6)
    clean = _write(tmp_path, "clean.jsonl", [_line(b, 10 * i) for i, b in enumerate(bodies)])
    times = [10 * i for i in range(6)]
    times[3] -= 120  # line 4's clock is 2 minutes behind
    skewed = _write(
        tmp_path, "skewed.jsonl", [_line(b, t) for b, t in zip(bodies, times, strict=True)]
    )

    with pytest.warns(CacheVizWarning) as caught:
        session = cacheviz.load(skewed)
    [warning] = [w for w in caught if "out of step with the records" in str(w.message)]
    text = str(warning.message)
    assert text.startswith(f"{skewed}: 1 record(s)")
    assert (
        "line 4 is 110 s behind" in text
    )  # behind line 3, the latest above it and "\n" not in text
    assert [c.line for c in session.calls] == [1, 2, 3, 4, 5, 6]

    got = session.analyze()
    expected = cacheviz.load(clean).analyze()
    assert got.calls["thread"].to_list() == expected.calls["thread"].to_list()
    assert got.calls["thread"].n_unique() == 1  # no phantom side call
    assert got.calls["prefix_tokens"].to_list() == expected.calls["prefix_tokens"].to_list()
    assert got.headline() == expected.headline()


def test_a_record_whose_clock_is_ahead_is_named_instead_of_those_after_it(tmp_path):
    bodies = _bodies(5)
    times = [0, 10, 20 + 600, 30, 40]  # line 3 is 10 minutes ahead
    path = _write(
        tmp_path, "ahead.jsonl", [_line(b, t) for b, t in zip(bodies, times, strict=True)]
    )
    with pytest.warns(CacheVizWarning, match=r"1 record\(s\).*line 3 is 9.83 min ahead"):
        session = cacheviz.load(path)
    assert [c.line for c in session.calls] == [1, 2, 3, 4, 5]


def test_a_call_still_in_flight_is_ordered_by_its_start_without_a_warning(tmp_path, recwarn):
    """A request log is written when each answer ends: a long call started earlier."""
    bodies = _bodies(3)
    side = {**bodies[0], "messages": [{"role": "user", "content": "summarize " * 50}]}
    lines = [
        _line(bodies[0], 0, duration_ms=2000),
        _line(bodies[1], 30, duration_ms=2000),
        _line(side, 12, duration_ms=25_000),  # started at 12 s, ended at 37 s
        _line(bodies[2], 60, duration_ms=2000),
    ]
    session = cacheviz.load(_write(tmp_path, "flight.jsonl", lines))
    assert [c.line for c in session.calls] == [1, 3, 2, 4]
    assert not [w for w in recwarn if "out of step with the records" in str(w.message)]


def _call(line: int, seconds: float | None) -> Call:
    ts = None if seconds is None else T0 + timedelta(seconds=seconds)
    return Call(
        index=0, line=line, ts=ts, provider="anthropic", api="messages", model="m", blocks=[]
    )


@pytest.mark.parametrize(
    ("times", "order", "named"),
    [
        ([0, 10, 20, 30], [1, 2, 3, 4], []),
        ([0, 10, -100, 30], [1, 2, 3, 4], [(3, 110.0)]),
        ([0, 130, 20, 30], [1, 2, 3, 4], [(2, -110.0)]),
        ([120, 10, 20, 30], [1, 2, 3, 4], [(1, -110.0)]),
        ([0, 10, 9.5, 30], [1, 3, 2, 4], []),  # within the tolerance: by time
        ([0, None, 10, None, 5.5], [1, 2, 3, 4, 5], [(3, -4.5)]),
    ],
)
def test_call_order_keeps_the_order_written(times, order, named):
    calls = [_call(i + 1, t) for i, t in enumerate(times)]
    ordered, skews = call_order([calls])
    assert [c.line for c in ordered] == order
    assert [(c.line, off) for c, off in skews] == named


def test_runs_of_several_files_are_merged_by_time_without_a_warning():
    main = [_call(1, 0), _call(2, 100), _call(3, 200)]
    agent = [_call(1, 50), _call(2, 150)]
    ordered, skews = call_order([main, agent])
    assert [(c.ts - T0).total_seconds() for c in ordered] == [0, 50, 100, 150, 200]
    assert skews == []


def test_follow_prints_each_call_once_including_one_that_lands_late(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    bodies = _bodies(3)
    side = {**bodies[0], "messages": [{"role": "user", "content": "summarize " * 50}]}
    chunks = [
        [_line(bodies[0], 0, duration_ms=1000), _line(bodies[1], 30, duration_ms=1000)],
        [_line(side, 12, duration_ms=25_000)],  # in flight: ordered before line 2
        [_line(bodies[2], 60, duration_ms=1000)],
    ]
    path = tmp_path / "live.jsonl"
    path.write_text("")
    pending = list(chunks)

    def stop() -> bool:  # after each check, the next chunk lands
        if not pending:
            return True
        with path.open("a") as handle:
            handle.write("\n".join(pending.pop(0)) + "\n")
        return False

    out = io.StringIO()
    printed = follow(path, out, columns=app.SUMMARY_COLUMNS, row_of=app.call_row, poll=0, stop=stop)
    rows = [r for r in out.getvalue().splitlines()[1:] if r[:4].strip().isdigit()]
    assert printed == 4 == len(rows)
    # printed as they landed; the late one carries its place in call order (#1)
    assert [int(r.split()[0]) for r in rows] == [0, 1, 1, 3]
