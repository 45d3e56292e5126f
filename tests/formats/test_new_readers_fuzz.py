"""Fuzzed inputs of the newly read agents load, or fail in one line naming the file."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from tests.formats.test_amp import thread
from tests.formats.test_continue_dev import records
from tests.formats.test_pi import openclaw_session, pi_session

JUNK = st.one_of(
    st.just("{oops"),
    st.just("[1]"),
    st.just("null"),
    st.just(json.dumps({"type": "message", "id": "x", "parentId": None, "message": 3})),
    st.just(
        json.dumps(
            {
                "type": "message",
                "id": "y",
                "parentId": "zz",
                "message": {"role": "assistant", "usage": {"input": -1}},
            }
        )
    ),
    st.just(
        json.dumps(
            {
                "type": "message",
                "id": "z",
                "parentId": None,
                "message": {"role": "assistant", "usage": "lots"},
            }
        )
    ),
    st.just(json.dumps({"model": "m", "promptTokens": "9", "generatedTokens": 1})),
    st.just(json.dumps({"type": 7})),
    st.text(max_size=20),
)
SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _lines(data, records: list[dict]) -> str:
    lines = [json.dumps(r) for r in records]
    for _ in range(data.draw(st.integers(1, 3))):
        lines[data.draw(st.integers(0, len(lines) - 1))] = data.draw(JUNK)
    return "\n".join(lines) + "\n"


@SETTINGS
@given(data=st.data())
def test_fuzzed_pi_and_openclaw_sessions(tmp_path_factory, data, loads_or_fails_cleanly):
    for fmt, rows in (("pi", pi_session()), ("openclaw", openclaw_session())):
        path = tmp_path_factory.mktemp(fmt) / "s.jsonl"
        path.write_text(_lines(data, rows), encoding="utf-8")
        loads_or_fails_cleanly(path, lambda p, e, f=fmt: cacheviz.load(p, format=f, errors=e))


@SETTINGS
@given(data=st.data())
def test_fuzzed_continue_logs(tmp_path_factory, data, loads_or_fails_cleanly):
    path = tmp_path_factory.mktemp("continue") / "tokensGenerated.jsonl"
    path.write_text(_lines(data, records()), encoding="utf-8")
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="continue", errors=e))


@SETTINGS
@given(data=st.data())
def test_fuzzed_amp_threads(tmp_path_factory, data, loads_or_fails_cleanly):
    document = thread()
    values = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=5), st.just([1]))
    for _ in range(data.draw(st.integers(1, 3))):
        target = data.draw(st.sampled_from(["message", "usage", "event", "tokens"]))
        value = data.draw(values)
        if target == "message":
            document["messages"][data.draw(st.integers(0, 5))] = value
        elif target == "usage":
            key = data.draw(st.sampled_from(["inputTokens", "cacheReadInputTokens", "model"]))
            message = document["messages"][1]
            usage = message.get("usage") if isinstance(message, dict) else None
            if isinstance(usage, dict):
                usage[key] = value
        elif target == "event":
            document["usageLedger"]["events"][data.draw(st.integers(0, 2))] = value
        else:
            event = document["usageLedger"]["events"][1]
            if isinstance(event, dict):
                event["tokens"] = value
    path = tmp_path_factory.mktemp("amp") / "T-5c1f3e2a-7b6d-4c8e-9f00-0a1b2c3d4e5f.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="amp", errors=e))
