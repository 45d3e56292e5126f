"""`cacheviz check` on the bundled samples, and its outputs: exit status, JSON, SARIF, JUnit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cacheviz.check import RULES, check
from cacheviz.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"

# sample_sessions/README.md: each sample's documented pattern (call indexes of its drifts)
DOCUMENTED = {
    "append_only": {},
    "timestamp_in_system": {"dynamic_system": list(range(1, 8))},
    "shuffled_tools": {"shuffled_tools": list(range(1, 8))},
    "dynamic_profile": {"dynamic_profile": list(range(1, 8))},
    "sliding_window": {"sliding_window": list(range(4, 12))},
    "text_format": {"text_format": list(range(1, 10))},
    "environment_details": {"env_details_stripped": [3, 5, 8]},
    "unpinned_memory": {"dynamic_system": list(range(1, 8))},
    "compaction": {},  # the summary starts a new thread whose parent is the old one
    "side_calls": {},
}


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_each_sample_finds_exactly_its_documented_pattern(name):
    result = check(SAMPLES / f"{name}.jsonl")
    assert {f.rule: f.calls for f in result.findings} == DOCUMENTED[name]


def test_compaction_passes():
    result = check(SAMPLES / "compaction.jsonl")
    assert {f.severity for f in result.findings} <= {"info"} and result.exit_status == 0


def test_exit_status_json_and_unreadable_input(tmp_path, capsys):
    assert main(["check", str(SAMPLES / "append_only.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
    assert main(["check", str(SAMPLES / "shuffled_tools.jsonl"), "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert set(finding) >= {"rule", "severity", "calls", "message", "cost_usd"}
    assert finding["rule"] == "shuffled_tools" and finding["calls"] == list(range(1, 8))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.jsonl" in err
    assert main(["check", str(tmp_path / "missing.jsonl")]) == 2


def test_text_output_and_allow(capsys):
    assert main(["check", str(SAMPLES / "sliding_window.jsonl")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("error: sliding_window (calls [4, 5, 6, 7, 8, 9, 10, 11], costs $")
    path = str(SAMPLES / "sliding_window.jsonl")
    assert main(["check", path, "--allow", "sliding_window"]) == 0


def test_sarif_2_1_for_code_scanning(tmp_path, capsys):
    out = tmp_path / "check.sarif"
    assert main(["check", str(SAMPLES / "timestamp_in_system.jsonl"), "--sarif", str(out)]) == 1
    capsys.readouterr()
    log = json.loads(out.read_text())
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "cacheviz" and [r["id"] for r in driver["rules"]] == list(RULES)
    (result,) = run["results"]
    assert result["ruleId"] == "dynamic_system" and result["level"] == "error"
    assert driver["rules"][result["ruleIndex"]]["id"] == "dynamic_system"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("timestamp_in_system.jsonl")
    assert location["region"]["startLine"] == 2  # call 1 is the file's second line
    assert result["message"]["text"]


def test_junit_one_case_per_rule(tmp_path, capsys):
    out = tmp_path / "check.xml"
    path = str(SAMPLES / "environment_details.jsonl")
    assert main(["check", path, "--junit", str(out)]) == 1
    capsys.readouterr()
    suite = ET.parse(out).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == set(RULES)
    assert suite.get("tests") == str(len(RULES)) and suite.get("failures") == "1"
    assert cases["env_details_stripped"].find("failure") is not None
    assert cases["dynamic_system"].find("failure") is None
