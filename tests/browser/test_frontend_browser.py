"""The front end travels once per page (``cacheviz/ui/_frontend.py``).

JupyterLab 4 and Notebook 7: every websocket frame the page receives is kept; the front
end's text (~1.3 MB, a distinctive tail of it counted) arrives once for two inspectors of
one page, with the first one's state; a fresh page of the same kernel, whose widgets do
not carry it (the carrying one is closed), asks once and draws them all with the one
answer. marimo: an inspector made after another one (which carried the front end and was
never shown) asks its kernel once, and is drawn (marimo opens every model a cell makes,
so there the unshown one's state brings the text too, unused).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

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


MARIMO_APP = """
import marimo

app = marimo.App()


@app.cell
def _():
    import cacheviz

    carrying = cacheviz.inspect({path!r})  # made first, never shown
    cacheviz.inspect({path!r})
    return


if __name__ == "__main__":
    app.run()
"""


@pytest.fixture
def marimo_asking(tmp_path, make_payload_session):
    """``marimo run`` of a notebook whose shown inspector does not carry the front end."""
    pytest.importorskip("marimo")
    session = make_payload_session(tmp_path / "payload.jsonl")
    notebook = tmp_path / "asking.py"
    notebook.write_text(MARIMO_APP.format(path=str(session)), encoding="utf-8")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    marimo = os.path.join(os.path.dirname(sys.executable), "marimo")
    cmd = [marimo, "run", str(notebook), "--headless", "--no-token", "-p", str(port)]
    log = tmp_path / "marimo.log"
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            cmd,
            cwd=tmp_path,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    break
        except OSError:
            time.sleep(0.3)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
        pytest.fail(f"marimo did not start:\n{log.read_text()[-3000:]}")
    yield url
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def test_an_inspector_without_the_front_end_asks_in_marimo(marimo_asking, page):
    key, _text = frontend.shared_esm()
    frames = _frames(page)
    errors: list[str] = []
    _ours(page, errors)
    page.goto(marimo_asking)
    # locators pierce marimo's shadow root (document.querySelectorAll does not)
    charts = page.locator(".cacheviz-inspector svg.main-svg")
    deadline = time.monotonic() + 120
    while charts.count() < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert charts.count() >= 3
    assert page.locator(".cacheviz-inspector").count() == 1
    assert page.evaluate(KEYS) == [key]
    # one answer (marimo sends buffers as base64 in JSON: the answer is counted, not the text)
    answer = f'"content":{{"type":"shared_esm","id":"{key}"}}'.encode()
    assert sum(answer in frame for frame in frames) == 1
    assert errors == [] and page.dialogs == [] and page.blocked == []
