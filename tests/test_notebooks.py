"""Notebooks run top to bottom (their code cells, without a kernel) and are stored clean."""

import json
import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


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
    assert "re-processed because of the timestamp" in capsys.readouterr().out
