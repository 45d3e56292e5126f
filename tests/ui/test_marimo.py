"""The inspector in a marimo notebook, run headless (``marimo export html`` executes it)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("marimo")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "02-marimo-inspector.py"
SESSION = ROOT / "sample_sessions" / "environment_details.jsonl"


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_the_inspector_runs_in_a_marimo_notebook(tmp_path):
    # a copy: marimo writes a session cache next to the notebook it runs
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "sample_sessions").mkdir()
    notebook = Path(shutil.copy(NOTEBOOK, tmp_path / "notebooks"))
    shutil.copy(SESSION, tmp_path / "sample_sessions")
    out = tmp_path / "inspector.html"
    done = subprocess.run(
        [sys.executable, "-m", "marimo", "export", "html", str(notebook), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    html = out.read_text("utf-8")
    assert "CALLS 10 DRIFTS 3" in html  # the cells ran, the widget's state is in Python
    assert "marimo-anywidget" in html  # the inspector is shown as an anywidget
    # the README's one line and a bare Analysis, with no mo.ui.anywidget workaround
    assert "mo.ui.anywidget" not in NOTEBOOK.read_text("utf-8")
    assert html.count("marimo-anywidget") >= 2
    assert "not supported in marimo" not in html
