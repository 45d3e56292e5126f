"""Memory of a loaded Claude Code session: one copy of each message's text (issue 19).

A rebuilt message block keeps the bytes of its request (they are the truth the
analysis hashes and diffs); its parsed value is made from them when read, not held as
a second copy, and no record or message dict of the reader outlives the read.
"""

import gc
import json
import pickle

import pytest

import cacheviz
from cacheviz.model import Content
from cacheviz.request._blocks import compact_json

MARKER = "zq-marker-7d1f"


def _write(path):
    """Write a session whose every message holds MARKER (no record stays referenced)."""
    lines = []
    parent = None
    for turn in range(4):
        user, reply = f"u{turn}", f"a{turn}"
        lines.append(
            {
                "type": "user",
                "uuid": user,
                "parentUuid": parent,
                "sessionId": "s1",
                "timestamp": f"2026-01-01T10:0{turn}:00Z",
                "message": {"role": "user", "content": f"{MARKER} question {turn} ü 𝄞"},
            }
        )
        lines.append(
            {
                "type": "assistant",
                "uuid": reply,
                "parentUuid": user,
                "sessionId": "s1",
                "timestamp": f"2026-01-01T10:0{turn}:05Z",
                "requestId": f"req_{turn}",
                "message": {
                    "id": f"msg_{turn}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [{"type": "text", "text": f"{MARKER} answer {turn} \ud800"}],
                    "usage": {
                        "input_tokens": 3,
                        "cache_creation_input_tokens": 100,
                        "cache_read_input_tokens": 15000,
                        "output_tokens": 5,
                    },
                },
            }
        )
        parent = reply
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")


def _messages(session):
    return [c for c in session.contents.values() if c.kind == "message:messages"]


def test_a_rebuilt_message_keeps_its_bytes_and_parses_them_when_read(tmp_path):
    path = tmp_path / "s1.jsonl"
    _write(path)
    session = cacheviz.load(path)
    messages = _messages(session)
    assert len(messages) == 7  # the last answer is in no request
    for content in messages:
        assert not content.parsed  # no second copy of the text is held
        value = content.value
        assert value is not content.value  # parsed anew, not cached
        assert value == json.loads(content.raw.decode("utf-8", "surrogatepass"))
        # the bytes are exactly the request's message, rebuilt: nothing re-serialized hides
        assert compact_json(value).encode("utf-8", "surrogatepass") == content.raw
    assert any("\ud800" in json.dumps(c.value, ensure_ascii=False) for c in messages)


@pytest.mark.slow
def test_no_record_of_the_reader_outlives_the_read(tmp_path):
    path = tmp_path / "s1.jsonl"
    _write(path)
    session = cacheviz.load(path)
    gc.collect()
    alive = [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, dict)
        and ("role" in obj or "sessionId" in obj or "text" in obj)
        and MARKER in repr(obj)
    ]
    assert alive == []
    assert session.calls  # the session is still there, its texts in bytes only
    assert all(MARKER.encode() in c.raw for c in _messages(session))


def test_an_unparsed_content_stays_unparsed_through_pickle():
    raw = compact_json({"role": "user", "content": "hi ü"}).encode()
    content = Content.unparsed(raw, "message:messages")
    copy = pickle.loads(pickle.dumps(content))
    assert not copy.parsed
    assert copy == content
    assert copy.value == {"role": "user", "content": "hi ü"}
    held = pickle.loads(pickle.dumps(Content(raw, {"role": "user", "content": "hi ü"}, "tool")))
    assert held.parsed
    assert held.value == {"role": "user", "content": "hi ü"}
