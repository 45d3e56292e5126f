"""Inspector budgets for a 2,000-call session: synced state size and first render time.

    python bench/bench_inspector.py          # needs Debian's chromium and playwright
    python bench/bench_inspector.py --detail [--calls 600 2000] [--root /path/to/other-checkout]
    python bench/bench_inspector.py --build [--calls 600 2000 10000] [--root /path/to/other-checkout]
    python bench/bench_inspector.py --wire [--calls 600 2000] [--root /path/to/other-checkout]

Builds a 2,000-call Anthropic session (a growing history with a sliding window, a
system prompt with a breakpoint, a drift every 50 calls), then measures:

* the synced state of the widget (the bytes of every trait the front end receives);
* the first render in headless chromium of the same views (the kernel-less report,
  which runs the inspector's render code), from navigation start to the three charts
  drawn; best of 3.

``--detail`` times instead what the first click on a call costs: on the logs
``bench/bench_report.py`` generates (``bench_analysis.generate``, in ``--out``), in one
fresh process per log and checkout, the widget is built, then the last call is selected
(its drift detail, segments and what it sent, computed from nothing cached), then the
call before it. Printed: CPU and wall time of each, against the load + analyze of the
same process, whether the segments frame was built, and the load average.

``--build`` times what a cell showing the inspector runs (issue 32): on this bench's
session (sliding window, a drift every 50 calls) of each size, in one fresh process per
checkout, the analysis, then the widget built and its state serialized
(``get_state()``, what is sent), and the ratio of the two in CPU time; then what the
Providers panel's first view adds (the comparison, built when the view asks for it,
where the checkout builds it lazily).

``--wire`` counts the bytes each inspector a cell shows sends to the front end (issue 32:
the front end shipped once): in one fresh process per checkout, ten inspectors of this
bench's session are made one after the other on a comm that records every message
(``comm_open`` with the state and its binary buffers, then the updates: JSON bytes plus
buffer bytes); printed for the first, second and tenth, with the part that is the
front end's text, and the answer to a page that asks for it, where the checkout has one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _shared import SYSTEM, child_json, sliding_window

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import cacheviz  # noqa: E402
from cacheviz.formats.native import record_line  # noqa: E402
from cacheviz.ui.report import write_report  # noqa: E402
from cacheviz.ui.widget import Inspector  # noqa: E402

CALLS = 2000
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def session(path: Path) -> Path:
    """Write the generated session of CALLS calls to ``path``."""
    system = SYSTEM
    history: list[dict] = []
    lines = []
    for i in range(CALLS):
        role = "user" if i % 2 == 0 else "assistant"
        history.append(
            {"role": role, "content": [{"type": "text", "text": f"step {i} of the task " * 12}]}
        )
        window = sliding_window(history, i)
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 512,
            "system": system,
            "messages": window,
        }
        ts = f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        lines.append(
            record_line(
                body, provider="anthropic", model="claude-sonnet-4-5", api="messages", ts=ts
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


DRAWN = """() => {
  const plots = [...document.querySelectorAll('.cacheviz-panel:not([hidden]) .cacheviz-panel__plot')]
    .filter((el) => !el.hidden);
  return plots.length >= 3 && plots.every((el) => el.querySelector('svg.main-svg'));
}"""


def first_render(report: Path, tmp: Path, attempts: int = 3) -> list[float]:
    """Seconds from navigation start to every visible chart drawn, per attempt."""
    from playwright.sync_api import sync_playwright

    renders = []
    with sync_playwright() as p:
        for attempt in range(attempts):
            context = p.chromium.launch_persistent_context(
                str(tmp / f"profile-{report.stem}-{attempt}"),
                executable_path="/usr/bin/chromium",
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": 1400, "height": 1200},
            )
            page = context.pages[0]
            page.goto(report.as_uri(), wait_until="commit")
            page.wait_for_function(DRAWN, timeout=120_000)
            renders.append(page.evaluate("() => performance.now()") / 1000)
            context.close()
    return renders


DETAIL_CHILD = r"""
import json, sys, time
path = sys.argv[1]
import cacheviz
from cacheviz.ui.widget import Inspector

def timed(work):
    start, start_cpu = time.perf_counter(), time.process_time()
    out = work()
    return out, time.perf_counter() - start, time.process_time() - start_cpu

analysis, analyze_s, analyze_cpu = timed(lambda: cacheviz.load(path).analyze())
widget, built_s, built_cpu = timed(lambda: Inspector(analysis))
last = analysis.calls.height - 1

def select(call):
    widget.selected_call = call
    return widget._detail

first, first_s, first_cpu = timed(lambda: select(last))
second, second_s, second_cpu = timed(lambda: select(last - 1))
print(json.dumps({
    "calls": analysis.calls.height, "analyze_s": analyze_s, "analyze_cpu_s": analyze_cpu,
    "widget_s": built_s, "widget_cpu_s": built_cpu,
    "first_s": first_s, "first_cpu_s": first_cpu,
    "second_s": second_s, "second_cpu_s": second_cpu,
    "segments": len(first.get("segments", [])), "error": first.get("error"),
    "frame_built": getattr(analysis, "_segments", None) is not None,
}))
"""


BUILD_CHILD = r"""
import json, sys, time
path = sys.argv[1]
import cacheviz
from cacheviz.ui.widget import Inspector

def timed(work):
    start, start_cpu = time.perf_counter(), time.process_time()
    out = work()
    return out, time.perf_counter() - start, time.process_time() - start_cpu

analysis, analyze_s, analyze_cpu = timed(lambda: cacheviz.load(path).analyze())
def build():
    widget = Inspector(analysis)
    widget.get_state()  # serialized: what a cell showing it sends
    return widget
widget, built_s, built_cpu = timed(build)
lazy = getattr(widget, "_message", None)
compare_cpu = None
if lazy is not None and not widget.meta.get("compare_built", True):
    _, _, compare_cpu = timed(lambda: (lazy(None, {"type": "compare"}), widget.get_state()))
print(json.dumps({
    "calls": analysis.calls.height, "analyze_cpu_s": analyze_cpu, "analyze_s": analyze_s,
    "widget_cpu_s": built_cpu, "widget_s": built_s, "compare_cpu_s": compare_cpu,
}))
"""


WIRE_CHILD = r"""
import json, sys
import comm
from comm.base_comm import BaseComm
sent = []

class Recorded(BaseComm):
    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        sent.append((len(json.dumps(data, default=str).encode()), [bytes(b) for b in buffers or []]))

comm.create_comm = lambda **kwargs: Recorded(**kwargs)
import cacheviz
from cacheviz.static import bundle
from cacheviz.ui.widget import Inspector

text = bundle("inspector.js")
tail = text[-300:]
analysis = cacheviz.load(sys.argv[1]).analyze()
rows = []
for _ in range(10):
    start = len(sent)
    widget = Inspector(analysis)
    mine = sent[start:]
    total = sum(j + sum(map(len, b)) for j, b in mine)
    carried = sum(len(buffer) for j, b in mine for buffer in b if buffer.endswith(tail.encode()))
    esm = len(widget._esm.encode())
    rows.append({"bytes": total, "esm": esm, "carried": carried})
answer = None
if hasattr(widget, "_send_shared_esm"):
    start = len(sent)
    widget._handle_custom_msg({"type": "shared_esm"}, [])
    answer = sum(j + sum(map(len, b)) for j, b in sent[start:])
print(json.dumps({"rows": rows, "answer": answer, "text": len(text.encode())}))
"""


def main_wire(args: argparse.Namespace) -> None:
    """``--wire``: the bytes each inspector shown sends, first / second / tenth (module doc)."""
    global CALLS
    args.out.mkdir(parents=True, exist_ok=True)
    roots = [HERE.parent, *args.root]
    for calls in args.calls:
        path = args.out / f"sliding_window_{calls}.jsonl"
        if not path.exists():
            CALLS = calls
            session(path)
        for root in roots:
            out = child_json(WIRE_CHILD, [str(path)], root.resolve())
            rows = out["rows"]
            shown = "; ".join(
                f"{name}: {rows[i]['bytes']:,} B (_esm {rows[i]['esm']:,} B"
                + (f", front end {rows[i]['carried']:,} B" if rows[i]["carried"] else "")
                + ")"
                for name, i in (("1st", 0), ("2nd", 1), ("10th", 9))
            )
            answer = (
                f"; a page that asks: {out['answer']:,} B once" if out["answer"] is not None else ""
            )
            print(
                f"{calls} calls, {root}: ten inspectors {sum(r['bytes'] for r in rows):,} B; "
                f"{shown}{answer}",
                flush=True,
            )


def main_build(args: argparse.Namespace) -> None:
    """``--build``: the inspector's build against the analysis (module docstring)."""
    global CALLS
    args.out.mkdir(parents=True, exist_ok=True)
    roots = [HERE.parent, *args.root]
    for calls in args.calls:
        path = args.out / f"sliding_window_{calls}.jsonl"
        if not path.exists():
            CALLS = calls
            session(path)
        for _ in range(args.runs):
            for root in roots:
                load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
                row = child_json(BUILD_CHILD, [str(path)], root.resolve())
                later = (
                    f"; the comparison when the view asks: {row['compare_cpu_s']:.2f} CPU-s"
                    if row["compare_cpu_s"] is not None
                    else " (comparison included)"
                )
                print(
                    f"{calls} calls, {root} (load {load}): analyze {row['analyze_cpu_s']:.2f} "
                    f"CPU-s; inspector built + serialized {row['widget_cpu_s']:.2f} CPU-s = "
                    f"{row['widget_cpu_s'] / row['analyze_cpu_s']:.2f}x the analysis{later}",
                    flush=True,
                )


def detail(path: Path, root: Path) -> dict:
    """The first detail views of ``path`` in a fresh process of the checkout ``root``."""
    return child_json(DETAIL_CHILD, [str(path)], root)


def main_detail(args: argparse.Namespace) -> None:
    """``--detail``: the first click on a late call (module docstring)."""
    sys.path.insert(0, str(HERE))
    from bench_analysis import generate

    args.out.mkdir(parents=True, exist_ok=True)
    roots = [HERE.parent, *args.root]
    for calls in args.calls:
        path = args.out / f"long_session_{calls}.jsonl"
        if not path.exists():
            generate(path, calls)
        best: dict[Path, dict] = {}
        for _ in range(args.runs):
            for root in roots:
                load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
                row = detail(path, root.resolve())
                print(
                    f"{calls} calls, {root} (load {load}): analyze {row['analyze_cpu_s']:.2f} "
                    f"CPU-s, widget {row['widget_cpu_s']:.2f}; first detail (call "
                    f"{calls - 1}, {row['segments']} segments listed) "
                    f"{row['first_cpu_s']:.3f} CPU-s / {row['first_s']:.3f} s wall = "
                    f"{row['first_cpu_s'] / row['analyze_cpu_s']:.3f}x the analysis; the "
                    f"next call {row['second_cpu_s']:.3f} CPU-s; segments frame built: "
                    f"{row['frame_built']}" + (f"; error {row['error']}" if row["error"] else ""),
                    flush=True,
                )
                if root not in best or row["first_cpu_s"] < best[root]["first_cpu_s"]:
                    best[root] = row
        for root, row in best.items():
            print(
                f"{calls} calls, {root}: best first detail of {args.runs}: "
                f"{row['first_cpu_s']:.3f} CPU-s (next call {row['second_cpu_s']:.3f})"
            )


def main() -> None:
    global CALLS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="time the first detail views")
    parser.add_argument("--build", action="store_true", help="time the inspector's build")
    parser.add_argument("--wire", action="store_true", help="bytes each inspector shown sends")
    parser.add_argument("--calls", type=int, nargs="*", default=[600, 2000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench"))
    parser.add_argument("--root", type=Path, nargs="*", default=[], help="checkouts to compare")
    parser.add_argument("--runs", type=int, default=1, help="processes per log and checkout")
    args = parser.parse_args()
    if args.detail:
        main_detail(args)
        return
    if args.build:
        main_build(args)
        return
    if args.wire:
        main_wire(args)
        return
    baseline = measure_baseline()
    for calls in (2000, 10000):
        CALLS = calls
        measure(calls, baseline)


def measure_baseline() -> float:
    """First render of a 10-call sample report in this run: the page's fixed cost."""
    sample = HERE.parent / "sample_sessions" / "environment_details.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        report = write_report(cacheviz.load(sample).analyze(), Path(tmp) / "sample.html")
        renders = first_render(report, Path(tmp))
    print(
        f"baseline (10-call sample report) first render: best {min(renders):.2f} s "
        f"of {', '.join(f'{r:.2f}' for r in renders)}"
    )
    return min(renders)


def measure(calls: int, baseline: float) -> None:
    """Print the budgets of one generated session of ``calls`` calls."""
    with tempfile.TemporaryDirectory() as tmp:
        log = session(Path(tmp) / "long.jsonl")
        start = time.perf_counter()
        analysis = cacheviz.load(log).analyze()
        analysed = time.perf_counter() - start
        start = time.perf_counter()
        widget = Inspector(analysis)
        built = time.perf_counter() - start
        state = widget.get_state()
        sizes = {
            k: len(v) if isinstance(v, bytes) else len(json.dumps(v))
            for k, v in state.items()
            if k in ("_timeline", "_shape", "_costs", "meta", "_detail", "selected_call", "status")
        }
        start = time.perf_counter()
        report = write_report(analysis, Path(tmp) / "report.html")
        written = time.perf_counter() - start
        report_mb = report.stat().st_size / 1e6
        renders = first_render(report, Path(tmp))
    budget = 1.5 if calls <= 2000 else 3.0
    print(
        f"session: {calls:,} calls, {analysis.segments.height:,} segments, "
        f"{analysis.drifts.height} drifts"
    )
    print(f"load + analyze: {analysed:.2f} s; widget state built in {built:.2f} s")
    print("synced state: " + ", ".join(f"{k} {v / 1e3:,.1f} kB" for k, v in sizes.items()))
    print(f"synced state in all: {sum(sizes.values()) / 1e6:.3f} MB (budget 2 MB)")
    print(f"report: {report_mb:.2f} MB, written in {written:.2f} s (every call's detail)")
    print(
        "first render in headless chromium (navigation start to every chart drawn): "
        f"best {min(renders):.2f} s of {', '.join(f'{r:.2f}' for r in renders)} "
        f"(budget {budget} s); {min(renders) / baseline:.2f}x the 10-call baseline"
    )


if __name__ == "__main__":
    main()
