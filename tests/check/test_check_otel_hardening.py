"""``check``'s SARIF/JUnit under odd names and failures, rule ids, and OTel edge values."""

from __future__ import annotations

import json
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cacheviz import CacheVizWarning, load
from cacheviz.check import check
from cacheviz.check._output import to_junit, to_sarif
from cacheviz.cli import main
from cacheviz.errors import TranscriptError
from cacheviz.formats.native import record_line

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
USAGE = {"input_tokens": 10, "cache_read_input_tokens": 0, "output_tokens": 2}


def _session(path: Path, model: str = "claude-sonnet-4-5", thread: str = "main") -> Path:
    lines = []
    for call in range(3):
        body = {
            "model": model,
            "max_tokens": 8,
            "system": f"Now: 00:00:0{call}. " + "Stay careful. " * 300,
            "messages": [{"role": "user", "content": "hi"}],
        }
        lines.append(
            record_line(
                body,
                provider="anthropic",
                model=model,
                api="messages",
                ts=f"2026-01-01T00:00:0{call}Z",
                usage=USAGE,
                meta={"thread": thread},
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- item 13: JUnit stays well-formed ------------------------------------------------------------


def test_junit_is_well_formed_with_esc_and_bel_in_names(tmp_path):
    path = _session(tmp_path / "s\x1b.jsonl", model="claude\x1b[31m\x07", thread="t\x07\x1b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        result = check(path)
    result.findings  # noqa: B018
    document = to_junit(result)
    root = ET.fromstring(document)  # raises on a malformed document
    assert root.tag == "testsuites"
    assert "\x1b" not in document and "\x07" not in document


# -- item 23: SARIF URIs and a SARIF on exit 2 ----------------------------------------------------


def test_a_sarif_uri_is_percent_encoded(tmp_path, monkeypatch):
    folder = tmp_path / "my runs"
    folder.mkdir()
    path = _session(folder / "a b#1.jsonl")
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        result = check(Path("my runs") / "a b#1.jsonl")
    [uri] = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in to_sarif(result)["runs"][0]["results"]
        for loc in r["locations"]
    }
    assert uri == "my%20runs/a%20b%231.jsonl"
    assert path.exists()


def test_exit_2_still_writes_a_sarif_with_a_notification(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json at all\n", encoding="utf-8")
    sarif, junit = tmp_path / "out.sarif", tmp_path / "out.xml"
    assert main(["check", str(bad), "--sarif", str(sarif), "--junit", str(junit)]) == 2
    log = json.loads(sarif.read_text(encoding="utf-8"))
    [run] = log["runs"]
    [invocation] = run["invocations"]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "bad.jsonl" in note["message"]["text"]
    assert run["results"] == []
    assert ET.fromstring(junit.read_text(encoding="utf-8")).find(".//error") is not None
    assert capsys.readouterr().err.startswith("cacheviz: error:")


# -- item 24: rule ids ----------------------------------------------------------------------------


def test_an_unknown_allowed_rule_is_a_one_line_error(capsys):
    path = str(SAMPLES / "timestamp_in_system.jsonl")
    assert main(["check", path, "--allow", "bogus_rule"]) == 2
    err = capsys.readouterr().err.strip()
    assert "bogus_rule" in err and "\n" not in err


def test_allow_takes_known_ids_only_and_one_id_as_a_string():
    path = SAMPLES / "timestamp_in_system.jsonl"
    with pytest.raises(ValueError, match="typo"):
        check(path, allow=["typo"])
    every = {f.rule for f in check(path).findings}
    assert "dynamic_system" in every
    left = {f.rule for f in check(path, allow="dynamic_system").findings}
    assert left == every - {"dynamic_system"}


# -- item 16, 24: OTel ----------------------------------------------------------------------------


def _span(attributes: list[dict]) -> dict:
    return {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {"name": "chat", "startTimeUnixNano": "1", "attributes": attributes}
                        ]
                    }
                ]
            }
        ]
    }


def _attributes(extra: list[dict]) -> list[dict]:
    messages = [{"role": "user", "content": "hi"}]
    return [
        {"key": "gen_ai.system", "value": {"stringValue": "anthropic"}},
        {"key": "gen_ai.request.model", "value": {"stringValue": "claude-sonnet-4-5"}},
        {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(messages)}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "10"}},
        *extra,
    ]


def test_a_huge_int_value_is_skipped_with_a_warning(tmp_path):
    huge = {"key": "app.counter", "value": {"intValue": "9" * 5000}}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_span(_attributes([huge]))), encoding="utf-8")
    with pytest.warns(CacheVizWarning, match="app.counter"):
        session = load(path)
    assert len(session.calls) == 1


@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_a_deep_kvlist_value_is_a_one_line_error_or_skipped(tmp_path, layout):
    deep = '{"kvlistValue": {"values": [{"key": "k", "value": ' * 3000
    deep += '{"stringValue": "leaf"}' + "}]}}" * 3000
    record = json.dumps(_span(_attributes([{"key": "app.deep", "value": {"stringValue": "@"}}])))
    text = record.replace('{"stringValue": "@"}', deep)
    path = tmp_path / f"trace.{layout}"
    path.write_text(text + "\n", encoding="utf-8")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheVizWarning)
            session = load(path, format="otel")
    except TranscriptError as exc:
        assert "nested too deeply" in str(exc)
        assert "\n" not in str(exc)
    else:
        assert len(session.calls) == 1


def test_an_otlp_export_without_genai_spans_says_so(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_span([{"key": "http.method", "value": {"stringValue": "GET"}}])))
    with pytest.raises(TranscriptError, match="OTLP") as info:
        load(path)
    assert "\n" not in str(info.value)
