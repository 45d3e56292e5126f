"""Notebooks run top to bottom (their code cells, without a kernel) and are stored clean."""

import json
import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_runs_and_outputs_are_stripped(path, capsys):
    notebook = json.loads(path.read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code
    assert all(not c["outputs"] and c["execution_count"] is None for c in code)
    namespace = {}
    cwd = Path.cwd()
    os.chdir(path.parent)
    try:
        for cell in code:
            exec(compile("".join(cell["source"]), f"{path.name}:{cell['id']}", "exec"), namespace)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    markers = (
        "re-processed because of the timestamp",
        "QUICKSTART-DONE",
        "LAB-DONE",
        "POST-MORTEM-DONE",
    )
    assert any(marker in out for marker in markers)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_headless_in_a_kernel(path):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    if path.name.startswith("01-"):
        views = [
            o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        ]
        assert len(views) == 2  # the analysis shown in a cell, and cacheviz.inspect
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    if path.name.startswith("02-"):
        views = [
            o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        ]
        assert len(views) == 9  # an inspector per lesson, and the playground
        assert "solution: hit ratio" in text and "LAB-DONE" in text
    if path.name.startswith("03-"):
        assert "billed" in text and "ideal" in text and "POST-MORTEM-DONE" in text
