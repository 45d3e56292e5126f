"""Issue 20 in a real browser, on the kernel-less report (the same front end as the
widget): a call-number search selects the call, the ⓘ marks are drawn (no tofu), and the
selected drift copies as Markdown. The re-simulation progress is in test_inspector_lab.py
(it needs a kernel)."""

import pytest

from cacheviz import cli

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


@pytest.fixture
def report(tmp_path, page, make_payload_session):
    log = make_payload_session(tmp_path / "payload.jsonl")
    out = tmp_path / "report.html"
    assert cli.main(["report", str(log), "-o", str(out)]) == 0
    page.goto(out.as_uri())
    root = page.locator(".cacheviz-inspector")
    root.wait_for()
    page.wait_for_function("() => document.querySelectorAll('svg.main-svg').length >= 3")
    root.locator(".cacheviz-detail__cause").wait_for()  # it opens on the costliest drift
    return root


def test_search_for_a_call_number_selects_it_and_fills_the_detail(page, report):
    search = report.locator("input[type=search]")
    search.fill("#2")
    selection = report.locator(".cacheviz-header__selection")
    page.wait_for_function(
        "() => document.querySelector('.cacheviz-header__selection').textContent"
        " === 'selected: call 2'"
    )
    assert selection.text_content() == "selected: call 2"
    detail = report.locator(".cacheviz-detail .cacheviz-panel__body")
    summary = detail.locator(".cacheviz-detail__summary")
    summary.wait_for()
    assert summary.locator("dd").first.text_content() == "2"  # the call's own numbers
    assert "Loading" not in detail.text_content()
    assert "Click a call" not in detail.text_content()
    # the charts show the one call, highlighted
    band = page.evaluate(
        "() => [...document.querySelectorAll('.cacheviz-panel__plot')]"
        ".filter((d) => d._fullLayout).map((d) => (d.layout.shapes || []).length)"
    )
    assert band and all(n == 1 for n in band), band
    assert page.errors == [] and page.blocked == []


def test_help_marks_are_drawn_not_tofu(page, report):
    icons = report.locator(".cacheviz-header__totals svg.cacheviz-info")
    assert icons.count() >= 3  # billed, simulated, ideal, …
    for box in (icons.nth(i).bounding_box() for i in range(icons.count())):
        assert box and box["width"] >= 8 and box["height"] >= 8, box
    # the explanation is the hover title of the fact; no ⓘ character is left to render
    item = report.locator(".cacheviz-header__totals-item:has(svg.cacheviz-info)").first
    assert len(item.get_attribute("title")) > 20
    assert "ⓘ" not in report.text_content()
    # the icon is vector shapes (a ring, a dot, a stem): visible whatever the fonts
    assert (
        page.evaluate(
            "() => document.querySelector('svg.cacheviz-info').querySelectorAll('circle, rect').length"
        )
        == 3
    )


def test_the_selected_drift_copies_as_markdown(page, report):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    call = (
        report.locator(".cacheviz-header__selection").text_content().removeprefix("selected: call ")
    )
    report.locator(".cacheviz-detail__copy").click()
    status = report.locator(".cacheviz-detail__copied")
    page.wait_for_function(
        "() => /copied call/.test(document.querySelector('.cacheviz-detail__copied').textContent)"
    )
    assert status.text_content() == f"copied call {call} as Markdown"
    text = page.evaluate("() => navigator.clipboard.readText()")
    assert text.startswith(f"### cacheviz: drift (content_edited) at call {call}\n")
    assert "- session: `" in text and "payload.jsonl" in text
    assert "**previous call" in text and "**this call" in text
    # the payloads are in it as text, inside code fences
    assert "rewritten <img src=x onerror=alert('img')>" in text
    assert text.count("```text") == 2
    # the first call has neither a drift nor a miss: nothing to copy
    report.locator("input[type=search]").fill("#0")
    page.wait_for_function(
        "() => document.querySelector('.cacheviz-detail__copy').disabled"
        " && document.querySelector('.cacheviz-detail__copied').textContent === ''"
    )
    assert page.dialogs == [] and page.errors == [] and page.blocked == []
