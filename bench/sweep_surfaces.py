"""Crash sweep: every user-facing surface on every session under the given folders.

Usage::

    .venv/bin/python bench/sweep_surfaces.py FOLDER_OR_FILE... [--timeout 120] [--json OUT]

Each argument is walked as ``cacheviz scan`` walks it (one *unit* per session: a file with
its sub-agent files, a Cline task, a Kimi session folder, a SQLite store...). For each
session, in this process, with a per-session timeout (SIGALRM) and every exception caught:

``load``          ``cacheviz.load(p).analyze()``
``summary``       ``Analysis.summary()`` (and the JSON checks below)
``segments``      ``Analysis.segments``; ``drifts`` ``Analysis.drifts``
``simulate``      ``Analysis.simulate(<the session's own provider>)``
``compare``       ``Analysis.compare(<the default targets of cacheviz compare>)``
``report``        ``cacheviz report P -o OUT.html`` (the CLI, in process)
``check``         ``cacheviz check P`` (exit 0 or 1 is fine)
``summary-json``  ``cacheviz summary P --json``
``inspector``     the notebook inspector: ``_repr_mimebundle_``, ``cacheviz.inspect``, the
                  compare panel built as the view asks for it, its state as JSON
``inspector-controls``  every provider, TTL and breakpoint choice, clicks on calls, a search
``truncated``     a one-file session cut in the middle of a line (a log being written)
``cli-tables``    ``cacheviz summary``, ``compare``, ``simulate`` and ``scan`` as tables

and, per argument, ``cacheviz scan ARG --no-cache --json --jobs 1``.

Outcomes: ``ok``; ``clean`` (a one-line :class:`~cacheviz.errors.CacheVizError`, or a
command's single ``cacheviz: error:`` line with exit 2: a user-facing refusal);
``CRASH`` (any other exception, a traceback or ``internal error`` on stderr, a multi-line
error, a timeout); ``ABSURD`` (the surface ran but a number is absurd: a negative cost,
a hit ratio above 1, NaN/inf in a JSON document, ``billed_usd`` null on a call that reports
usage of a priced model). The exit status is 1 when any CRASH or ABSURD was seen.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import cacheviz
from cacheviz import providers
from cacheviz.cli import main as cli_main
from cacheviz.errors import CacheVizError, CacheVizWarning
from cacheviz.scanning._walk import find_units

SURFACES = (
    "load",
    "summary",
    "segments",
    "drifts",
    "simulate",
    "compare",
    "report",
    "check",
    "summary-json",
    "inspector",
    "inspector-controls",
    "truncated",
    "cli-tables",
)


class _TimeoutError(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _TimeoutError


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli_main(list(argv))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
    return status, out.getvalue(), err.getvalue()


def _cli_outcome(status: int, stderr: str, ok: tuple[int, ...] = (0,)) -> str:
    if "Traceback" in stderr or "internal error" in stderr:
        return "CRASH: " + stderr.strip()[-1500:]
    if status in ok:
        return "ok"
    errors = [line for line in stderr.splitlines() if line.startswith("cacheviz: error: ")]
    if status == 2 and len(errors) == 1:
        return "clean: " + errors[0].removeprefix("cacheviz: error: ")
    return f"CRASH: exit {status}: " + stderr.strip()[-1500:]


def _exception(exc: BaseException) -> str:
    if isinstance(exc, _TimeoutError):
        return "CRASH: timeout"
    if isinstance(exc, CacheVizError) and "\n" not in str(exc):
        return f"clean: {exc}"
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "CRASH: " + tb[-2500:]


def _finite(doc: Any, where: str) -> list[str]:
    """NaN/inf anywhere in a JSON-bound document."""
    try:
        json.dumps(doc, allow_nan=False, default=str)
    except ValueError:
        return [f"{where}: NaN or inf in the JSON document"]
    return []


_COSTS = ("billed_usd", "simulated_usd", "ideal_usd", "waste_usd", "cost_usd")


def _absurd_numbers(doc: Any, where: str) -> list[str]:
    """Negative costs and hit ratios outside [0, 1], anywhere in a document."""
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                here = f"{path}.{key}"
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    if key in _COSTS and value < -1e-9 and key != "waste_usd":
                        found.append(f"{where}{here} = {value} (negative cost)")
                    ratio = "hit_ratio" in here and key in ("hit_ratio", "tokens", "requests")
                    if ratio and not (-1e-9 <= value <= 1 + 1e-9):
                        found.append(f"{where}{here} = {value} (hit ratio outside 0..1)")
                    if isinstance(value, float) and not math.isfinite(value):
                        found.append(f"{where}{here} = {value}")
                else:
                    walk(value, here)
        elif isinstance(node, list):
            for i, value in enumerate(node[:100000]):
                walk(value, f"{path}[{i}]")

    walk(doc, "")
    return found


def _unbilled(doc: dict[str, Any]) -> list[str]:
    """Calls that report usage, of a model that is priced, with no billed cost."""
    unpriced = set(doc.get("unpriced_models") or [])
    bad = [
        c["call"]
        for c in doc.get("calls", [])
        if c.get("reported") is not None
        and c.get("reported", {}).get("input_tokens") is not None
        and c.get("billed_usd") is None
        and c.get("model") not in unpriced
        and c.get("model")
    ]
    if bad and doc.get("reported_totals", {}).get("scope") == "calls":
        return [f"summary: billed_usd null on {len(bad)} reporting calls, e.g. {bad[:5]}"]
    return []


def sweep_session(path: Path, out: Path) -> dict[str, str]:
    """Every surface on one session: outcome per surface."""
    result: dict[str, str] = {}
    absurd: list[str] = []
    analysis = None
    try:
        analysis = cacheviz.load(path).analyze()
        result["load"] = "ok"
    except BaseException as exc:  # the sweep records every failure
        if isinstance(exc, KeyboardInterrupt):
            raise
        result["load"] = _exception(exc)

    def run(name: str, fn: Any) -> None:
        try:
            fn()
            result[name] = "ok"
        except _TimeoutError:
            raise
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            result[name] = _exception(exc)

    if analysis is not None:
        a = analysis

        def summary() -> None:
            doc = a.summary()
            absurd.extend(_finite(doc, "summary"))
            absurd.extend(_absurd_numbers(doc, "summary"))
            absurd.extend(_unbilled(doc))

        def simulate() -> None:
            recorded = a.calls.select("provider").drop_nulls().unique().to_series().to_list()
            for provider in recorded[:3]:
                sim = a.simulate(provider)
                frame = getattr(sim, "calls", None)
                if frame is not None and "cost_usd" in frame.columns:
                    low = frame["cost_usd"].drop_nulls()
                    if low.len() and low.min() < -1e-9:
                        absurd.append(f"simulate({provider}): negative cost_usd {low.min()}")

        def compare() -> None:
            recorded = a.calls.select("provider", "model").unique(maintain_order=True).rows()
            frame = a.compare(providers.comparison_targets(recorded))
            rows = frame.to_dicts()
            absurd.extend(_finite(rows, "compare"))
            absurd.extend(_absurd_numbers({"rows": rows}, "compare"))
            for row in rows:
                err = row.get("error")
                if err and not str(err).startswith("no price for "):
                    absurd.append(f"compare: {row.get('target')} failed: {err}")

        def inspector() -> None:
            a._repr_mimebundle_()
            widget = cacheviz.inspect(a)
            widget._message(None, {"type": "compare"})
            meta = widget.meta
            absurd.extend(_finite(meta, "inspector meta"))
            json.dumps(meta)
            if "internal error" in (widget.status or ""):
                msg = f"inspector status: {widget.status}"
                raise RuntimeError(msg)

        def controls() -> None:
            # what a user does in the inspector: every provider, TTL and breakpoint choice,
            # a click on calls, a search; a fault there is logged and shown, not raised
            faults: list[str] = []

            class Faults(logging.Handler):
                def emit(self, record: logging.LogRecord) -> None:
                    exc = record.exc_info[1] if record.exc_info else None
                    if exc is not None and not isinstance(exc, CacheVizError):
                        faults.append(f"{record.getMessage()}: {type(exc).__name__}: {exc}")

            handler = Faults(logging.ERROR)
            logger = logging.getLogger("cacheviz")
            logger.addHandler(handler)
            try:
                widget = cacheviz.inspect(a)
                seen: list[str] = []

                def look() -> None:
                    status = widget.status or ""
                    if "internal error" in status or "\n" in status:
                        seen.append(f"status: {status[:300]}")
                    if widget._detail.get("error"):
                        seen.append(f"detail: {widget._detail['error'][:300]}")

                for provider in providers.ids():
                    widget.provider = provider
                    look()
                own = a.calls["provider"][0] if a.calls.height else ""
                if own in providers.ids():
                    widget.provider = own
                for ttl in providers.rule_choices("ttl"):
                    widget.ttl = ttl
                    look()
                for points in providers.rule_choices("breakpoints"):
                    widget.breakpoints = points
                    look()
                n = a.calls.height
                picks = sorted({0, n - 1, *range(0, n, max(1, n // 15)), *a.drifts["call"]})
                for call in picks[:40]:
                    if 0 <= call < n:
                        widget.selected_call = call
                        look()
                widget._message(None, {"type": "search", "text": "the"})
                look()
            finally:
                logger.removeHandler(handler)
            problems = faults + seen
            if problems:
                raise RuntimeError(" | ".join(sorted(set(problems))[:10]))

        run("summary", summary)
        run("segments", lambda: a.segments)
        run("drifts", lambda: a.drifts)
        run("simulate", simulate)
        run("compare", compare)
        run("inspector", inspector)
        run("inspector-controls", controls)

    html = out / "report.html"
    status, _, stderr = _cli("report", str(path), "-o", str(html))
    result["report"] = _cli_outcome(status, stderr)
    if status == 0:
        text = html.read_text(encoding="utf-8")
        data = text.split('id="cacheviz-data">', 1)[1].split("</script>", 1)[0]
        doc = json.loads(data)
        absurd.extend(_finite(doc, "report data"))
        absurd.extend(_absurd_numbers(doc.get("meta", {}), "report meta"))
    status, _, stderr = _cli("check", str(path))
    result["check"] = _cli_outcome(status, stderr, ok=(0, 1))
    status, stdout, stderr = _cli("summary", str(path), "--json")
    result["summary-json"] = _cli_outcome(status, stderr)
    if status == 0 and ("NaN" in stdout or "Infinity" in stdout):
        absurd.append("summary --json: NaN/Infinity in the output")
    tables = []
    for argv in (("summary",), ("compare",), ("simulate",), ("scan", "--no-cache", "--jobs", "1")):
        status, _, stderr = _cli(argv[0], str(path), *argv[1:])
        tables.append(_cli_outcome(status, stderr))
    result["cli-tables"] = next((t for t in tables if t.startswith("CRASH")), tables[0])
    if absurd:
        result["absurd"] = "ABSURD: " + " | ".join(sorted(set(absurd))[:20])
    return result


def sweep_truncated(path: Path, out: Path) -> str:
    """A one-file session cut mid-line (a log still being written): loads or refuses cleanly."""
    if path.suffix not in (".jsonl", ".json", ".traj", ".history") or not path.is_file():
        return "ok: not a one-file text session"
    data = path.read_bytes()
    cut = out / "cut" / path.name
    cut.parent.mkdir(exist_ok=True)
    cut.write_bytes(data[: max(1, len(data) // 2)])
    try:
        cacheviz.load(cut).analyze().summary()
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, _TimeoutError)):
            raise
        return _exception(exc)
    status, _, stderr = _cli("summary", str(cut), "--json")
    return _cli_outcome(status, stderr)


def sweep(args: list[Path], timeout: float) -> dict[str, Any]:
    """Sweep every session under ``args``; one record per session and per scan."""
    records: list[dict[str, Any]] = []
    scans: dict[str, str] = {}
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for arg in args:
            units = find_units([arg])
            print(f"# {arg}: {len(units)} sessions", file=sys.stderr, flush=True)
            for unit in units:
                start = time.perf_counter()
                signal.setitimer(signal.ITIMER_REAL, timeout)
                try:
                    result = sweep_session(unit.path, out)
                    if len(unit.members) == 1:
                        result["truncated"] = sweep_truncated(unit.path, out)
                except _TimeoutError:
                    result = {"load": "CRASH: timeout"}
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                seconds = round(time.perf_counter() - start, 2)
                bad = {k: v for k, v in result.items() if not v.startswith(("ok", "clean"))}
                mark = "BAD" if bad else "ok"
                print(f"{mark} {seconds:7.2f}s {unit.path}", file=sys.stderr, flush=True)
                for k, v in bad.items():
                    print(f"    {k}: {v.splitlines()[-1][:300]}", file=sys.stderr)
                records.append({"path": str(unit.path), "seconds": seconds, **result})
            status, stdout, stderr = _cli("scan", str(arg), "--no-cache", "--json", "--jobs", "1")
            outcome = _cli_outcome(status, stderr)
            if status == 0:
                doc = json.loads(stdout)
                failed = [f for f in doc.get("failed", []) if "internal error" in json.dumps(f)]
                if failed:
                    outcome = "CRASH: " + json.dumps(failed)[:1500]
                bad = _finite(doc, "scan") + _absurd_numbers(doc, "scan")
                if bad and outcome == "ok":
                    outcome = "ABSURD: " + " | ".join(bad[:10])
            scans[str(arg)] = outcome
            print(f"scan {arg}: {outcome.splitlines()[0][:300]}", file=sys.stderr, flush=True)
    return {"sessions": records, "scans": scans}


def tally(doc: dict[str, Any]) -> str:
    """Per surface: how many sessions ran, and how each ended."""
    lines = []
    for surface in (*SURFACES, "absurd"):
        counts = Counter(r[surface].split(":", 1)[0] for r in doc["sessions"] if surface in r)
        lines.append(f"{surface:13} " + " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    scans = Counter(v.split(":", 1)[0] for v in doc["scans"].values())
    lines.append("scan          " + " ".join(f"{k}={v}" for k, v in sorted(scans.items())))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per session")
    parser.add_argument("--json", type=Path, help="write every outcome to this file")
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        doc = sweep(args.paths, args.timeout)
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    print(f"{len(doc['sessions'])} sessions")
    print(tally(doc))
    bad = any(
        v.startswith(("CRASH", "ABSURD"))
        for r in doc["sessions"]
        for k, v in r.items()
        if k not in ("path", "seconds")
    ) or any(v.startswith(("CRASH", "ABSURD")) for v in doc["scans"].values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
