"""Fuzz properties of the readers, checked against independent oracles."""

import json
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning
from cacheviz.redact import redact_slice

KEY = "sk-ant-api03-Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7iO9qW4rT6yP3uI8oL1kJ-ZZZZAA"
BAD_LINES = ["{oops", "[1, 2]", '{"request": 3}', "\x00\x01", '"just a string"', "{" * 3000]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(2, 6),
    bad=st.lists(st.tuples(st.integers(0, 6), st.sampled_from(BAD_LINES)), min_size=1, max_size=4),
)
def test_skipping_lines_never_changes_the_surviving_calls(write_log, n, bad):
    """Oracle: the same log with the bad lines never written, read strictly."""
    bodies = [
        {
            "model": "claude-sonnet-4-5",
            "system": "You are careful. " * 50,
            "messages": [{"role": "user", "content": f"question {i} " * (i + 1)}],
        }
        for i in range(n)
    ]
    good = write_log(bodies, name="good.jsonl").read_text().splitlines()
    lines = list(good)
    for at, text in sorted(bad, reverse=True):  # any line, the first one too
        lines.insert(min(at, len(lines)), text)
    path = write_log(lines, name="mixed.jsonl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheVizWarning)
        session = cacheviz.load(path, errors="skip", format="cacheviz")
    skipped = [s.line for s in session.skipped]
    assert len(skipped) == len(bad)
    message = " ".join(str(w.message) for w in caught)
    assert all(f"line {line} (" in message for line in skipped)  # every line named
    oracle = cacheviz.load(write_log(good, name="oracle.jsonl"))
    got = session.analyze().calls["input_tokens"].to_list()
    assert got == oracle.analyze().calls["input_tokens"].to_list()


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(alphabet="ab \n=:\"'", max_size=300),
    after=st.text(alphabet="cd \n", max_size=300),
    start=st.integers(0, 700),
    width=st.integers(1, 400),
    label=st.sampled_from(["", "key ", "Authorization: Bearer ", "api_key=", '"token": "']),
)
def test_no_cut_ever_shows_a_piece_of_a_key(before, after, start, width, label):
    """Oracle: the key itself; any 8 of its characters in the output is a leak."""
    text = f"{before}{label}{KEY}{after}"
    shown = redact_slice(text, start, start + width)
    core = KEY[len("sk-ant-api03-") :]
    assert not any(core[i : i + 8] in shown for i in range(len(core) - 7))
    # text outside the key comes through unchanged
    key_at = text.index(KEY)
    if start + width <= key_at:
        assert shown == text[start : start + width]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.integers(1, 20_000), opener=st.sampled_from(["[", '{"a":']))
def test_any_nesting_depth_is_a_clean_answer(tmp_path, depth, opener):
    closer = "]" if opener == "[" else "}"
    path = tmp_path / "deep.jsonl"
    path.write_text(opener * depth + "1" + closer * depth + "\n")
    try:
        cacheviz.load(path)
    except cacheviz.errors.TranscriptError as exc:
        assert "\n" not in str(exc)
    else:  # pragma: no cover - no reader takes a bare nested array
        raise AssertionError("a nested array loaded as a transcript")


def test_json_output_stays_json_with_escapes(write_log, capsys):
    from cacheviz import cli

    model = "m\x1b]0;x\x07\u202e"
    path = write_log([{"model": model, "messages": [{"role": "user", "content": "hi"}]}])
    assert cli.main(["summary", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"][0]["model"] == model


# -- torn last lines, byte names, non-regular files, deep OTel values, SSE framing ---


def _bodies(n):
    return [
        {
            "model": "claude-sonnet-4-5",
            "system": "You are careful. " * 50,
            "messages": [{"role": "user", "content": f"question {i} " * (i + 1)}],
        }
        for i in range(n)
    ]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(n=st.integers(2, 5), cut=st.floats(0.01, 0.99))
def test_a_torn_last_line_counts_the_complete_lines(write_log, n, cut):
    """Oracle: the log without its last line."""
    lines = write_log(_bodies(n), name="full.jsonl").read_text().splitlines()
    torn = lines[-1][: max(1, int(len(lines[-1]) * cut))]
    path = write_log(lines[:-1], name="torn.jsonl")
    path.write_text(path.read_text() + torn, encoding="utf-8")  # no newline after it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheVizWarning)
        session = cacheviz.load(path, format="cacheviz")
    assert any("incomplete" in str(w.message) for w in caught)
    oracle = cacheviz.load(write_log(lines[:-1], name="oracle.jsonl"))
    got = session.analyze().calls["input_tokens"].to_list()
    assert got == oracle.analyze().calls["input_tokens"].to_list()


_NAME_BYTES = (
    st.binary(min_size=1, max_size=12)
    .map(lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_"))
    .filter(lambda b: b not in (b".", b"..") and not b.startswith(b"."))
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=st.lists(_NAME_BYTES, min_size=1, max_size=4, unique=True))
def test_any_byte_file_names_scan_without_a_crash(tmp_path_factory, write_log, names):
    """Oracle: one session of 2 calls per file, whatever its name's bytes."""
    import os

    folder = tmp_path_factory.mktemp("names")
    lines = write_log(_bodies(2), name="one.jsonl").read_text()
    for i, name in enumerate(names):
        body = lines.replace("question", f"q{i}")  # distinct content: not duplicates
        (folder / os.fsdecode(name + b".jsonl")).write_text(body, encoding="utf-8")
    result = cacheviz.scan([folder], cache=False, jobs=1, progress=False)
    assert result.calls.height == 2 * len(names)
    json.dumps(result.to_dict())  # every text is valid UTF-8
    for path in result.files["path"]:
        path.encode("utf-8")


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(kinds=st.lists(st.sampled_from(["file", "fifo", "null", "broken", "dir-link"]), max_size=5))
def test_only_regular_files_are_read(tmp_path_factory, write_log, kinds):
    """Oracle: the regular files alone (others listed as skipped, none read: no hang)."""
    import os

    folder = tmp_path_factory.mktemp("kinds")
    text = write_log(_bodies(2), name="one.jsonl").read_text()
    regular = 0
    for i, kind in enumerate(kinds):
        path = folder / f"s{i}.jsonl"
        if kind == "file":
            path.write_text(text.replace("question", f"q{i}"), encoding="utf-8")
            regular += 1
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "null":
            path.symlink_to("/dev/null")
        elif kind == "broken":
            path.symlink_to(folder / "missing")
        else:
            path.symlink_to(folder, target_is_directory=True)
    result = cacheviz.scan([folder], cache=False, jobs=1, progress=False)
    assert result.calls.height == 2 * regular
    statuses = result.files["status"].to_list()
    assert statuses.count("ok") == regular
    # a link to the scanned folder itself is a loop: listed as skipped, never walked
    skipped = ("fifo", "null", "broken", "dir-link")
    assert statuses.count("skipped") == sum(k in skipped for k in kinds)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.integers(1, 4000), kind=st.sampled_from(["kvlistValue", "arrayValue"]))
def test_any_otel_value_depth_is_a_clean_answer(tmp_path_factory, depth, kind):
    """Oracle: the call is there (the deep value skipped), or one clean line of error."""
    wrap = (
        '{"kvlistValue": {"values": [{"key": "k", "value": '
        if kind == "kvlistValue"
        else '{"arrayValue": {"values": ['
    )
    close = "}]}}" if kind == "kvlistValue" else "]}}"
    deep = wrap * depth + '{"stringValue": "leaf"}' + close * depth
    messages = json.dumps(json.dumps([{"role": "user", "content": "hi"}]))
    attributes = (
        '[{"key": "gen_ai.system", "value": {"stringValue": "anthropic"}},'
        '{"key": "gen_ai.request.model", "value": {"stringValue": "claude-sonnet-4-5"}},'
        f'{{"key": "gen_ai.input.messages", "value": {{"stringValue": {messages}}}}},'
        f'{{"key": "app.deep", "value": {deep}}}]'
    )
    span = f'{{"name": "chat", "startTimeUnixNano": "1", "attributes": {attributes}}}'
    text = f'{{"resourceSpans": [{{"scopeSpans": [{{"spans": [{span}]}}]}}]}}\n'
    path = tmp_path_factory.mktemp("otel") / "trace.jsonl"
    path.write_text(text, encoding="utf-8")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheVizWarning)
            session = cacheviz.load(path, format="otel")
    except cacheviz.errors.TranscriptError as exc:
        assert "\n" not in str(exc) and "nested" in str(exc)
    else:
        assert len(session.calls) == 1


@settings(max_examples=100, deadline=None)
@given(
    end=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(1, 400), max_size=8),
    ping=st.booleans(),
)
def test_any_sse_framing_gives_the_same_usage(end, cuts, ping):
    """Oracle: the usage the events carry, however the stream is framed and cut."""
    from cacheviz.recording._log import _UsageParser

    usage = {"input_tokens": 12, "cache_read_input_tokens": 5000, "output_tokens": 1}
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "usage": usage}}),
        *([("ping", {"type": "ping"})] if ping else []),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    stream = "".join(f"event: {e}{end}data: {json.dumps(d)}{end}{end}" for e, d in events)
    data = stream.encode()
    parser = _UsageParser("text/event-stream", "")
    at = 0
    for cut in sorted(set(cuts)):
        if at < cut < len(data):
            parser.feed(data[at:cut])
            at = cut
    parser.feed(data[at:])
    parser.finish(200)
    assert parser.usage == {**usage, "output_tokens": 9}
    assert parser.complete
