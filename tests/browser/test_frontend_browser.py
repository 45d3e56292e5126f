"""The front end travels once per page (``cacheviz/ui/_frontend.py``), in JupyterLab 4 and Notebook 7.

Every websocket frame the page receives is kept: the front end's text (~1.3 MB, a
distinctive tail of it counted) arrives once for two inspectors of one page, with the
first one's state; a fresh page of the same kernel, whose widgets do not carry it (the
carrying one is closed), asks once and draws them all with the one answer.
"""

from __future__ import annotations

import json

import pytest

from cacheviz.ui import _frontend as frontend

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

CELLS = [
    "import cacheviz\na = cacheviz.inspect('payload.jsonl')\na",
    "b = cacheviz.inspect('payload.jsonl')\nb",
    "c = cacheviz.inspect('payload.jsonl')\nc",
    "a.close()\nprint('ALL-CELLS-DONE')",
]
KERNEL_IDLE = (
    "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
    " && window.jupyterapp.shell.currentWidget.sessionContext"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"
)
CHARTS = "n => document.querySelectorAll('.cacheviz-inspector svg.main-svg').length >= n"
KEYS = "() => Object.keys(globalThis.__cachevizFrontEnds || {})"


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
        for i, src in enumerate(CELLS)
    ]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.write_text(
        json.dumps(
            {"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": kernel}}
        )
    )


def _ours(page, stacks: list[str]) -> None:
    """Keep in ``stacks`` those of ``page``'s uncaught errors that cacheviz's code threw.

    Its code runs from blob: URLs. Notebook 7 throws one of its own while loading its
    settings, unrelated to widgets.
    """
    page.on(
        "pageerror",
        lambda error: (
            stacks.append(error.stack or str(error))
            if "blob:" in (error.stack or "") or "cacheviz" in str(error).lower()
            else None
        ),
    )


def _frames(page) -> list[bytes]:
    """Every websocket frame ``page`` receives from now on (text frames as UTF-8)."""
    frames: list[bytes] = []

    def on_socket(socket):
        socket.on(
            "framereceived",
            lambda payload: frames.append(
                payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
            ),
        )

    page.on("websocket", on_socket)
    return frames


def test_two_inspectors_take_the_front_end_once_and_a_fresh_page_asks_once(
    lab, page, make_payload_session
):
    key, text = frontend.shared_esm()
    tail = text[-300:]  # the inspector's default export: in no other message
    make_payload_session(lab.root / "payload.jsonl")
    _notebook(lab.root / "twice.ipynb")
    frames = _frames(page)
    errors: list[str] = []
    _ours(page, errors)
    page.goto(lab.notebook_url("twice.ipynb"))
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.locator(".jp-OutputArea-output:has-text('ALL-CELLS-DONE')").wait_for(timeout=120_000)
    # b and c drawn (a is closed by the last cell, its view removed)
    page.wait_for_function(CHARTS, arg=6, timeout=120_000)
    assert page.locator(".cacheviz-inspector").count() == 2
    assert sum(tail in frame for frame in frames) == 1
    assert page.evaluate(KEYS) == [key]
    received = sum(map(len, frames))
    assert len(text) < received < 2 * len(text)  # the rest is small next to the front end
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(KERNEL_IDLE)

    # a fresh page of the same kernel: no module yet, no widget carrying it
    fresh = page.context.new_page()
    fresh_frames = _frames(fresh)
    _ours(fresh, errors)
    fresh.goto(lab.notebook_url("twice.ipynb"))
    fresh.wait_for_function(KERNEL_IDLE, timeout=120_000)
    fresh.wait_for_function(CHARTS, arg=6, timeout=120_000)
    assert fresh.locator(".cacheviz-inspector").count() == 2
    assert sum(tail in frame for frame in fresh_frames) == 1  # asked once, answered once
    assert fresh.evaluate(KEYS) == [key]
    assert fresh.locator("text=cacheviz: loading the front end").count() == 0
    assert errors == [] and page.dialogs == [] and page.blocked == []
