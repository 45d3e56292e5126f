"""Issue 13: corrupt input never becomes a silent wrong number, and no line is lost."""

import json
import warnings

import pytest

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError

SONNET = "claude-sonnet-4-5-20250929"


def _cc(kind, uuid, parent, ts, message, **extra):
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "timestamp": ts,
        "isSidechain": False,
        "message": message,
        **extra,
    }


def _claude_code(turns=4, *, usage_of=None):
    """A Claude Code session: ``turns`` user → assistant exchanges, growing."""
    lines = []
    parent = None
    for i in range(turns):
        ts = f"2026-01-01T10:00:{2 * i:02d}Z"
        lines.append(_cc("user", f"u{i}", parent, ts, {"role": "user", "content": f"step {i}"}))
        usage = {
            "input_tokens": 3,
            "cache_read_input_tokens": 15000 + 20 * i if i else 0,
            "cache_creation_input_tokens": 20 if i else 15000,
            "output_tokens": 7,
        }
        if usage_of is not None:
            usage = usage_of(i, usage)
        message = {
            "id": f"msg_{i}",
            "role": "assistant",
            "model": SONNET,
            "content": [{"type": "text", "text": f"done {i}"}],
            "usage": usage,
        }
        ts = f"2026-01-01T10:00:{2 * i + 1:02d}Z"
        lines.append(_cc("assistant", f"a{i}", f"u{i}", ts, message))
        parent = f"a{i}"
    return [json.dumps(r) for r in lines]


def _write(tmp_path, lines, name="5c0375b4-aaaa.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _string_read_on_call(n):
    def corrupt(i, usage):
        if i == n:
            usage["cache_read_input_tokens"] = str(usage["cache_read_input_tokens"])
        return usage

    return corrupt


# -- item 1: corrupt usage ------------------------------------------------------------


def test_a_string_count_is_a_one_line_error_naming_file_line_and_field(tmp_path):
    path = _write(tmp_path, _claude_code(usage_of=_string_read_on_call(1)))
    with pytest.raises(TranscriptError) as caught:
        cacheviz.load(path)
    message = str(caught.value)
    assert "\n" not in message
    assert caught.value.line == 4  # the assistant line of the second exchange
    assert message.startswith(f"{path}:4: ")
    assert "`usage.cache_read_input_tokens`" in message
    assert "--errors skip" in message


def test_skip_nulls_that_calls_usage_and_keeps_every_other_number(tmp_path):
    clean = cacheviz.load(_write(tmp_path, _claude_code(), "clean.jsonl"))
    path = _write(tmp_path, _claude_code(usage_of=_string_read_on_call(0)))
    with pytest.warns(CacheVizWarning, match=r"usage set to null for 1 call.*line 2 \("):
        session = cacheviz.load(path, errors="skip")
    assert len(session.calls) == len(clean.calls)
    assert session.calls[0].usage is None
    assert [c.usage for c in session.calls[1:]] == [c.usage for c in clean.calls[1:]]
    assert session.skipped == []  # the line is kept: later requests are unchanged


def test_no_corrupt_part_ever_reaches_a_derived_input(tmp_path):
    def negative(i, usage):
        usage["cache_creation_input_tokens"] = (
            -15000 if i == 2 else usage["cache_creation_input_tokens"]
        )
        return usage

    path = _write(tmp_path, _claude_code(usage_of=negative))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        session = cacheviz.load(path, errors="skip")
    inputs = [None if c.usage is None else c.usage.input_tokens for c in session.calls]
    assert inputs[2] is None
    assert all(v is None or v > 0 for v in inputs)
