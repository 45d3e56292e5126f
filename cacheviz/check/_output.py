"""Check results as SARIF 2.1.0 (GitHub code scanning) and JUnit XML (CI systems)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cacheviz.check._rules import RULES

if TYPE_CHECKING:
    from cacheviz.check import CheckResult

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_DOCS = "https://github.com/cacheviz/cacheviz/blob/main/docs/check.md"


# what XML 1.0 does not allow in a document (C0 controls but tab, LF, CR; surrogates; FFFE/F)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    r"""``text`` with the characters XML 1.0 forbids shown as ``\uXXXX`` escapes.

    Examples
    --------
    >>> xml_text("gpt\x1b[31m\x07")
    'gpt\\u001b[31m\\u0007'
    """
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _uri(path: str | None) -> str:
    """A SARIF artifact URI: relative to the working folder when inside it, percent-encoded."""
    if path is None:
        return "session"
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(Path.cwd())
        except ValueError:
            return candidate.as_uri()
    return quote(candidate.as_posix(), safe="/")


def to_sarif(result: CheckResult, version: str = "") -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, every rule in the driver, one result per finding.

    Results point at the transcript line of the first call involved.
    """
    ids = list(RULES)
    rules = [
        {
            "id": rule.id,
            "name": rule.id,
            "shortDescription": {"text": rule.title},
            "fullDescription": {"text": f"{rule.why} Source: {rule.source}."},
            "help": {"text": rule.fix},
            "helpUri": f"{_DOCS}#{rule.id}",
            "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        }
        for rule in RULES.values()
    ]
    results = []
    for finding in result.findings:
        location: dict[str, Any] = {"artifactLocation": {"uri": _uri(result.path)}}
        if finding.line is not None:
            location["region"] = {"startLine": max(1, finding.line)}
        results.append(
            {
                "ruleId": finding.rule,
                "ruleIndex": ids.index(finding.rule),
                "level": _LEVEL[finding.severity],
                "message": {"text": finding.message},
                "locations": [{"physicalLocation": location}],
                "properties": {
                    "calls": finding.calls,
                    "cost_usd": finding.cost_usd,
                    "thread": finding.thread,
                },
            }
        )
    driver: dict[str, Any] = {"name": "cacheviz", "informationUri": _DOCS, "rules": rules}
    if version:
        driver["version"] = version
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }


def to_junit(result: CheckResult) -> str:
    """JUnit XML: a test suite per session, a test case per rule run.

    A rule with findings of severity warning or error fails; ``info`` findings are
    written to the case's ``system-out``.
    """
    name = xml_text(result.path or "session")
    suite = ET.Element("testsuite", name=f"cacheviz check {name}")
    failures = 0
    for rule in result.rules:
        case = ET.SubElement(suite, "testcase", classname="cacheviz.check", name=rule)
        mine = [f for f in result.findings if f.rule == rule]
        failing = [f for f in mine if f.severity != "info"]
        if failing:
            failures += 1
            failure = ET.SubElement(
                case,
                "failure",
                message=f"{len(failing)} finding(s) in {name}",
                type="error" if any(f.severity == "error" for f in failing) else "warning",
            )
            failure.text = xml_text("\n\n".join(f"calls {f.calls}: {f.message}" for f in failing))
        notes = [f for f in mine if f.severity == "info"]
        if notes:
            ET.SubElement(case, "system-out").text = xml_text("\n\n".join(f.message for f in notes))
    suite.set("tests", str(len(result.rules)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def failed_sarif(message: str, path: str | None, version: str = "") -> dict[str, Any]:
    """A SARIF log for a check that could not run: no results, one error notification.

    ``cacheviz check`` writes it when it exits 2, so a CI step that uploads the SARIF
    file ``if: always()`` still finds one, and code scanning shows why.
    """
    driver: dict[str, Any] = {"name": "cacheviz", "informationUri": _DOCS, "rules": []}
    if version:
        driver["version"] = version
    notification: dict[str, Any] = {"level": "error", "message": {"text": message}}
    if path is not None:
        artifact = {"artifactLocation": {"uri": _uri(path)}}
        notification["locations"] = [{"physicalLocation": artifact}]
    invocation = {"executionSuccessful": False, "toolExecutionNotifications": [notification]}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "invocations": [invocation], "results": []}],
    }


def failed_junit(message: str, path: str | None) -> str:
    """JUnit XML for a check that could not run: one test case in error."""
    name = xml_text(path or "session")
    suite = ET.Element("testsuite", name=f"cacheviz check {name}", tests="1", failures="0")
    suite.set("errors", "1")
    case = ET.SubElement(suite, "testcase", classname="cacheviz.check", name="load")
    ET.SubElement(case, "error", message=xml_text(message), type="error")
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def write_sarif(
    result: CheckResult, path: str | Path, version: str = "", *, option: str | None = None
) -> Path:
    """Write :func:`to_sarif` to ``path`` (whole, never over the checked transcript)."""
    text = json.dumps(to_sarif(result, version), indent=1) + "\n"
    return _write(result.path, path, text, "SARIF file", option)


def write_junit(result: CheckResult, path: str | Path, *, option: str | None = None) -> Path:
    """Write :func:`to_junit` to ``path`` (whole, never over the checked transcript)."""
    return _write(result.path, path, to_junit(result), "JUnit file", option)


def _write(source: str | None, path: str | Path, text: str, what: str, option: str | None) -> Path:
    from cacheviz import _writing

    inputs = None if source in (None, "-") else _writing.Inputs.transcript(source)
    return _writing.write(path, text, what=what, option=option, inputs=inputs)
