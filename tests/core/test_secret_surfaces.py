"""Every secret pattern by every surface a transcript's text reaches.

Each pattern is planted in a line of the system prompt that changes on every call (so
``check`` quotes it, the drift detail shows it) and in a request sent through the proxy
and ``record()``. A surface leaks when any 8-character run of the secret shows in it.
The changing line puts the secret across ``check``'s 80-character cut: a surface that
cuts before it redacts shows a piece of it.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path

import pytest

import cacheviz
from cacheviz.check import check
from cacheviz.check._output import to_junit, to_sarif
from cacheviz.cli import main
from cacheviz.formats.native import record_line
from cacheviz.redact import REDACTED, redact
from cacheviz.ui._detail import drift_detail
from cacheviz.ui._scan import scan_data, scan_html
from cacheviz.ui.report import read_details, report_data

sys.path.insert(0, str(Path(__file__).parents[1]))  # fake_provider
sys.path.insert(0, str(Path(__file__).parents[1] / "recording"))  # test_proxy

# (context with {} for the secret, the secret): made-up credentials, none is real
PATTERNS = {
    "anthropic": ("key {} here", "sk-ant-api03-Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7iO9qW4rT6yP"),
    "openai-project": ("OPENAI_API_KEY={}", "sk-proj-Qm3Lk9Xv2Tb8Nw5Rc7Yh1Jd4Fs6Gp0ZaWq7Ee2Rr"),
    "aws-configure-set": (
        "aws configure set aws_secret_access_key {}",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lm3Nv5T",
    ),
    "aws-ini": ("aws_secret_access_key = {}", "Hq2Xv8LmN4pR7tY1wK3nB6cF9hJ5dS0gA2eU7iO9"),
    "aws-env": ("export AWS_SECRET_ACCESS_KEY={}", "Tb8Nw5Rc7Yh1Jd4Fs6Gp0Za2Xv8LmN4pR7tY1wK3"),
    "aws-json": ('{{"SecretAccessKey": "{}"}}', "Rc7Yh1Jd4Fs6Gp0Za2Xv8LmN4pR7tY1wK3nB6cF9"),
    "redis-userinfo": ("REDIS_URL=redis://:{}@cache.internal:6379/0", "Pz8qW2xN7vLm4RtYk3Hs"),
    "postgres-userinfo": ("postgres://app:{}@db.internal:5432/x", "Vn5bG8hJ2kL9mQ4wE7rT"),
    "https-userinfo": ("git clone https://deploy:{}@git.example.com/r.git", "Ck4Dp7Wq2Zx9Rt5YmLs8"),
    "huggingface": ("HF_TOKEN {}", "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"),
    "npm-bare": ("token {} in .npmrc", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    "github": ("{}", "ghp_R7tY2uI9oP4aS6dF8gH1jK3lZ5xC0vB2nM4q"),
    "slack": ("{}", "xoxb-284710395721-4718290374652-Qw3Er5Ty7Ui9Op1As3Df5Gh"),
    "stripe": ("{}", "sk_live_51HqLyjWDarjtT1zdp7dcXyZ9aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT"),
    "google-api-key": ("{}", "AIzaSyD4-xQ7mN2pL9kJ5hG3fD1sA8zX6cV0bB2"),
    "bearer": ("Authorization: Bearer {}", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5"),
    "password-field": ('password: "{}"', "correct-horse-battery-staple"),
}
SURFACES = (
    "proxy-log",
    "record-log",
    "widget-drift-detail",
    "check-text",
    "check-json",
    "check-sarif",
    "check-junit",
    "report",
    "scan-html",
)
_PREFIXES = r"^(sk-ant-api03-|sk-proj-|sk_live_|xoxb-|ghp_|hf_|npm_|AIza)"
CUT = 80  # check's quoted line is cut here


def _pieces(secret: str, size: int = 8) -> set[str]:
    core = re.sub(_PREFIXES, "", secret)
    return {core[i : i + size] for i in range(len(core) - size + 1)}


def leaked(text: str, secret: str) -> list[str]:
    """The 8-character pieces of ``secret`` that show in ``text`` (JSON escapes undone)."""
    flat = text.replace("\\/", "/").replace("\\n", "\n")
    return sorted(p for p in _pieces(secret) if p in flat)


def _line(kind: str, call: int) -> str:
    """The changing system line: the secret starts before the cut and ends after it."""
    context, secret = PATTERNS[kind]
    text = context.format(secret)
    start = text.index(secret) + len(f"at 00:00:0{call} ")
    pad = max(0, CUT - 12 - start)
    return f"at 00:00:0{call} {'.' * pad} {text} end"


def _body(kind: str, call: int) -> dict:
    soul = " ".join(f"Rule {i}: keep the prefix stable, append changes." for i in range(120))
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": [{"type": "text", "text": f"{soul}\n{_line(kind, call)}\nBe brief."}],
        "messages": [
            turn
            for i in range(call + 1)
            for turn in (
                {"role": "user", "content": f"question {i}"},
                {"role": "assistant", "content": f"answer {i}"},
            )
        ][:-1],
    }


def _usage(call: int) -> dict:
    return {
        "input_tokens": 10,
        "cache_creation_input_tokens": 1500,
        "cache_read_input_tokens": 0,
        "output_tokens": 5,
    }


def _write_session(folder: Path, kind: str) -> Path:
    lines = [
        record_line(
            _body(kind, call),
            provider="anthropic",
            model="claude-sonnet-4-5",
            api="messages",
            ts=f"2026-01-01T00:0{call}:00Z",
            usage=_usage(call),
        )
        for call in range(3)
    ]
    path = folder / kind / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("secrets")
    return {kind: _write_session(folder, kind) for kind in PATTERNS}


def _cli(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main(args)
    return out.getvalue()


def _recorded(kind: str, via: str, tmp: Path) -> str:
    """The log line the proxy or ``record()`` wrote for a request holding the secret."""
    pytest.importorskip("aiohttp", reason="the record extra is not installed")
    httpx2 = pytest.importorskip("httpx2", reason="the record extra is not installed")
    from fake_provider import FakeProvider

    body = json.dumps(_body(kind, 1)).encode()
    log = tmp / f"{via}.jsonl"
    with FakeProvider() as fake:
        if via == "proxy":
            from test_proxy import RunningProxy

            with RunningProxy(fake.url, log) as proxy, httpx2.Client() as client:
                client.post(f"{proxy.url}/v1/messages", content=body)
                proxy.lines(1)
        else:
            with cacheviz.record(log), httpx2.Client() as client:
                client.post(f"{fake.url}/v1/messages", content=body)
    return log.read_text(encoding="utf-8")


def surface(name: str, kind: str, path: Path, tmp: Path) -> str:
    """The text ``name`` shows for the session at ``path``."""
    if name in ("proxy-log", "record-log"):
        return _recorded(kind, name.split("-")[0], tmp)
    if name == "widget-drift-detail":
        analysis = cacheviz.load(path).analyze()
        return json.dumps([drift_detail(analysis, c) for c in range(analysis.calls.height)])
    if name == "check-text":
        return _cli(["check", str(path)])
    if name == "check-json":
        return _cli(["check", str(path), "--json"])
    if name == "check-sarif":
        return json.dumps(to_sarif(check(path)))
    if name == "check-junit":
        return to_junit(check(path))
    if name == "report":
        data = report_data(cacheviz.load(path).analyze())
        return json.dumps(data) + json.dumps(read_details(data))
    if name == "scan-html":
        result = cacheviz.scan([path.parent], cache=False, jobs=1, progress=False)
        return scan_html(scan_data(result))
    raise AssertionError(name)


@pytest.mark.parametrize("name", SURFACES)
@pytest.mark.parametrize("kind", list(PATTERNS))
@pytest.mark.slow
def test_no_piece_of_a_secret_reaches_a_surface(kind, name, sessions, tmp_path):
    secret = PATTERNS[kind][1]
    shown = surface(name, kind, sessions[kind], tmp_path)
    assert leaked(shown, secret) == [], f"{kind} on {name}"


@pytest.mark.parametrize("kind", list(PATTERNS))
def test_every_pattern_is_redacted_in_its_context(kind):
    context, secret = PATTERNS[kind]
    out = redact(context.format(secret))
    assert REDACTED in out
    assert leaked(out, secret) == []


def test_check_quotes_the_changing_line_redacted_then_cut(sessions):
    """The quoted line still names where it changed: the text before the secret stays."""
    [finding] = [
        f for f in check(sessions["openai-project"]).findings if "changing line" in f.message
    ]
    assert "at 00:00:01" in finding.message or "at 00:00:02" in finding.message
    assert REDACTED in finding.message
