"""Live inspector budget: the work per appended call stays flat as the session grows.

    python bench/bench_live.py [--appends 9] [--sizes 100,400,1600,6400]

For logs of 100, 400, 1,600 (and 6,400) calls - a generated Anthropic session with
reported usage: a main conversation with a sliding window, a drift every 50 calls and a
side call on another model every 25 - a live inspector is built on each log, then calls
are appended one at a time, the sizes taking turns (a change of the shared machine's
load falls on all of them alike), and each ``refresh()`` is timed in CPU time (the best
and the median of ``--appends``). The baseline, in the same run, is what the live
inspector did before (``cacheviz.ui.live`` until this change): load the whole log,
analyse it and rebuild the inspector state, for every appended call.

Reported: per-append CPU ms at each size, and the ratio per quadrupling of the log
(budget: about 1x, against about 4x for the baseline), with the load average.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _shared import SYSTEM, sliding_window

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from cacheviz.formats import native  # noqa: E402
from cacheviz.formats.native import record_line  # noqa: E402
from cacheviz.ui import _state as state  # noqa: E402
from cacheviz.ui.live import LiveInspector  # noqa: E402

MODEL = "claude-sonnet-4-5"
SIDE = "claude-haiku-4-5"


def lines(count: int) -> list[str]:
    """``count`` log lines of the generated session (module docstring)."""
    system = SYSTEM
    history: list[dict] = []
    out = []
    for i in range(count):
        ts = f"2026-01-01T{i * 7 // 3600:02d}:{i * 7 // 60 % 60:02d}:{i * 7 % 60:02d}Z"
        if i % 25 == 24:  # a side call: a title asked of another model
            body = {
                "model": SIDE,
                "max_tokens": 64,
                "messages": [{"role": "user", "content": f"A title for step {i}"}],
            }
            usage = {"input_tokens": 12, "output_tokens": 8}
            out.append(
                record_line(
                    body, provider="anthropic", model=SIDE, api="messages", ts=ts, usage=usage
                )
            )
            continue
        role = "user" if len(history) % 2 == 0 else "assistant"
        history.append(
            {"role": role, "content": [{"type": "text", "text": f"step {i} of the task " * 12}]}
        )
        window = sliding_window(history, i)
        body = {"model": MODEL, "max_tokens": 512, "system": system, "messages": window}
        sent = 1900 + 60 * len(window)
        read = 0 if i % 50 == 49 or not i else 1900 + 60 * (len(window) - 2)
        usage = {
            "input_tokens": sent - read,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": 0,
            "output_tokens": 40,
        }
        out.append(
            record_line(body, provider="anthropic", model=MODEL, api="messages", ts=ts, usage=usage)
        )
    return [f"{line}\n" for line in out]


def _cpu(run) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def _baseline(log: Path, shown: state.InspectorState) -> state.InspectorState:
    """The live inspector before: load, analyse and rebuild the state of the whole log."""
    analysis = native.read(log, errors="skip").analyze()
    return state.rebuild(shown, analysis)


class _Follower:
    """A live inspector on a log of ``size`` calls, and the lines still to append."""

    def __init__(self, size: int, more: int) -> None:
        self.size = size
        self.every = lines(size + more)
        self.log = Path(tempfile.mkdtemp(prefix="bench_live_")) / "run.jsonl"
        self.log.write_text("".join(self.every[:size]), encoding="utf-8")
        self.live = LiveInspector(self.log, poll=3600)
        self.live.stop()
        self.next = size

    def append(self) -> None:
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(self.every[self.next])
        self.next += 1


def measure(sizes: list[int], appends: int, baseline_appends: int) -> list[tuple[float, ...]]:
    """Per size: CPU seconds per appended call, live (best, median) and full re-analysis.

    The sizes take turns, one append each, so a change in the machine's load falls on
    all of them alike.
    """
    followers = [_Follower(size, appends + baseline_appends) for size in sizes]
    times: list[list[float]] = [[] for _ in sizes]
    for _ in range(appends):
        for follower, spent in zip(followers, times, strict=True):
            follower.append()
            spent.append(_cpu(follower.live.refresh))
    full: list[list[float]] = [[] for _ in sizes]
    for _ in range(baseline_appends):
        for follower, spent in zip(followers, full, strict=True):
            follower.append()
            shown = follower.live.inspector.state
            spent.append(_cpu(lambda f=follower, s=shown: _baseline(f.log, s)))
    out = []
    for follower, live, whole in zip(followers, times, full, strict=True):
        assert follower.live.updates["appended"] == appends, follower.live.updates
        out.append((min(live), statistics.median(live), min(whole)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--appends", type=int, default=9)
    parser.add_argument("--baseline-appends", type=int, default=2)
    parser.add_argument("--sizes", default="100,400,1600")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    warnings.simplefilter("ignore")
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores, shared)")
    rows = []
    for size, (live, median, full) in zip(
        sizes, measure(sizes, args.appends, args.baseline_appends), strict=True
    ):
        rows.append((size, live, full))
        print(
            f"{size:>6} calls: per appended call {live * 1000:8.1f} ms live (best; median "
            f"{median * 1000:.1f}), {full * 1000:8.1f} ms full re-analysis ({full / live:,.0f}x)"
        )
    for (a, live_a, full_a), (b, live_b, full_b) in itertools.pairwise(rows):
        print(
            f"{a} -> {b} calls: live x{live_b / live_a:.2f} (best), full re-analysis "
            f"x{full_b / full_a:.2f}"
        )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
