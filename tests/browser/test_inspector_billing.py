"""Issue 20 items 1 and 5 in a real browser, on the kernel-less report (the widget's own
front end) of the bundled sample with reported usage: under any filter the header bills
the shown calls ("billed (of the shown calls)", never "no usage reported" when they have
usage), and billed stands beside simulated per call (the cost chart, the call detail)."""

from pathlib import Path

import pytest

import cacheviz
from cacheviz import cli
from cacheviz.ui import _state as state

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

SAMPLE = Path(__file__).parents[2] / "sample_sessions" / "reported_usage.jsonl"


def usd(value: float) -> str:
    """The front end's formatUsd for amounts under a dollar: three significant digits."""
    assert 0 < value < 1
    return f"${float(f'{value:.3g}')}"


@pytest.fixture(scope="module")
def shown():
    return state.build(cacheviz.load(SAMPLE).analyze())


@pytest.fixture
def report(tmp_path, page):
    out = tmp_path / "report.html"
    assert cli.main(["report", str(SAMPLE), "-o", str(out)]) == 0
    page.goto(out.as_uri())
    root = page.locator(".cacheviz-inspector")
    root.wait_for()
    page.wait_for_function("() => document.querySelectorAll('svg.main-svg').length >= 3")
    return root


def header_facts(page) -> dict[str, str]:
    return page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('.cacheviz-header__totals dt')]"
        ".map((dt) => [dt.textContent.trim(), dt.nextElementSibling.textContent.trim()]))"
    )


def wait_shown(page, n: int) -> None:
    page.wait_for_function(
        "(n) => [...document.querySelectorAll('.cacheviz-header__totals dt')]"
        ".some((dt) => dt.textContent.trim() === 'calls shown'"
        " && dt.nextElementSibling.textContent.trim() === String(n))",
        arg=n,
    )


def billed_of(shown, calls) -> float:
    billed = shown.costs["billed_usd"].to_list()
    return sum(billed[c] for c in calls)


def test_every_filter_bills_the_shown_calls(page, report, shown):
    assert shown.meta["target"]["provider"] == "anthropic"
    whole = header_facts(page)
    assert whole["billed"] == usd(shown.meta["billed_usd"])
    timeline = shown.timeline
    misses = timeline.filter(timeline["miss"])["call"].to_list()
    side = timeline.filter(timeline["thread"] == 1)["call"].to_list()
    assert misses and side

    def check(calls):
        wait_shown(page, len(calls))
        facts = header_facts(page)
        assert "billed" not in facts  # the session's bill is not shown as the filter's
        assert facts["billed (of the shown calls)"] == usd(billed_of(shown, calls)), facts
        assert "no usage reported" not in report.locator(".cacheviz-header").text_content()

    page.select_option("select[aria-label=cause]", "miss")
    check(misses)
    page.select_option("select[aria-label=cause]", "")
    page.select_option("select[aria-label=thread]", "1")
    check(side)
    page.select_option("select[aria-label=thread]", "-1")
    report.locator("input[type=search]").fill("#5")
    check([5])
    # the providers panel bills the same shown call beside its simulated cost
    target = "".join(report.locator(".cacheviz-providers__target").text_content().split())
    assert f"billed(1showncall){usd(billed_of(shown, [5]))}ideal" in target
    report.locator("input[type=search]").fill("")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.cacheviz-header__totals dt')]"
        ".some((dt) => dt.textContent.trim() === 'billed')"
    )
    assert page.errors == [] and page.blocked == []


def test_billed_beside_simulated_per_call(page, report, shown):
    billed = shown.costs["billed_usd"].to_list()
    simulated = shown.costs["cost_usd"].to_list()
    # the cost chart draws the billed cost of every call, for this vendor's session
    trace = page.evaluate(
        "() => { const d = [...document.querySelectorAll('.cacheviz-panel__plot')]"
        ".find((p) => p._fullData && p.data.some((t) => t.name === 'billed per call'));"
        " const t = d.data.find((t) => t.name === 'billed per call');"
        " const i = d._fullData.findIndex((t) => t.name === 'billed per call');"
        " return { y: t.y, x: t.x, visible: d._fullData[i].visible,"
        " points: d.querySelectorAll('.scatterlayer .trace')[i - 1]"
        "?.querySelectorAll('.point').length ?? -1 }; }"
    )
    assert trace["visible"] is True
    assert trace["y"] == pytest.approx(billed)
    assert trace["points"] == len(billed)  # drawn: one marker per call
    # the call detail: the call's bill right after its simulated cost
    report.locator("input[type=search]").fill("#3")
    page.wait_for_function(
        "() => document.querySelector('.cacheviz-header__selection').textContent"
        " === 'selected: call 3'"
    )
    summary = report.locator(".cacheviz-detail__summary")
    summary.wait_for()
    labels = [t.strip() for t in summary.locator("dt").all_text_contents()]
    values = [t.strip() for t in summary.locator("dd").all_text_contents()]
    at = labels.index("simulated cost (anthropic)")
    assert labels[at + 1] == "billed"
    assert values[at] == usd(simulated[3])
    assert values[at + 1] == usd(billed[3])
    hit = shown.timeline["hit_ratio"][3]
    assert values[labels.index("hit rate (reported)")] == f"{hit * 100:.1f}%"
    assert page.errors == [] and page.blocked == []
