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


class TokenizerCopies:
    """cacheviz's binary copies of tiktoken's ranks (:mod:`cacheviz.request._encodings`), built once.

    Building a copy reads tiktoken's file and computes every section (~1.5 s for
    ``o200k_base``); a test, or a process it starts, whose cacheviz cache folder is new
    and empty would pay that again. :meth:`seed` puts a file copy of the copy there
    instead (milliseconds). A copy is used only with the tiktoken folder it was built
    from (its path and its files' sizes and times are in the copy's key), so one is
    built for each ``$TIKTOKEN_CACHE_DIR`` a test runs with (importing litellm changes it
    for the rest of the run, to the folder litellm ships).
    """

    def __init__(self, folder: Path) -> None:
        from cacheviz.request import _encodings

        self.folder = folder
        self.tables: dict[str, object] = {}  # name: a table built, as its process holds it
        self._files: dict[tuple[str | None, str], Path] = {}
        # the functions of the build, as they are before any test patches them
        self._own = {f: getattr(_encodings, f) for f in ("_constructor", "_read", "_write")}

    def file(self, name: str) -> Path:
        """The copy of encoding ``name`` for this ``$TIKTOKEN_CACHE_DIR``, built on first use."""
        from cacheviz.request import _encodings

        key = (os.environ.get("TIKTOKEN_CACHE_DIR"), name)
        if key not in self._files:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(_encodings, "_TABLES", {})  # built here, held by no test
                for function, own in self._own.items():
                    patch.setattr(_encodings, function, own)
                patch.setenv("CACHEVIZ_CACHE_DIR", str(self.folder / str(len(self._files))))
                path = _encodings.cache_file(name)
                assert not path.exists()  # so the table is built, by tiktoken's constructor
                table = _encodings._table(name)
                assert table is not None and _encodings._read(name) is not None, path
            self.tables.setdefault(name, table)
            self._files[key] = path
        return self._files[key]

    def seed(self, cache_dir: str | Path | None = None, names=("o200k_base",)) -> Path:
        """Copy the copies of ``names`` into a cacheviz cache folder (``$CACHEVIZ_CACHE_DIR``).

        Returns that folder's ``tiktoken`` subfolder, where cacheviz looks for them.
        """
        base = Path(cache_dir if cache_dir is not None else os.environ["CACHEVIZ_CACHE_DIR"])
        target = base / "tiktoken"
        target.mkdir(parents=True, exist_ok=True)
        for name in names:
            shutil.copy(self.file(name), target / f"{name}.ranks")
        return target


@pytest.fixture(scope="session")
def tokenizer_copies(tmp_path_factory) -> TokenizerCopies:
    """Copies of tiktoken's ranks made by cacheviz, built once per session (see seed)."""
    return TokenizerCopies(tmp_path_factory.mktemp("tokenizer-copies"))


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
