from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
REALDATA = SHARED / "realdata"
SAMPLES = ROOT / "sample_sessions"


def _offline_tiktoken() -> None:
    """Point tiktoken at a writable copy of ../shared/tiktoken when nothing else is set."""
    if os.environ.get("TIKTOKEN_CACHE_DIR") or not (SHARED / "tiktoken").is_dir():
        return
    cache = ROOT / ".cache" / "tiktoken"
    cache.mkdir(parents=True, exist_ok=True)
    for source in (SHARED / "tiktoken").iterdir():
        if source.name[0] in "0123456789abcdef" and not (cache / source.name).exists():
            shutil.copy(source, cache / source.name)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


_offline_tiktoken()


def _private_caches() -> str:
    """Caches the code under test writes (scan tables, tiktoken ranks, prices) go to a
    temporary folder for the whole run, never to the user's cache folder."""
    folder = os.environ.get("CACHEVIZ_CACHE_DIR")
    if not folder:
        folder = tempfile.mkdtemp(prefix="cacheviz-test-cache-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ["CACHEVIZ_CACHE_DIR"] = folder
    return folder


CACHE_DIR = _private_caches()


@pytest.fixture(autouse=True)
def _private_cache_dir(monkeypatch) -> None:
    """The run's cache folder is restored after each test, even one that removed it."""
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", os.environ.get("CACHEVIZ_CACHE_DIR") or CACHE_DIR)


@pytest.fixture
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip("../shared/realdata is not present")
    return REALDATA


def _anthropic_body(messages, *, system=None, tools=None, model="claude-sonnet-4-5"):
    body = {"model": model, "max_tokens": 1024}
    if system is not None:
        body["system"] = system
    if tools is not None:
        body["tools"] = tools
    body["messages"] = messages
    return body


@pytest.fixture
def anthropic_body():
    """Build an Anthropic Messages request body."""
    return _anthropic_body


@pytest.fixture
def write_log(tmp_path):
    """Write request bodies (or raw lines) as a cacheviz request log; return its path."""
    from cacheviz.formats.native import record_line

    def write(items, name="log.jsonl", *, provider="anthropic", api="messages", usage=None):
        lines = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                lines.append(item)
                continue
            ts = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
            u = usage[i] if usage else None
            lines.append(
                record_line(item, provider=provider, model=item["model"], api=api, ts=ts, usage=u)
            )
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write


@pytest.fixture
def loads_or_fails_cleanly():
    """Check a reader on a (fuzzed) input: it loads, or fails in one clear line.

    ``read(path, errors)`` returns a Session; both error policies are tried. A failure
    must be a TranscriptError of one line naming the file (and never showing ``secret``).
    """
    import warnings

    from cacheviz.errors import CacheVizWarning, TranscriptError

    def check(path, read, *, secret=None):
        for errors in ("raise", "skip"):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", CacheVizWarning)
                    session = read(path, errors)
            except TranscriptError as exc:
                message = str(exc)
                assert "\n" not in message and str(path) in message
                assert secret is None or secret not in message
                continue
            assert session.calls

    return check


def pytest_collection_modifyitems(items):
    """Mark the tests that read ../shared/realdata (``-m "not realdata"`` skips them)."""
    for item in items:
        uses = "realdata" in getattr(item, "fixturenames", ())
        if uses or "/tests/realdata/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.realdata)
