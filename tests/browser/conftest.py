"""Real-browser fixtures: Debian's chromium driven by Playwright, and a JupyterLab server.

The recipe is ../shared/reference/browser-testing.md: the system chromium (never
``playwright install``), a fresh profile per test, every non-loopback request aborted
and recorded, a JupyterLab server on a free loopback port with isolated settings, killed
with its process group. The tests skip when chromium, playwright or jupyterlab is absent.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 60_000


def pytest_collection_modifyitems(config, items):
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append("chromium (apt-get install chromium)")
    for module in ("playwright", "jupyterlab"):
        # find, don't import: importing jupyterlab costs seconds of every run's collection
        if importlib.util.find_spec(module) is None:
            missing.append(f"{module} (pip install -e '.[browser]')")
    if missing:
        skip = pytest.mark.skip(reason="browser tests need " + ", ".join(missing))
        for item in items:
            if "browser" in item.keywords:
                item.add_marker(skip)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    os.setsid()
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(proc: subprocess.Popen) -> None:
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


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path
    app: str  # "lab" (JupyterLab 4) or "notebook" (Notebook 7)

    def notebook_url(self, name: str) -> str:
        """Where the app opens a notebook."""
        if self.app == "lab":
            return f"{self.url}/lab/tree/{name}?reset&token={self.token}"
        return f"{self.url}/notebooks/{name}?token={self.token}"


_APPS = {
    "lab": (
        "jupyterlab",
        "LabApp",
        [
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ],
    ),
    "notebook": ("notebook", "JupyterNotebookApp", []),
}


@pytest.fixture(params=["lab", "notebook"])
def lab(request, tmp_path):
    """A JupyterLab 4 or Notebook 7 server rooted in ``tmp_path / "work"``."""
    app = request.param
    module, config, extra = _APPS[app]
    pytest.importorskip(module)
    root = tmp_path / "work"
    root.mkdir()
    base = tmp_path / "jupyter"
    settings = base / "lab-settings"
    (settings / "@jupyterlab/notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab/notebook-extension/tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"})
    )
    (settings / "@jupyterlab/apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab/apputils-extension/notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    env = dict(os.environ)
    for var, sub in (
        ("JUPYTER_CONFIG_DIR", "cfg"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTER_DATA_DIR", "data"),
        ("IPYTHONDIR", "ipython"),
    ):
        (base / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(base / sub)
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    env.pop("JUPYTER_PATH", None)
    token = secrets.token_hex(16)
    log = tmp_path / "jupyterlab.log"
    for _ in range(3):
        port = _free_port()
        cmd = [
            sys.executable,
            "-m",
            module,
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            f"--{config}.user_settings_dir={settings}",
            f"--{config}.workspaces_dir={base / 'workspaces'}",
            f"--{config}.expose_app_in_browser=True",
            *extra,
        ]
        with log.open("wb") as handle:
            proc = subprocess.Popen(
                cmd,
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + 60
        up = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2
                ) as reply:
                    up = reply.status == 200
                    break
            except OSError:
                time.sleep(0.2)
        if up:
            break
        _stop(proc)
    else:
        pytest.fail(f"JupyterLab did not start:\n{log.read_text()[-3000:]}")
    yield Lab(f"http://127.0.0.1:{port}", token, root, log, app)
    _stop(proc)


@pytest.fixture(scope="session")
def playwright_instance():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture
def page(playwright_instance, tmp_path):
    """A fresh-profile chromium page; ``.blocked`` (external URLs), ``.errors``, ``.dialogs``."""
    context = playwright_instance.chromium.launch_persistent_context(
        str(tmp_path / "profile"),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": 1400, "height": 1200},
    )
    context.set_default_timeout(TIMEOUT_MS)
    blocked: list[str] = []

    def route(request_route):
        host = re.match(r"^https?://([^/:]+)", request_route.request.url).group(1)
        if host in ("127.0.0.1", "localhost"):
            return request_route.continue_()
        blocked.append(request_route.request.url)
        return request_route.abort()

    context.route(re.compile(r"^https?://"), route)
    tab = context.pages[0] if context.pages else context.new_page()
    tab.blocked = blocked
    tab.errors = []
    tab.dialogs = []
    tab.on("pageerror", lambda error: tab.errors.append(str(error)))

    def on_dialog(dialog):
        tab.dialogs.append(dialog.message)
        dialog.dismiss()

    tab.on("dialog", on_dialog)
    yield tab
    context.close()


PAYLOADS = [
    "<img src=x onerror=alert('img')>",
    "<script>alert('script')</script>",
    "</script><script>alert('breakout')</script>",
    "<svg onload=alert('svg')>",
    '<!-- comment --> & "quotes"',
]


def payload_session(path: Path) -> Path:
    """A small Anthropic session whose texts are injection payloads, with one drift."""
    from cacheviz.formats.native import record_line

    system = [
        {
            "type": "text",
            "text": "You are careful. " * 80 + PAYLOADS[2],
            "cache_control": {"type": "ephemeral"},
        }
    ]
    tools = [
        {
            "name": "<img src=x onerror=alert('tool')>",
            "description": PAYLOADS[3],
            "input_schema": {"type": "object"},
        }
    ]
    history = []
    lines = []
    for i in range(6):
        text = f"step {i}: {PAYLOADS[i % len(PAYLOADS)]} " * 3
        history.append(
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": text}],
            }
        )
        messages = list(history)
        if i == 4:  # rewrite an old message: a drift whose both sides carry payloads
            messages[0] = {
                "role": "user",
                "content": [{"type": "text", "text": "rewritten " + PAYLOADS[0]}],
            }
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "system": system,
            "tools": tools,
            "messages": messages,
        }
        usage = {
            "input_tokens": 5,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "output_tokens": 3,
        }
        lines.append(
            record_line(
                body,
                provider="anthropic",
                model="claude-sonnet-4-5",
                api="messages",
                ts=f"2026-01-01T00:0{i}:00Z",
                usage=usage,
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def make_payload_session():
    """Write the payload session to a path; returns the path."""
    return payload_session
