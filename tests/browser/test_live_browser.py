"""The live inspector in JupyterLab 4 and Notebook 7: it appears with the first recorded call
and grows as calls arrive, by appended rows (no whole-state resend)."""

import json
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SAMPLE = Path(__file__).resolve().parents[2] / "sample_sessions" / "append_only.jsonl"
CELLS = [
    "import json, pathlib, threading, time, cacheviz\n"
    "lines = pathlib.Path('source.jsonl').read_text().splitlines()\n"
    "rec = cacheviz.record()\n"
    "rec.writer.write(lines[0])\n"
    "live = rec.inspect()\n"
    "live",
    # calls arrive from a thread, as from an agent running in the background: the kernel
    # stays idle, so the front end can draw; the test creates `go` once the first is drawn
    "def agent():\n"
    "    while not pathlib.Path('go').exists():\n"
    "        time.sleep(0.1)\n"
    "    for line in lines[1:]:\n"
    "        rec.writer.write(line)\n"
    "        time.sleep(0.3)\n"
    "    while live.inspector.analysis.calls.height < len(lines):\n"
    "        time.sleep(0.1)\n"
    "    pathlib.Path('updates.json').write_text(json.dumps(live.updates))\n"
    "threading.Thread(target=agent, daemon=True).start()\n"
    "print('ALL-CELLS-DONE')",
]


def _notebook(path):
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": src,
        }
        for i, src in enumerate(CELLS)
    ]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(
        json.dumps(
            {"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": kernel}}
        )
    )


def test_the_live_inspector_grows_as_calls_arrive(lab, page):
    shutil.copy(SAMPLE, lab.root / "source.jsonl")
    n_calls = len(SAMPLE.read_text().splitlines())
    _notebook(lab.root / "live.ipynb")
    page.goto(lab.notebook_url("live.ipynb"))
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.sessionContext && window.jupyterapp.shell.currentWidget.sessionContext.session && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
        timeout=120_000,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    header = page.locator(".cacheviz-inspector .cacheviz-header__format", has_text="calls")
    header.wait_for(timeout=120_000)
    assert header.text_content() == "1 calls"
    page.wait_for_function(
        "() => document.querySelectorAll('.cacheviz-inspector svg.main-svg').length >= 3"
    )

    (lab.root / "go").touch()
    page.wait_for_function(
        f"() => [...document.querySelectorAll('.cacheviz-inspector .cacheviz-header__format')].some(e => e.textContent === '{n_calls} calls')",
        timeout=60_000,
    )
    updates = lab.root / "updates.json"
    for _ in range(300):
        if updates.exists():
            break
        page.wait_for_timeout(100)
    counts = json.loads(updates.read_text())
    assert counts["replaced"] == 0  # every update was an append of the new rows
    assert counts["appended"] >= 1
    # the charts were redrawn with every call, and nothing failed on the way
    assert page.locator(".cacheviz-inspector svg.main-svg").count() >= 3
    assert not [e for e in page.errors if "cacheviz" in e.lower()]
