"""The teaching lab in JupyterLab 4 and Notebook 7: every cell runs, the playground's
widgets and plotly figures render, and a click on a control re-simulates in Python."""

import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

LAB = Path(__file__).resolve().parents[2] / "notebooks" / "02-prompt-caching-lab.ipynb"
KERNEL_IDLE = (
    "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
    " && window.jupyterapp.shell.currentWidget.sessionContext"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"
)


def test_lab_playground_renders_and_reacts(lab, page):
    shutil.copy(LAB, lab.root / "lab.ipynb")
    page.goto(lab.notebook_url("lab.ipynb"))
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    done = page.locator(".jp-OutputArea-output:has-text('LAB-DONE')")
    done.wait_for(timeout=240_000)
    done.scroll_into_view_if_needed()  # long notebooks render the cells in view

    # the block order is a tags widget; the figures are plotly charts
    closers = page.locator(".jupyter-widget-tag-close")  # one per tag
    closers.last.wait_for(state="attached", timeout=120_000)
    closers.last.scroll_into_view_if_needed()
    assert closers.count() == 5
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 3")

    # the last cell removed the breakpoints, then put them back: the lab ends working
    stats = page.locator(".widget-html:has-text('hit ratio')").last
    assert "hit ratio 0%" not in stats.text_content()
    assert "check none" in stats.text_content()
    # a click in the page takes them off (nothing is read), another puts them back
    buttons = page.locator(".widget-toggle-buttons", has_text="cache_control").last
    buttons.locator("button", has_text="none").click()
    page.wait_for_function(
        "(el) => el.textContent.includes('hit ratio 0%')", arg=stats.element_handle()
    )
    buttons.locator("button", has_text="breakpoints").click()
    page.wait_for_function(
        "(el) => !el.textContent.includes('hit ratio 0%')", arg=stats.element_handle()
    )
    assert "hit ratio" in stats.text_content() and "check none" in stats.text_content()
