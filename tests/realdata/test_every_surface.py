"""Every surface on every file of ../shared/realdata, as a user would run them (issue 33).

The notebook inspector (an Analysis shown in a cell, ``cacheviz.inspect``), ``compare``
(default targets), ``report``, ``check`` and ``scan --report`` (:mod:`surfaces`) run on
each file without a traceback. A file that is not a transcript may fail, with the one
clean line each surface prints, which is asserted here; every other file must give every
surface, and every comparison row its numbers or a "no price" note.

Also: the Claude Code session with sub-agents put back in Claude Code's layout
(``<uuid>.jsonl`` + ``<uuid>/subagents/``), and one scan of the whole folder (read-only,
its output in a temporary folder).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from surfaces import SURFACES, run_surfaces, scan_folder

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
FILES = (
    sorted(p.relative_to(REALDATA).as_posix() for p in REALDATA.rglob("*") if p.is_file())
    if REALDATA.is_dir()
    else []
)
# files that are not transcripts: each surface's one-line error (a fragment of it)
NOT_TRANSCRIPTS = {
    "README.md": "can't tell the transcript format",
    ".meta.json": "metadata",
}
# compare rows without a cost: a recorded model no price source knows
UNPRICED = {
    "openhands/OpenHands__OpenHands__multi_swe_bench_examples_output.jsonl": (
        "openai:openai/openrouter-llama-4-maverick"
    ),
}

pytestmark = pytest.mark.slow


def _expected_error(name: str) -> str | None:
    for suffix, fragment in NOT_TRANSCRIPTS.items():
        if name.endswith(suffix):
            return fragment
    return None


@pytest.mark.parametrize("name", FILES or ["(absent)"])
def test_every_surface_runs_on_every_file(realdata, name, tmp_path):
    outcome = run_surfaces(realdata / name, tmp_path)
    expected = _expected_error(name)
    if expected is None:
        assert outcome.errors() == {}, name
        unpriced = [r["target"] for r in outcome.compare if r["error"] is not None]
        assert unpriced == ([UNPRICED[name]] if name in UNPRICED else [])
        return
    # not a transcript: each surface says so in one line ("scan" skips what it can't read)
    errors = outcome.errors()
    assert set(errors) == set(SURFACES) - {"scan"}, errors
    for surface, text in errors.items():
        assert expected in text, (surface, text)
        assert "\n" not in text


def test_the_claude_code_layout_with_sub_agents(realdata, tmp_path):
    """The Xu-Wentao session back in ``<project>/<uuid>.jsonl`` + ``<uuid>/subagents/``."""
    source = realdata / "claude_code_jsonl"
    prefix = "Xu-Wentao__dotfile__"
    uuid = "7ef4b236-d946-48a6-a856-e45b02af7be7"
    project = tmp_path / "projects" / "-Users-x-dev"
    agents = project / uuid / "subagents"
    agents.mkdir(parents=True)
    shutil.copy(source / f"{prefix}{uuid}.jsonl", project / f"{uuid}.jsonl")
    for path in source.glob(f"{prefix}{uuid}__subagents__agent-*"):
        shutil.copy(path, agents / path.name.split("__subagents__", 1)[1])
    assert len(list(agents.glob("agent-*.jsonl"))) == 2
    outcome = run_surfaces(project / f"{uuid}.jsonl", tmp_path)
    assert outcome.errors() == {}
    assert scan_folder(tmp_path / "projects", tmp_path / "projects.html") == "ok"


def test_scan_report_of_the_whole_folder(realdata, tmp_path):
    """One ``scan --json --report`` over ../shared/realdata (read, never written)."""
    assert scan_folder(realdata, tmp_path / "fleet.html") == "ok"
