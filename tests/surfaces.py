"""Every surface a user meets, run on one transcript as a user would (issue 33's done-when).

:func:`run_surfaces` runs the notebook inspector (an :class:`~cacheviz.Analysis` shown in a
cell, and ``cacheviz.inspect`` with its controls, serialized as the widget sends it),
``compare`` (its default targets), ``report`` (to a file), ``check`` and ``scan --report``
on one path. A traceback anywhere propagates: the test that called it fails. What it
returns says, per surface, ``"ok"`` or the clean one-line error the command printed for
a file that can't be read, so that a test asserts which files may fail and how.

Each surface is also checked for the failures that do not raise: a comparison row whose
replay failed (its ``error``, issue 33 item 16) and a scanned file that failed inside
the scan's worker (the scan lists it and goes on).
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cacheviz
from cacheviz.cli import main
from cacheviz.errors import CacheVizError, CacheVizWarning

SURFACES = ("inspector", "compare", "report", "check", "scan")
NO_PRICE = "no price for "


@dataclass
class Outcome:
    """Per surface: ``"ok"``, or ``"error: <the one line the user read>"``."""

    path: Path
    surfaces: dict[str, str] = field(default_factory=dict)
    compare: list[dict[str, Any]] = field(default_factory=list)
    """The ``compare --json`` rows (empty when compare could not read the file)."""

    def errors(self) -> dict[str, str]:
        """The surfaces that printed an error, with it."""
        return {k: v for k, v in self.surfaces.items() if v != "ok"}


def cli(*argv: str) -> tuple[int, str, str]:
    """``cacheviz argv...`` in this process: exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", CacheVizWarning)  # a warning is not an error here
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def _one_line_error(status: int, stderr: str) -> str:
    """The clean error a command printed for an unreadable file (exit 2, one line)."""
    errors = [line for line in stderr.splitlines() if line.startswith("cacheviz: error: ")]
    assert status == 2, f"exit {status}, stderr: {stderr[-500:]}"
    assert len(errors) == 1, f"expected one error line, got: {stderr[-500:]}"
    assert "Traceback" not in stderr, stderr[-2000:]
    return "error: " + errors[0].removeprefix("cacheviz: error: ")


def check_compare_rows(rows: list[dict[str, Any]], where: str) -> None:
    """Each row has its numbers, or a 'no price' note with a null cost; none failed."""
    assert rows, f"{where}: no comparison rows"
    for row in rows:
        error = row.get("error")
        if error is None:
            assert row["cost_usd"] is not None or row["provider"] in ("vllm", "sglang"), row
            continue
        assert "\n" not in error, f"{where}: {row['target']}: a multi-line error"
        assert error.startswith(NO_PRICE), f"{where}: {row['target']} failed: {error}"
        assert row["cost_usd"] is None and row["ideal_usd"] is None, row
        assert row["cache_read_tokens"] is not None, row


def report_data_of(html: Path) -> dict[str, Any]:
    """The data a report page embeds (``<script id="cacheviz-data">``)."""
    text = html.read_text(encoding="utf-8")
    assert text.lstrip().lower().startswith("<!doctype html"), html
    data = text.split('<script type="application/json" id="cacheviz-data">', 1)[1]
    return json.loads(data.split("</script>", 1)[0])


def check_report(html: Path) -> None:
    """A written report: its comparison rows have numbers or 'no price' (none failed)."""
    meta = report_data_of(html)["meta"]
    check_compare_rows(meta["compare"], f"{html} (report)")


def _inspector(path: Path) -> str:
    try:
        with warnings.catch_warnings():  # what a notebook shows above the cell's output
            warnings.simplefilter("ignore", CacheVizWarning)
            analysis = cacheviz.load(path).analyze()
    except CacheVizError as exc:
        text = str(exc)
        assert "\n" not in text, text
        return f"error: {text}"
    bundle = analysis._repr_mimebundle_()  # an Analysis shown in a cell: (data, metadata)
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data
    widget = cacheviz.inspect(analysis)
    assert widget.meta["compare_built"] is False  # built when the view asks for it
    widget._message(None, {"type": "compare"})  # the providers panel came into view
    json.dumps(widget.meta)  # what travels as JSON
    for name in ("_timeline", "_shape", "_costs"):
        assert getattr(widget, name), f"{path}: {name} is empty"
    assert "internal error" not in widget.status, widget.status
    check_compare_rows(widget.meta["compare"], f"{path} (inspector)")
    return "ok"


def run_surfaces(path: Path, out: Path) -> Outcome:
    """Run every surface on ``path``; files go to the folder ``out``."""
    outcome = Outcome(path)
    outcome.surfaces["inspector"] = _inspector(path)

    status, stdout, stderr = cli("compare", str(path), "--json")
    if status == 0:
        outcome.compare = json.loads(stdout)["targets"]
        check_compare_rows(outcome.compare, f"{path} (compare)")
        outcome.surfaces["compare"] = "ok"
    else:
        outcome.surfaces["compare"] = _one_line_error(status, stderr)

    html = out / f"{path.name}.html"
    status, _, stderr = cli("report", str(path), "-o", str(html))
    if status == 0:
        check_report(html)
        outcome.surfaces["report"] = "ok"
    else:
        outcome.surfaces["report"] = _one_line_error(status, stderr)

    status, _, stderr = cli("check", str(path))  # 1: findings, a CI failure, not an error
    outcome.surfaces["check"] = "ok" if status in (0, 1) else _one_line_error(status, stderr)

    outcome.surfaces["scan"] = scan_folder(path, out / f"{path.name}.fleet.html")
    return outcome


def scan_folder(path: Path, html: Path) -> str:
    """``scan PATH --json --report HTML`` (no cache, one process): ``ok`` or the failures.

    A file the scan could not read is listed under ``failed`` with one line, which must be
    a clean error (not ``internal error``): returned as ``error: ...``.
    """
    status, stdout, stderr = cli(
        "scan", str(path), "--json", "--no-cache", "--jobs", "1", "--report", str(html)
    )
    assert status == 0, f"scan exit {status}: {stderr[-1000:]}"
    assert "Traceback" not in stderr, stderr[-2000:]
    doc = json.loads(stdout)
    assert html.stat().st_size > 0
    for report in sorted(html.with_name(f"{html.stem}_sessions").glob("*.html")):
        check_report(report)  # the sessions' reports the fleet view links to
    failed = doc["failed"]
    for failure in failed:
        text = json.dumps(failure)
        assert "internal error" not in text, text
    if failed:
        return "error: " + "; ".join(str(f.get("error", f)) for f in failed)
    return "ok"
