import json
import re
import warnings
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError, UnknownFormatError

MSG = [{"role": "user", "content": "hi"}]


def test_load_reads_calls_blocks_and_reported_usage(write_log, anthropic_body):
    usage = [
        {
            "input_tokens": 3,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 7,
            "output_tokens": 2,
        }
    ]
    path = write_log([anthropic_body(MSG, system="be brief")], usage=usage)
    session = cacheviz.load(path)
    assert session.format == "cacheviz"
    (call,) = session.calls
    assert (call.index, call.line, call.provider, call.api, call.model) == (
        0,
        1,
        "anthropic",
        "messages",
        "claude-sonnet-4-5",
    )
    assert call.ts == datetime(2026, 1, 1, tzinfo=UTC)
    assert [b.label for b in call.blocks] == ["system[0]", "user#0"]
    assert call.usage.input_tokens == 110
    assert call.usage.cache_read_tokens == 100


def _timed(ts, duration_ms=None):
    record = {"ts": ts, "provider": "anthropic", "model": "m", "request": {"messages": MSG}}
    if duration_ms is not None:
        record["response"] = {"duration_ms": duration_ms}
    return json.dumps(record)


def test_calls_in_flight_are_ordered_by_request_time(write_log, recwarn):
    """Each line is written when its answer ends: one that started earlier ran longer."""
    lines = [
        _timed("2026-01-01T00:00:05Z", 500),
        _timed("2026-01-01T00:00:01+00:00", 6000),  # started at 1 s, ended at 7 s
        _timed("2026-01-01T02:00:03+02:00", 5000),  # 00:00:03 UTC, ended at 8 s
    ]
    session = cacheviz.load(write_log(lines))
    assert [c.line for c in session.calls] == [2, 3, 1]
    assert [c.index for c in session.calls] == [0, 1, 2]
    assert not [w for w in recwarn if "out of step" in str(w.message)]


def test_a_time_behind_the_lines_above_keeps_its_place_and_is_named(write_log):
    lines = [
        _timed("2026-01-01T00:00:05Z"),
        _timed("2026-01-01T00:00:01+00:00"),
        _timed("2026-01-01T02:00:07+02:00"),
    ]
    with pytest.warns(CacheVizWarning, match=r"\(line 2 is 4 s behind\); kept in the order"):
        session = cacheviz.load(write_log(lines))
    assert [c.line for c in session.calls] == [1, 2, 3]


def test_missing_fields_are_inferred(write_log):
    line = json.dumps({"ts": None, "request": {"model": "gpt-4o", "input": "hello"}})
    (call,) = cacheviz.load(write_log([line])).calls
    assert (call.provider, call.api, call.model, call.ts) == ("openai", "responses", "gpt-4o", None)


def _one_line_error(path):
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "\n" not in message
    return info.value, message


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ("{not json", r"log\.jsonl:2: not valid JSON: .*column"),
        ('{"provider":"anthropic","model":"m"}', r":2: no `request` object"),
        (
            '{"model":"m","request":"hello"}',
            r":2: `request` is a string; expected the request body object",
        ),
        ('{"provider":"anthropic","request":{"messages":[]}}', r":2: no model"),
        (
            '{"provider":"anthropic","model":"m","request":{"system":"x"}}',
            r":2: request has no `messages`.*request\.messages",
        ),
        (
            '{"ts":"yesterday","model":"m","request":{"messages":[{"role":"user","content":"x"}]}}',
            r":2: field `ts` 'yesterday' is not ISO-8601",
        ),
        (
            '{"api":"completions","model":"m","request":{"messages":[{"role":"user","content":"x"}]}}',
            r":2: field `api` is 'completions'; expected one of",
        ),
        (
            '{"model":7,"request":{"messages":[]}}',
            r":2: field `model` is a number; expected a string",
        ),
        (
            '{"model":"m","request":{"messages":[{"role":"user","content":"x"}]}} trailing',
            r":2: not valid JSON: unexpected text",
        ),
    ],
)
def test_a_bad_line_is_one_line_with_file_and_line(write_log, anthropic_body, bad, expected):
    path = write_log([anthropic_body(MSG), bad])
    error, message = _one_line_error(path)
    assert error.line == 2
    assert re.search(expected, message), message
    assert "--errors skip" in message


def test_skip_loads_the_rest_and_counts(write_log, anthropic_body):
    path = write_log([anthropic_body(MSG), "{oops", anthropic_body(MSG), "[]"])
    with pytest.warns(CacheVizWarning, match=r"skipped 2 bad line\(s\): line 2 \(.*; line 4 \("):
        session = cacheviz.load(path, errors="skip")
    assert len(session.calls) == 2
    assert [s.line for s in session.skipped] == [2, 4]


def test_invalid_utf8_is_reported_with_its_line(tmp_path, write_log, anthropic_body):
    path = write_log([anthropic_body(MSG)])
    path.write_bytes(path.read_bytes() + b'{"model":"\xff"}\n')
    _, message = _one_line_error(path)
    assert ":2: not valid UTF-8 at byte 11" in message


def test_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n \n")
    _, message = _one_line_error(path)
    assert message.endswith("empty.jsonl: file is empty; expected a transcript")


def test_unknown_format_lists_the_supported_ones(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(
        UnknownFormatError,
        match=r"Supported: .*cacheviz, claude-trace.*\. Force one with --format NAME",
    ):
        cacheviz.load(path)


def test_unknown_forced_format_and_missing_file(tmp_path, write_log, anthropic_body):
    with pytest.raises(UnknownFormatError, match=r"unknown format 'nope'\. Supported: .*cacheviz"):
        cacheviz.load(write_log([anthropic_body(MSG)]), format="nope")
    with pytest.raises(TranscriptError, match="no such file"):
        cacheviz.load(tmp_path / "missing.jsonl")


def test_all_lines_bad_is_an_error_even_when_skipping(write_log):
    path = write_log(["{", "{"])
    with pytest.raises(TranscriptError, match=r"no API call could be read \(2 bad lines skipped\)"):
        cacheviz.load(path, format="cacheviz", errors="skip")


GOOD = json.dumps(
    {
        "ts": "2026-01-01T00:00:00Z",
        "provider": "anthropic",
        "model": "m",
        "request": {"system": [{"type": "text", "text": "s"}], "messages": MSG},
        "response": {"usage": {"input_tokens": 1}},
    }
)


def _mutations():
    good = GOOD.encode()
    return st.one_of(
        st.integers(0, len(good)).map(lambda n: good[:n]),  # truncated
        st.binary(max_size=80),  # garbage, invalid UTF-8
        st.tuples(st.integers(0, len(good) - 1), st.binary(min_size=1, max_size=3)).map(
            lambda t: good[: t[0]] + t[1] + good[t[0] + 1 :]
        ),  # byte flips
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda c: (
                st.lists(c, max_size=3)
                | st.dictionaries(
                    st.sampled_from(
                        [
                            "ts",
                            "model",
                            "request",
                            "messages",
                            "system",
                            "tools",
                            "usage",
                            "response",
                            "meta",
                            "api",
                            "provider",
                        ]
                    ),
                    c,
                    max_size=4,
                )
            ),
            max_leaves=10,
        ).map(lambda v: json.dumps(v).encode()),  # well-formed JSON, wrong shapes and types
    )


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_mutations(), min_size=1, max_size=4))
@pytest.mark.slow
def test_fuzzed_logs_load_or_fail_with_one_clear_line(tmp_path, lines):
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(GOOD.encode() + b"\n" + b"\n".join(lines) + b"\n")
    for errors in ("raise", "skip"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheVizWarning)
                session = cacheviz.load(path, format="cacheviz", errors=errors)
        except TranscriptError as exc:
            assert "\n" not in str(exc)
            assert str(path) in str(exc)
            continue
        assert len(session.calls) >= 1
        session.analyze()


def test_progress_is_reported_while_reading(write_log, anthropic_body):
    from cacheviz.formats._lines import PROGRESS

    seen = []
    token = PROGRESS.set(lambda done, total: seen.append((done, total)))
    try:
        path = write_log([anthropic_body(MSG)] * 3)
        cacheviz.load(path)
    finally:
        PROGRESS.reset(token)
    size = path.stat().st_size
    assert seen[-1] == (size, size)


def test_lone_surrogates_and_extreme_times_do_not_crash(write_log):
    line = json.dumps(
        {
            "ts": "2026-01-01T00:00:00Z",
            "provider": "anthropic",
            "model": "claude-\ud800x",
            "request": {"messages": [{"role": "us\udc00er", "content": "hi \ud83d"}]},
        }
    )
    analysis = cacheviz.load(write_log([line])).analyze()
    assert analysis.calls["model"][0] == "claude-\ufffdx"
    assert analysis.segments["label"][0] == "us\ufffder#0"
    bad_time = json.dumps(
        {"ts": "0001-01-01T00:00:00+01:00", "model": "m", "request": {"messages": MSG}}
    )
    with pytest.raises(TranscriptError, match="out of range"):
        cacheviz.load(write_log([bad_time], name="t.jsonl"))
