"""Line readers stream the file by windows: same lines, same bytes, bounded memory.

The tests shrink ``_lines.WINDOW`` so that lines cross the
window's edge, run longer than it, and end exactly on it; the lines must be those of a
whole-file split.
"""

import json
import tracemalloc
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import _lines
from cacheviz.formats._lines import LineReader
from cacheviz.request._jsonspan import digest


def split_lines(data: bytes) -> tuple[list[tuple[int, str]], list[int]] | None:
    """The lines the reader must yield and the lines it must reject, from the whole file."""
    if not data or data.isspace():
        return None
    good, bad = [], []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line or (line[:1] in (b" ", b"\t", b"\r") and line.isspace()):
            continue
        try:
            good.append((number, line.decode("utf-8")))
        except UnicodeDecodeError:
            bad.append(number)
    return good, bad


def read_lines(path, window, monkeypatch):
    monkeypatch.setattr(_lines, "WINDOW", window)
    reader = LineReader(path, errors="skip")
    try:
        got = list(reader.lines())
    except TranscriptError as exc:
        assert "file is empty" in str(exc)
        return None
    rejected = [s.line for s in reader.skipped] + ([reader.torn.line] if reader.torn else [])
    return got, rejected


MIXED = (
    b'{"a": 1}\n'
    b'{"crlf": "line"}\r\n'
    b"\n"
    b"   \t\r\n"
    b"\x0c\n"  # a form feed: whitespace, but not a blank line
    b'{"text": "caf\xc3\xa9 \xf0\x9f\x98\x80 multi-byte characters"}\n'
    b'{"bad": "\xff"}\n' + b'{"long": "' + b"x" * 300 + b'"}\n' + b'{"last": "no newline"'
)


@pytest.mark.parametrize("window", [1, 2, 3, 5, 8, 13, 64, 1 << 20])
def test_lines_are_those_of_the_whole_file_at_any_window(tmp_path, monkeypatch, window):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(MIXED)
    assert read_lines(path, window, monkeypatch) == split_lines(MIXED)


PIECES = [
    b"a",
    b"{}",
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b"\x0c",
    b"\xc3\xa9",
    b"\xf0\x9f\x98\x80",
    b"\xff",
]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(st.sampled_from(PIECES), max_size=40),
    window=st.integers(min_value=1, max_value=17),
)
def test_any_bytes_at_any_window(tmp_path_factory, parts, window):
    data = b"".join(parts)
    path = tmp_path_factory.mktemp("stream") / "log.jsonl"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert read_lines(path, window, monkeypatch) == split_lines(data)


def test_an_empty_or_all_blank_file_is_refused(tmp_path, monkeypatch):
    for name, data in (("empty", b""), ("blank", b"\n \n\t\r\n"), ("spaces", b"\x0c\n\x0b")):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        monkeypatch.setattr(_lines, "WINDOW", 2)
        with pytest.raises(TranscriptError, match="file is empty"):
            list(LineReader(path).lines())


def _conversation_log(tmp_path, calls: int, newline: str = "\n"):
    """A request log whose requests grow by one message each (so blocks are re-used)."""
    from cacheviz.formats.native import record_line

    messages = []
    lines = []
    for i in range(calls):
        messages.append({"role": "user", "content": f"question {i}: ünïcödé ✓ {'z' * (i * 37)}"})
        body = {
            "model": "claude-sonnet-4-5",
            "system": [
                {"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}
            ],
            "messages": list(messages),
        }
        lines.append(
            record_line(
                body,
                provider="anthropic",
                model="claude-sonnet-4-5",
                api="messages",
                ts=f"2026-01-01T00:00:{i:02d}Z",
            )
        )
        messages.append({"role": "assistant", "content": f"answer {i}"})
    path = tmp_path / f"log{len(newline)}.jsonl"
    path.write_bytes((newline.join(lines) + newline).encode("utf-8"))
    return path


def _fingerprint(session):
    return (
        [(c.line, c.hashes, [b.label for b in c.blocks], c.breakpoints) for c in session.calls],
        {h: c.raw for h, c in session.contents.items()},
    )


@pytest.mark.parametrize("window", [7, 100, 997])
def test_a_request_log_reads_the_same_through_a_small_window(tmp_path, monkeypatch, window):
    path = _conversation_log(tmp_path, 12)
    whole = _fingerprint(cacheviz.load(path))
    monkeypatch.setattr(_lines, "WINDOW", window)
    streamed = cacheviz.load(path)
    assert _fingerprint(streamed) == whole
    data = path.read_bytes()
    assert max(map(len, data.split(b"\n"))) > window  # lines cross the window
    for hash_, content in streamed.contents.items():
        assert content.raw in data  # the bytes as sent, not a re-serialization
        assert digest(content.raw) == hash_


def test_crlf_lines_give_the_blocks_of_lf_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(_lines, "WINDOW", 64)
    lf = _fingerprint(cacheviz.load(_conversation_log(tmp_path, 8)))
    crlf = _fingerprint(cacheviz.load(_conversation_log(tmp_path, 8, "\r\n")))
    assert crlf == lf


@pytest.mark.parametrize("window", [5, 64, 1 << 20])
def test_a_torn_last_line_is_skipped_through_any_window(tmp_path, monkeypatch, window):
    path = _conversation_log(tmp_path, 6)
    data = path.read_bytes()
    last = data[:-1].rsplit(b"\n", 1)[1]
    path.write_bytes(data[: len(data) - 1 - len(last) // 2])  # cut the last line mid-way
    monkeypatch.setattr(_lines, "WINDOW", window)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheVizWarning)
        session = cacheviz.load(path)
    assert [c.line for c in session.calls] == [1, 2, 3, 4, 5]
    assert [s.line for s in session.skipped] == [6]
    assert any("line 6 is incomplete" in str(w.message) for w in caught)


def test_reading_holds_a_window_not_the_file(tmp_path, monkeypatch):
    window = 256 << 10
    line = json.dumps({"pad": "p" * 10_000}).encode() + b"\n"
    lines = 32 * (1 << 20) // len(line)
    path = tmp_path / "big.jsonl"
    path.write_bytes(line * lines)  # 32 MB
    monkeypatch.setattr(_lines, "WINDOW", window)
    tracemalloc.start()  # what Python allocates: the window and a line or two
    try:
        count = sum(1 for _ in LineReader(path).lines())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < window + 20 * len(line) + (256 << 10)
    assert count == lines


def test_an_empty_line_between_calls_is_blank_not_an_error(tmp_path):
    path = _conversation_log(tmp_path, 3)
    path.write_bytes(path.read_bytes().replace(b"\n", b"\n\n", 1))  # main read '' as a line
    session = cacheviz.load(path)  # errors="raise"
    assert [c.line for c in session.calls] == [1, 3, 4]
    assert session.skipped == []


def test_a_file_truncated_while_read_ends_the_read_not_the_process(tmp_path, monkeypatch):
    # another process shortening the file mid-read (a memory map would die of SIGBUS)
    monkeypatch.setattr(_lines, "WINDOW", 1024)
    path = _conversation_log(tmp_path, 40)
    reader = LineReader(path, errors="skip")
    lines = reader.lines()
    first = next(lines)
    with path.open("r+b") as handle:
        handle.truncate(len(path.read_bytes()) // 3)
    rest = list(lines)
    assert first[0] == 1
    assert 0 < len(rest) < 39


def test_a_file_grown_while_read_is_read_up_to_its_size_when_opened(tmp_path, monkeypatch):
    monkeypatch.setattr(_lines, "WINDOW", 1024)
    path = _conversation_log(tmp_path, 5)
    reader = LineReader(path, errors="skip")
    lines = reader.lines()
    first = next(lines)
    with path.open("ab") as handle:
        handle.write(path.read_bytes().splitlines(keepends=True)[-1])
    assert [first[0], *(n for n, _ in lines)] == [1, 2, 3, 4, 5]
