"""`cacheviz summary` runs on every real transcript in ../shared/realdata, auto-detected."""

import json

import pytest

from cacheviz import cli

EXPECTED_FORMAT = {
    "aider": "aider",
    "anthropic_raw": "claude-trace",
    "claude_code_jsonl": "claude-code",
    "cline_task": "cline",
    "codex_rollout": "codex",
    "gemini_cli": "gemini-cli",
    "inspect_log": "inspect",
    "openhands": "openhands",
    "swe_agent_traj": "swe-agent",
}


def test_every_real_file_is_summarized(realdata, capsys):
    paths = sorted(
        p
        for p in realdata.rglob("*")
        if p.is_file() and p.name != "README.md" and not p.name.endswith(".meta.json")
    )
    paths.append(realdata / "cline_task")
    assert {p.relative_to(realdata).parts[0] for p in paths} == set(EXPECTED_FORMAT)
    for path in paths:
        status = cli.main(["summary", str(path), "--json"])
        captured = capsys.readouterr()
        assert status == 0, (path, captured.err)
        doc = json.loads(captured.out)
        assert doc["format"] == EXPECTED_FORMAT[path.relative_to(realdata).parts[0]], path
        assert doc["calls"], path
        assert cli.main(["summary", str(path)]) == 0
        assert capsys.readouterr().out.splitlines()[-1].startswith("total: ")


def test_a_sub_agent_metadata_file_is_not_a_transcript(realdata, capsys):
    (meta,) = realdata.rglob("*agent-*.meta.json")
    assert cli.main(["summary", str(meta)]) != 0
    assert "sub-agent's metadata" in capsys.readouterr().err


@pytest.mark.parametrize("folder", sorted(EXPECTED_FORMAT))
def test_each_format_has_real_data(realdata, folder):
    assert any((realdata / folder).iterdir())
