"""Corrupt input never becomes a silent wrong number, and no line is lost."""

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
    # the unlogged prefix is sized from the next call's sane usage, never from a corrupt one
    assert session.analyze().calls["unlogged_tokens"][0] > 0


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


# -- item 3: mixed formats --------------------------------------------------------------


def test_native_lines_after_a_claude_code_file_are_an_error_not_dropped(tmp_path, write_log):
    native = write_log(
        [{"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}]
    )
    lines = _claude_code() + native.read_text().splitlines()
    path = _write(tmp_path, lines)
    with pytest.raises(TranscriptError, match=r":9: a cacheviz record in a claude-code file"):
        cacheviz.load(path)
    with pytest.warns(CacheVizWarning, match=r"line 9 \(a cacheviz record in a claude-code"):
        session = cacheviz.load(path, errors="skip")
    assert len(session.calls) == 4


# -- item 5: skipping lines ----------------------------------------------------------------


def test_skip_names_every_skipped_line_and_the_calls_it_changes(tmp_path):
    lines = _claude_code(turns=4)
    lines[2] = "{broken"  # the second user turn
    lines.append("[1]")
    path = _write(tmp_path, lines)
    with pytest.warns(CacheVizWarning) as caught:
        session = cacheviz.load(path, errors="skip")
    message = str(caught[0].message)
    assert "skipped 2 bad line(s): line 3 (" in message
    assert "; line 9 (" in message
    later = [c.index for c in session.calls if c.line > 3]
    assert later == [1, 2, 3]
    assert "3 later call(s) (#1, 2, 3)" in message


def test_the_warning_names_twenty_lines_then_counts(tmp_path, write_log):
    good = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}
    path = write_log([good] + ["{bad"] * 25)
    with pytest.warns(CacheVizWarning) as caught:
        cacheviz.load(path, errors="skip")
    message = str(caught[0].message)
    assert "line 21 (" in message and "line 22 (" not in message
    assert "and 5 more" in message


# -- items 6, 10: pipes and standard input ------------------------------------------------


def _big_native_log(write_log, calls=400):
    filler = "x" * 4000
    bodies = [
        {
            "model": "claude-sonnet-4-5",
            "messages": [{"role": "user", "content": f"{filler} {i}"}],
        }
        for i in range(calls)
    ]
    return write_log(bodies)


def test_a_named_pipe_is_read_once_and_in_full(tmp_path, write_log):
    import os
    import threading

    source = _big_native_log(write_log)
    assert source.stat().st_size > 1 << 20  # past detection's first window
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)

    def writer():
        with fifo.open("wb") as out:
            out.write(source.read_bytes())

    thread = threading.Thread(target=writer)
    thread.start()
    session = cacheviz.load(fifo)
    thread.join()
    assert len(session.calls) == len(cacheviz.load(source).calls) == 400
    assert str(session.path) == str(fifo)


def test_a_small_pipe_is_not_empty(tmp_path, write_log):
    import subprocess
    import sys

    source = write_log([{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}])
    result = subprocess.run(
        [sys.executable, "-m", "cacheviz", "summary", "-", "--json"],
        input=source.read_bytes(),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert len(doc["calls"]) == 1


def test_stdin_errors_name_stdin_not_a_temporary_file(monkeypatch, tmp_path):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"a": 1}x\n')))
    with pytest.raises(TranscriptError) as caught:
        cacheviz.load("-")
    assert str(caught.value).startswith("<stdin>:1:9: ")


def test_a_named_pipe_without_a_writer_times_out(tmp_path, monkeypatch):
    import os

    from cacheviz import formats

    fifo = tmp_path / "nobody.jsonl"
    os.mkfifo(fifo)
    monkeypatch.setattr(formats, "FIFO_TIMEOUT", 0.2)
    with pytest.raises(TranscriptError, match=r"nobody\.jsonl: no data arrived on the named pipe"):
        cacheviz.load(fifo)


# -- items 7, 11, 12: detection --------------------------------------------------------------


def test_a_first_line_longer_than_the_window_is_detected(tmp_path):
    lines = _claude_code()
    first = json.loads(lines[0])
    screenshot = {"type": "image", "source": {"type": "base64", "data": "A" * (3 << 20)}}
    first["message"]["content"] = [screenshot, {"type": "text", "text": "what is this?"}]
    lines[0] = json.dumps(first)
    path = _write(tmp_path, lines)
    assert cacheviz.formats.detect(path) == "claude-code"
    assert len(cacheviz.load(path).calls) == 4


@pytest.mark.parametrize(
    ("content", "where", "says"),
    [
        (b'{"a": 1} {"b": 2}\n', ":1:10: ", "two objects on one line"),
        (b'{"a": 1}garbage\n', ":1:9: ", "trailing data"),
        (b'{"sessionId": "s", "uuid": "u", "type": "us', ":1:", "may be truncated"),
        (b'\xef\xbb\xbf{"a": 1}\n', ":1:1: ", "byte-order mark"),
        (b'{"n": ' + b"7" * 5000 + b"}\n", ":1: ", "longer than 4,300 digits"),
        (b"[" * 5000 + b"]" * 5000 + b"\n", ":1: ", "nested too deeply"),
        (b'\n\n{"a": "\xff"}\n', ":3:8: ", "not valid UTF-8"),
        (b'{"kind": "x", "id": 3}\n', ":1: ", "keys (id, kind) match no known format"),
    ],
    ids=["two-objects", "garbage", "truncated", "bom", "5000-digits", "deep", "utf8", "keys"],
)
def test_first_line_problems_say_what_and_where(tmp_path, content, where, says):
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    with pytest.raises(cacheviz.errors.UnknownFormatError) as caught:
        cacheviz.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}{where}"), message
    assert says in message
    assert "\n" not in message


def test_a_symlink_loop_is_named_as_one(tmp_path):
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    with pytest.raises(TranscriptError, match="symbolic link that loops"):
        cacheviz.load(tmp_path / "a.jsonl")


@pytest.mark.parametrize("depth", [990, 5000, 100_000])
def test_every_detector_is_total_on_deep_nesting(tmp_path, depth):
    from cacheviz.formats import READERS

    for opener, closer in ((b"[", b"]"), (b'{"a":', b"}")):
        head = opener * depth + b"1" + closer * depth + b"\n"
        path = tmp_path / "deep.jsonl"
        path.write_bytes(head)
        for name, module in READERS.items():
            try:
                module.detect(path, head)
            except RecursionError:  # pragma: no cover - the failure this test looks for
                pytest.fail(f"{name}.detect raised RecursionError at depth {depth}")
        with pytest.raises(cacheviz.errors.UnknownFormatError):
            cacheviz.load(path)


# -- item 8: Claude Code sub-agent files ------------------------------------------------------


def _with_subagents(tmp_path):
    path = _write(tmp_path, _claude_code(turns=2))
    folder = tmp_path / path.stem / "subagents"
    folder.mkdir(parents=True)
    own = [line.replace('"msg_', '"msg_sub_') for line in _claude_code(turns=2)]  # its own calls
    (folder / "agent-good.jsonl").write_text("\n".join(own) + "\n")
    return path, folder


@pytest.mark.parametrize("fault", ["empty", "folder", "loop"])
def test_a_faulty_subagent_file_is_named_and_skippable(tmp_path, fault):
    path, folder = _with_subagents(tmp_path)
    bad = folder / "agent-bad.jsonl"
    if fault == "empty":
        bad.write_text("")
    elif fault == "folder":
        bad.mkdir()
    else:
        bad.symlink_to(folder / "agent-bad.jsonl")
    with pytest.raises(TranscriptError) as caught:
        cacheviz.load(path)
    message = str(caught.value)
    assert "agent-bad.jsonl" in message and "Errno" not in message
    assert "\n" not in message
    with pytest.warns(CacheVizWarning, match=r"agent-bad\.jsonl"):
        session = cacheviz.load(path, errors="skip")
    assert len(session.calls) == 4  # the session's two calls and the good sub-agent's two


def test_a_missing_subagent_file_the_session_names_is_reported(tmp_path):
    lines = _claude_code(turns=2)
    record = json.loads(lines[2])  # the second user turn: the Task tool's result
    record["toolUseResult"] = {"agentId": "f00d", "status": "completed"}
    lines[2] = json.dumps(record)
    path = _write(tmp_path, lines)
    with pytest.warns(
        CacheVizWarning,
        match=r"1 sub-agent\(s\) missing from subagents/ \(f00d\); not counted",
    ):
        cacheviz.load(path)


# -- item 4: request shapes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"tools": {"name": "ls", "input_schema": {}}}, "request.tools", "an object"),
        ({"tools": 7}, "request.tools", "a number"),
        ({"messages": "hello"}, "request.messages", "a string"),
        ({"messages": ["hello"]}, r"request.messages\[0\]", "a string"),
        (
            {"messages": [{"role": "user", "content": "hi"}, 5]},
            r"request.messages\[1\]",
            "a number",
        ),
        ({"system": 5}, "request.system", "a number"),
    ],
    ids=[
        "tools-object",
        "tools-int",
        "messages-string",
        "string-message",
        "int-message",
        "system-int",
    ],
)
def test_a_body_of_the_wrong_shape_is_one_line_naming_the_field(write_log, change, field, says):
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}], **change}
    path = write_log([body])
    with pytest.raises(TranscriptError, match=rf"`{field}` is {says}") as caught:
        cacheviz.load(path)
    assert caught.value.line == 1
    assert "\n" not in str(caught.value)


def test_a_fifo_or_a_device_in_a_session_folder_is_not_read(tmp_path):
    """Issue 29 item 9: a sub-agent log that is a FIFO (no writer: reading waits forever)
    or a link to /dev/zero (never ends) is passed over; the session loads as without."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    fixture = Path(__file__).parents[1] / "fixtures" / "claude_code_subagents" / "-home-dev-shop"
    project = tmp_path / "project"
    shutil.copytree(fixture, project)
    [session] = project.glob("*.jsonl")
    before = len(cacheviz.load(session).calls)
    subagents = project / session.stem / "subagents"
    os.mkfifo(subagents / "agent-fifo.jsonl")
    if Path("/dev/zero").exists():
        (subagents / "agent-zero.jsonl").symlink_to("/dev/zero")
    # in a child with a time limit: before the fix, this waited for a writer forever
    code = "import cacheviz, sys; print(len(cacheviz.load(sys.argv[1]).calls))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(session)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == before
