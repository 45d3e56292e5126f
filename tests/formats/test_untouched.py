"""Reading never changes the input: no file or folder gains, loses or changes a byte.

For each reader an input is built in its own folder (the fixtures of its tests, or a copy
of a real transcript from ``../shared/realdata``), the whole tree is hashed (every
entry's name, type, size, mtime and SHA-256), the input is loaded, and the tree is hashed
again. SQLite stores are written in WAL mode, as the agents keep them. The readers no
builder covers yet are listed in ``NOT_YET``: the test fails when a reader is in neither
list, so a new reader comes with its case.
"""

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import cacheviz
from cacheviz.formats import READERS
from tests.conftest import REALDATA, SAMPLES

ROOT = Path(__file__).resolve().parents[2]


def _tree(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: (kind, size, mtime ns, sha256) by relative path."""
    out: dict[str, tuple] = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs:
            path = Path(top) / name
            out[str(path.relative_to(folder))] = ("dir", path.stat().st_mtime_ns)
        for name in files:
            path = Path(top) / name
            info = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[str(path.relative_to(folder))] = ("file", info.st_size, info.st_mtime_ns, digest)
    return out


def _real(sub: str, pattern: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        found = sorted((REALDATA / sub).glob(pattern)) if REALDATA.is_dir() else []
        if not found:
            pytest.skip(f"{REALDATA / sub} is absent")
        copy = folder / found[0].name
        shutil.copyfile(found[0], copy)
        return copy

    return build


def _sample(folder: Path) -> Path:
    copy = folder / "append_only.jsonl"
    shutil.copyfile(SAMPLES / "append_only.jsonl", copy)
    return copy


def _lines(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def _kimi(folder: Path) -> Path:
    from tests.formats.test_kimi_cli import kimi_home

    return kimi_home(folder)[1]


def _qwen(folder: Path) -> Path:
    from tests.formats.test_qwen_code import _chat

    return _lines(folder / "chats" / "s.jsonl", _chat())


def _copilot(folder: Path) -> Path:
    from tests.formats.test_copilot_cli import _events

    return _lines(folder / "s1" / "events.jsonl", _events())


def _opencode(folder: Path) -> Path:
    from tests.formats.test_opencode import _records, _write_db

    path = _write_db(folder / "opencode.db", *_records())
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    return path


def _amp(folder: Path) -> Path:
    from tests.formats.test_amp import THREAD_ID, thread

    path = folder / "threads" / f"{THREAD_ID}.json"
    path.parent.mkdir()
    path.write_text(json.dumps(thread(), indent=2))
    return path


def _pi(folder: Path) -> Path:
    from tests.formats.test_pi import pi_session

    return _lines(folder / "--app--" / "x_1.jsonl", pi_session())


def _openclaw(folder: Path) -> Path:
    from tests.formats.test_pi import openclaw_session

    sessions = folder / "agents" / "main" / "sessions"
    (sessions.parent).mkdir(parents=True)
    return _lines(sessions / "s.jsonl.reset.2026-02-24T01-46-27.666Z", openclaw_session())


def _hermes(folder: Path) -> Path:
    from tests.formats.test_hermes import hermes_db

    return hermes_db(folder)


def _goose(folder: Path) -> Path:
    from tests.formats.test_goose import goose_db

    return goose_db(folder)


def _droid(folder: Path) -> Path:
    from tests.formats.test_droid import droid_session

    return droid_session(folder)


def _crush(folder: Path) -> Path:
    from tests.formats.test_crush import crush_db

    return crush_db(folder / ".crush")[0]


def _continue(folder: Path) -> Path:
    from tests.formats.test_continue_dev import records, write

    return write(folder, records())


def _antigravity(folder: Path) -> Path:
    from tests.formats.test_antigravity import conversation

    return conversation(folder)


def _grok(folder: Path) -> Path:
    from tests.formats.test_grok import grok_session

    return grok_session(folder)


def _zcode(folder: Path) -> Path:
    from tests.formats.test_zcode import zcode_db

    return zcode_db(folder)


def _codebuff(folder: Path) -> Path:
    from tests.formats.test_codebuff import codebuff_chat

    return codebuff_chat(folder)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "cacheviz": _sample,
    "claude-code": _real("claude_code_jsonl", "chiphuyen*.jsonl"),
    "codex": _real("codex_rollout", "*.jsonl"),
    "gemini-cli": _real("gemini_cli", "*.jsonl"),
    "inspect": _real("inspect_log", "*.json"),
    "openhands": _real("openhands", "*.jsonl"),
    "aider": _real("aider", "*.aider.llm.history"),
    "kimi-cli": _kimi,
    "qwen-code": _qwen,
    "copilot-cli": _copilot,
    "opencode": _opencode,
    "amp": _amp,
    "pi": _pi,
    "openclaw": _openclaw,
    "hermes": _hermes,
    "goose": _goose,
    "droid": _droid,
    "crush": _crush,
    "continue": _continue,
    "antigravity": _antigravity,
    "grok": _grok,
    "zcode": _zcode,
    "codebuff": _codebuff,
}
REFUSES = {"antigravity"}  # named and refused in one line (encrypted): still nothing written
# readers whose case is still to write here (their own tests build their inputs)
NOT_YET = {
    "openai-log",
    "claude-trace",
    "claude-tap",
    "cc-viewer",
    "mitmproxy",
    "gemini-cli-json",
    "cline",
    "swe-agent",
    "whale-usage",
    "cline-ui",
    "otel",
}


def test_every_reader_has_a_case_or_is_listed():
    assert set(BUILDERS) | NOT_YET == set(READERS)
    assert not set(BUILDERS) & NOT_YET


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_reading_leaves_the_input_tree_as_it_was(tmp_path, name):
    folder = tmp_path / "input"
    folder.mkdir()
    path = BUILDERS[name](folder)
    before = _tree(folder)
    if name in REFUSES:
        with pytest.raises(cacheviz.errors.TranscriptError):
            cacheviz.load(path, format=name)
    else:
        session = cacheviz.load(path, format=name)
        assert session.format == name
        assert session.calls
    assert _tree(folder) == before
