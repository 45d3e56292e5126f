"""The HTML report opened from a file, offline: charts render, payloads stay text."""

import pytest

from cacheviz import cli

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


def test_report_renders_offline_and_keeps_payloads_as_text(tmp_path, page, make_payload_session):
    log = make_payload_session(tmp_path / "payload.jsonl")
    report = tmp_path / "report.html"
    assert cli.main(["report", str(log), "-o", str(report)]) == 0
    html = report.read_text()
    assert "http://" not in html.split("<script>", 1)[0] and "<script src" not in html

    page.goto(report.as_uri())
    root = page.locator(".cacheviz-inspector")
    root.wait_for()
    page.wait_for_function("() => document.querySelectorAll('svg.main-svg').length >= 3")
    # the report opens on the costliest drift, precomputed
    detail = root.locator(".cacheviz-detail")
    detail.locator(".cacheviz-detail__cause").wait_for()
    sides = detail.locator(".cacheviz-detail__text").all_text_contents()
    assert any("<img src=x onerror=alert('img')>" in side for side in sides)
    root.locator(".cacheviz-detail__nav button:not([disabled])").first.click()
    assert page.dialogs == []
    assert (
        page.evaluate(
            "() => document.querySelectorAll('body img, body iframe, [onerror], [onload]').length"
        )
        == 0
    )
    assert (
        page.evaluate("() => document.querySelectorAll('script').length") == 2
    )  # data + code, nothing added
    assert page.blocked == [] and page.errors == []
