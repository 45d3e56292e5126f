"""The lab's early drift measured on llama.cpp itself (the notebook's engine path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# cacheviz's Python with the engine's llama_cpp after its own packages, as a user who
# installed llama-cpp-python beside cacheviz has it
_RUN = """
import json, sys
sys.path.append(sys.argv[1])
from cacheviz.teach.lab import early_drift
lab = early_drift(sys.argv[2])
print(json.dumps({
    "measured": lab.measured, "source": lab.source, "headline": lab.headline(),
    "drift_factor": lab.drift_factor, "session_factor": lab.session_factor,
    "estimated_drift_factor": lab.estimated_drift_factor,
    "estimated_session_factor": lab.estimated_session_factor,
    "runs": {k: [[p.call, p.tokens, p.uncached, p.prefill_ms] for p in v] for k, v in lab.runs.items()},
}))
"""


@pytest.fixture(scope="module")
def lab(engine_python, tiny_model) -> dict:
    site = subprocess.run(
        [
            engine_python,
            "-c",
            "import llama_cpp, pathlib; print(pathlib.Path(llama_cpp.__file__).parents[1])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    done = subprocess.run(
        [sys.executable, "-c", _RUN, site, str(tiny_model)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout)
    saved = os.environ.get("CACHEVIZ_ENGINE_LAB_REPORT")
    if saved:  # the figures of docs/simulation.md
        with open(saved, "w", encoding="utf-8") as handle:
            json.dump(found, handle, indent=1)
    return found


def test_the_lab_measures_the_early_drift_on_llama_cpp(lab):
    assert lab["measured"], lab["source"]
    assert lab["headline"].startswith("measured on llama.cpp (tiny-qwen2.gguf, CPU time)")
    stable, early = lab["runs"]["stable"], lab["runs"]["early"]
    # one slot: the stable session recomputes only each call's new tokens; the early
    # drift recomputes everything after the timestamp once, then reuses it again
    assert all(s[2] < s[1] / 2 for s in stable[1:])
    drift = next(i for i, (e, s) in enumerate(zip(early, stable, strict=True)) if e[2] != s[2])
    assert early[drift][2] > 5 * stable[drift][2]
    assert [e[2] for e in early[drift + 1 :]] == [s[2] for s in stable[drift + 1 :]]
    assert lab["drift_factor"] > 2
    assert lab["session_factor"] > 1
    # cacheviz's estimate of the same drift (prefill_ms, its default coefficients)
    assert lab["estimated_drift_factor"] == pytest.approx(lab["drift_factor"], rel=0.5)
