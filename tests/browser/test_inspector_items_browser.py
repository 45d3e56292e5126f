"""Issue 33 in a real browser: the README's one line in JupyterLab 4, Notebook 7 and marimo.

One walk per front end, on a session whose main model is recorded under a dated name (not
in the model list: item 3's trap) and whose side calls use a model without a price (item
16's comparison row):

- 17: ``cacheviz.inspect(path)`` shows the inspector with its controls, in marimo too;
- 3: provider away and back restores "recorded models";
- 4: re-selecting the settings the view opened with shows the same waste;
- 12: a word of a message's text is found (call + segment), a click selects the call;
- 6: a filter that shows no call says so in the Providers panel (not "no price");
- 16: the unpriced comparison row shows "no price" and its reason.

Each step waits for the kernel's answer (the target re-simulated, the search's results).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]

SAMPLE = Path(__file__).resolve().parents[2] / "sample_sessions" / "reported_usage.jsonl"
DATED = "claude-sonnet-4-5-20250929"  # priced, but not a name of the model list
UNPRICED = "claude-unpriced-9"
SEARCHED = "5-word title"  # in the side calls' system prompt, in no segment label
KERNEL_IDLE = (
    "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
    " && window.jupyterapp.shell.currentWidget.sessionContext"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
    " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"
)


def _session(path: Path) -> None:
    out = []
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        name = DATED if record["model"] == "claude-sonnet-4-5" else UNPRICED
        record["model"] = record["request"]["model"] = name
        out.append(json.dumps(record))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def _waste(root) -> str:
    text = root.locator(".cacheviz-header").text_content()
    found = re.search(r"waste\s*(\$.*?)(?=hit ratio|token scale|reconciliation|input tokens)", text)
    assert found, text
    return found.group(1).strip()


def _until(check, what: str, timeout: float = 60) -> None:
    """Poll ``check()`` (Playwright locators pierce marimo's shadow root; document.* does not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    message = f"timed out waiting for {what}"
    raise AssertionError(message)


def _text(locator) -> str:
    return locator.first.text_content() if locator.count() else ""


def _walk(page) -> None:
    root = page.locator(".cacheviz-inspector")
    target = root.locator(".cacheviz-providers__target")
    header = root.locator(".cacheviz-header")
    selection = root.locator(".cacheviz-header__selection")

    def _wait_target(pattern: str) -> None:
        _until(lambda: re.search(pattern, _text(target)) is not None, f"target {pattern}")

    root.wait_for(timeout=120_000)
    provider = root.locator("select[data-control=provider]")
    model = root.locator("select[data-control=model]")
    provider.wait_for()
    # item 17's controls are the widget's own; it opens on a call (item 11)
    assert provider.input_value() == "anthropic" and model.input_value() == ""
    _until(lambda: re.match(r"selected: call \d+", _text(selection)) is not None, "a selection")
    _wait_target("as recorded")
    opened = _waste(root)
    assert re.match(r"\$[\d.]+ = billed \$[\d.]+ − ideal \$[\d.]+ of \d+ calls with usage", opened)

    # item 3: away and back
    provider.select_option("openai")
    _wait_target("openai")
    assert model.input_value() != ""
    provider.select_option("anthropic")
    _wait_target("anthropic.*as recorded")
    assert model.input_value() == ""
    assert _waste(root) == opened

    # item 4: another strategy, then the one the view opened with: the same waste
    strategy = root.locator("select[data-control=breakpoints]")
    strategy.select_option("none")
    _until(lambda: opened not in _text(header), "another waste")
    strategy.select_option("")
    _until(lambda: opened in _text(header), "the opening waste again")
    assert _waste(root) == opened

    # item 16: the comparison (built once the panel is seen) shows the unpriced row's reason
    providers = root.locator(".cacheviz-providers")
    providers.scroll_into_view_if_needed()
    row = providers.locator("tr", has_text=f"anthropic:{UNPRICED}")
    row.wait_for(timeout=120_000)
    assert "no price" in row.text_content()
    assert providers.locator(".cacheviz-providers__row-error", has_text=UNPRICED).count() >= 1

    # item 12: full-text search of a message's text; a click selects the call found
    search = root.locator("input[type=search]")
    search.scroll_into_view_if_needed()
    search.fill(SEARCHED)
    item = root.locator(".cacheviz-header__found-item").first
    item.wait_for(timeout=60_000)
    assert SEARCHED in item.text_content()
    call = item.get_attribute("data-call")
    item.click()
    _until(lambda: _text(selection) == f"selected: call {call}", f"call {call} selected")

    # item 6: a filter that shows no call says so, not that the models have no price
    search.fill("zq-no-such-text-zq")
    empty = providers.locator(".cacheviz-panel__empty", has_text="No calls in this filter.")
    empty.wait_for(timeout=60_000)
    assert "price" not in empty.text_content()

    assert page.blocked == []
    assert not [e for e in page.errors if "cacheviz" in e.lower()]


def test_the_one_line_in_jupyter(lab, page):
    _session(lab.root / "session.jsonl")
    cells = ["import cacheviz\ncacheviz.inspect('session.jsonl')", "print('ALL-CELLS-DONE')"]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "id": f"c{i}",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(cells)
        ],
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    }
    (lab.root / "items.ipynb").write_text(json.dumps(notebook))
    page.goto(lab.notebook_url("items.ipynb"))
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.locator(".jp-OutputArea-output:has-text('ALL-CELLS-DONE')").wait_for(timeout=120_000)
    _walk(page)
    if lab.app == "lab" and os.environ.get("CACHEVIZ_SCREENSHOTS") == "1":
        # docs/inspector.md's screenshot of the notebook inspector and its controls
        root = page.locator(".cacheviz-inspector")
        root.locator("input[type=search]").fill(SEARCHED)
        root.locator(".cacheviz-header__found-item").first.wait_for()
        root.locator(".cacheviz-header").scroll_into_view_if_needed()
        shot = Path(__file__).resolve().parents[2] / "docs" / "inspector-jupyterlab.png"
        page.screenshot(path=str(shot), full_page=False)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server this test started (its own process group)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    except ProcessLookupError:
        pass


MARIMO_APP = """
import marimo

app = marimo.App()


@app.cell
def _():
    import cacheviz

    cacheviz.inspect({path!r})
    return


if __name__ == "__main__":
    app.run()
"""


@pytest.fixture
def marimo_app(tmp_path):
    """``marimo run`` of a one-line notebook on a free loopback port."""
    pytest.importorskip("marimo")
    session = tmp_path / "session.jsonl"
    _session(session)
    notebook = tmp_path / "items.py"
    notebook.write_text(MARIMO_APP.format(path=str(session)), encoding="utf-8")
    log = tmp_path / "marimo.log"
    port = _free_port()
    marimo = shutil.which("marimo", path=str(Path(sys.executable).parent)) or "marimo"
    cmd = [marimo, "run", str(notebook), "--headless", "--no-token", "-p", str(port)]
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
        _stop(proc)
        pytest.fail(f"marimo did not start:\n{log.read_text()[-3000:]}")
    yield url
    _stop(proc)


def test_the_one_line_in_marimo(marimo_app, page):
    page.goto(marimo_app)
    _walk(page)
    assert page.locator("text=not supported in marimo").count() == 0
