"""The inspector in JupyterLab 4 and Notebook 7: first render, selection through Python,
re-simulation, XSS payloads staying text."""

import json
import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

NOTEBOOK_CELLS = [
    "import cacheviz\nview = cacheviz.inspect('payload.jsonl')\nview",
    "print('ALL-CELLS-DONE')",
]


def _notebook(path):
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": src,
        }
        for i, src in enumerate(NOTEBOOK_CELLS)
    ]
    path.write_text(
        json.dumps(
            {
                "cells": cells,
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {
                    "kernelspec": {
                        "name": "python3",
                        "display_name": "Python 3",
                        "language": "python",
                    }
                },
            }
        )
    )


def test_inspector_renders_selects_and_resimulates(lab, page, make_payload_session):
    make_payload_session(lab.root / "payload.jsonl")
    _notebook(lab.root / "inspect.ipynb")
    page.goto(lab.notebook_url("inspect.ipynb"))
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.sessionContext && window.jupyterapp.shell.currentWidget.sessionContext.session && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
        timeout=120_000,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.locator(".jp-OutputArea-output:has-text('ALL-CELLS-DONE')").wait_for(timeout=120_000)

    root = page.locator(".cacheviz-inspector")
    root.wait_for()
    # first render of every view: timeline, shape map and costs are plotly charts
    page.wait_for_function(
        "() => document.querySelectorAll('.cacheviz-inspector svg.main-svg').length >= 3"
    )
    assert root.locator(".cacheviz-panel").count() >= 4

    # select the next drift: the click goes to Python, which sends the drift detail back
    root.locator(".cacheviz-detail__nav button", has_text="drift").last.click()
    detail = root.locator(".cacheviz-detail")
    detail.locator(".cacheviz-detail__cause").wait_for()
    assert detail.locator(".cacheviz-detail__cause").text_content() == "content_edited"
    # the payloads are shown as text, never parsed as markup
    sides = detail.locator(".cacheviz-detail__text").all_text_contents()
    assert any("<img src=x onerror=alert('img')>" in side for side in sides)

    # switch the provider and name its model: Python re-simulates, the providers view redraws
    providers = root.locator(".cacheviz-providers")
    assert "anthropic" in providers.text_content()
    provider = root.locator("select[data-control=provider]")  # the controls are the widget's
    provider.select_option("deepseek")
    # the model picker lists DeepSeek's priced models and picks the comparable one
    page.wait_for_function(
        "() => /deepseek-chat/.test("
        "document.querySelector('.cacheviz-providers__target').textContent)"
    )
    model = root.locator("select[data-control=model]")
    assert model.input_value() == "deepseek-chat"
    assert re.search(r"\$\d", providers.text_content())
    # a self-hosted engine: a message, never an empty chart (defect 7)
    provider.select_option("vllm")
    page.wait_for_function(
        "() => /self-hosted/.test(document.querySelector('.cacheviz-providers').textContent)"
    )
    # issue 31: its estimated prefill factor, the session's and its costliest drift point's
    facts = root.locator(".cacheviz-providers__target").text_content()
    assert re.search(r"prefill factor\s*[\d.]+× the same session without drift", facts), facts
    assert re.search(r"costliest drift point\s*call \d+: [\d.]+×", facts), facts

    # issue 20 item 4: a control change shows that a re-simulation runs, then its result
    provider.select_option("anthropic")
    page.wait_for_function(
        "() => /re-simulated in .*: anthropic/.test("
        "document.querySelector('.cacheviz-header__status').textContent)"
    )
    page.evaluate(
        """() => {
          const status = document.querySelector('.cacheviz-header__status');
          window.__statusSeen = [];
          new MutationObserver(() => window.__statusSeen.push(
            [status.className, status.textContent])).observe(
            status, { childList: true, characterData: true, subtree: true, attributes: true });
        }"""
    )
    root.locator("select[data-control=breakpoints]").select_option("auto")
    page.wait_for_function(
        "() => window.__statusSeen.some(([c]) => c.includes('--done'))"
        " && window.__statusSeen.some(([c]) => c.includes('--busy'))"
    )
    seen = page.evaluate("() => window.__statusSeen")
    busy = [text for cls, text in seen if "--busy" in cls]
    done = [text for cls, text in seen if "--done" in cls]
    assert busy[0].startswith("simulating… "), seen  # with a spinner and its seconds
    assert re.match(
        r"re-simulated in \d+\.\d s: anthropic \$[\d.]+ \((unchanged|was .*)\)$", done[-1]
    ), seen
    assert not [cls for cls, _ in seen if "--error" in cls], seen

    # issue 20 item 2: searching a call number selects it; Python sends its detail
    root.locator("input[type=search]").fill("#2")
    page.wait_for_function(
        "() => document.querySelector('.cacheviz-header__selection').textContent"
        " === 'selected: call 2'"
    )
    body = root.locator(".cacheviz-detail .cacheviz-panel__body")
    body.locator(".cacheviz-detail__facts").first.wait_for()  # the detail Python computed
    assert "Loading" not in body.text_content()
    assert "claude-sonnet-4-5" in body.text_content()  # its model, from the detail dict

    # nothing executed, nothing injected, nothing fetched from the network
    assert page.dialogs == []
    assert root.locator("img, script, iframe, object, embed").count() == 0
    assert page.evaluate("() => document.querySelectorAll('[onerror], [onload]').length") == 0
    assert page.blocked == []
    assert not [e for e in page.errors if "cacheviz" in e.lower()]
