"""What travels for the front end (``cacheviz/ui/_frontend.py``): once per kernel, once per page.

Each widget is opened on a comm that records every message it sends (the comm the kernel
would use), so the bytes counted are the widget's own: its ``comm_open`` (state and
binary buffers) and its messages.
"""

import hashlib
import json
import threading
from pathlib import Path
from typing import ClassVar

import comm
import pytest
from comm.base_comm import BaseComm

import cacheviz
from cacheviz.static import STATIC, bundle
from cacheviz.ui import _frontend as frontend
from cacheviz.ui.widget import Inspector

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
BUILT = (STATIC / "inspector.js").is_file() and (STATIC / "loader.js").is_file()


class Recorded(BaseComm):
    """A comm that keeps each message it publishes: (type, JSON data, buffers)."""

    log: ClassVar[list] = []

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        self.log.append((msg_type, data, [bytes(b) for b in buffers or []]))


def _size(message) -> int:
    _type, data, buffers = message
    return len(json.dumps(data, default=str).encode()) + sum(len(b) for b in buffers)


@pytest.fixture
def sent(monkeypatch):
    """Every message widgets made in the test send; the process's first widget not yet made."""
    log: ClassVar[list] = []
    monkeypatch.setattr(Recorded, "log", log)
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: Recorded(**kwargs))
    monkeypatch.setattr(frontend.CARRIED, "taken", False)
    return log


@pytest.fixture(scope="module")
def analysis():
    return cacheviz.load(SAMPLES / "environment_details.jsonl").analyze()


def _shown(analysis, sent) -> list:
    """The messages of one more inspector, made as a cell showing it makes it."""
    start = len(sent)
    Inspector(analysis)
    return sent[start:]


@pytest.mark.skipif(not BUILT, reason="the front end is not built (make widgets)")
def test_the_front_end_travels_with_the_first_widget_only(analysis, sent):
    key, text = frontend.shared_esm()
    assert text == bundle("inspector.js").encode("utf-8")
    assert key == hashlib.blake2b(text, digest_size=16).hexdigest()
    shown = [_shown(analysis, sent) for _ in range(10)]
    sizes = [sum(map(_size, messages)) for messages in shown]
    opened = [
        next(m for m in messages if m[0] == "comm_open" and "_esm" in m[1]["state"])
        for messages in shown
    ]
    # the first widget's state carries the text, as one binary buffer
    assert text in opened[0][2]
    for _type, data, _buffers in opened:
        assert data["state"]["_esm"] == (STATIC / "loader.js").read_text("utf-8")
        assert data["state"]["_shared_esm_id"] == key
    assert len(opened[0][1]["state"]["_esm"]) < 4_000
    # later widgets carry neither the text nor anything its size
    for messages in shown[1:]:
        assert all(text not in m[2] for m in messages)
        assert all(text[-2000:].decode() not in json.dumps(m[1]) for m in messages)
    assert sizes[0] > len(text) > 1_000_000
    assert sizes[1] == sizes[9] < 100_000
    assert sizes[0] - sizes[1] == pytest.approx(len(text), abs=100)


@pytest.mark.skipif(not BUILT, reason="the front end is not built (make widgets)")
def test_a_page_without_the_front_end_asks_and_is_answered_once(analysis, sent):
    _shown(analysis, sent)
    widget = Inspector(analysis)
    key, text = frontend.shared_esm()
    start = len(sent)
    widget._handle_custom_msg({"type": "shared_esm", "text": "alert(1)"}, [])
    (answer,) = sent[start:]
    assert answer[1]["content"] == {"type": "shared_esm", "id": key}
    assert answer[2] == [text]  # the package's build: nothing of the question is sent back
    # the inspector's own requests are not answered with the front end
    start = len(sent)
    widget._handle_custom_msg({"type": "search", "text": "shared_esm"}, [])
    widget._handle_custom_msg("shared_esm", [])
    assert all(text not in m[2] for m in sent[start:])


def test_a_rebuilt_front_end_is_read_again(monkeypatch, tmp_path):
    for name in ("plotly.js", "inspector.js"):
        (tmp_path / name).write_text(f"// {name}\n", "utf-8")
    monkeypatch.setattr(frontend, "STATIC", tmp_path)
    monkeypatch.setattr(frontend, "bundle", lambda entry: (tmp_path / entry).read_text("utf-8"))
    key, text = frontend.shared_esm()
    assert frontend.shared_esm() == (key, text)
    (tmp_path / "inspector.js").write_text("// rebuilt, longer\n", "utf-8")
    again, new = frontend.shared_esm()
    assert new == b"// rebuilt, longer\n" and again != key


def test_only_one_widget_takes_the_first_place_across_threads():
    once = frontend.Once()
    got: list[bool] = []
    threads = [threading.Thread(target=lambda: got.append(once.take())) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == [False] * 15 + [True]
    assert once.take() is False


def test_without_a_build_the_widget_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(frontend, "LOADER", tmp_path / "loader.js")
    assert frontend.loader() == frontend.MISSING
    monkeypatch.setattr(frontend, "bundle", lambda entry: None)
    key, text = frontend.read_shared_esm(("not built",))
    assert text == frontend.MISSING.encode("utf-8")
    assert "make widgets" in frontend.MISSING
    assert key == hashlib.blake2b(text, digest_size=16).hexdigest()
