import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect

LOG = "inspect_log/UKGovernmentBEIS__inspect_ai__2025-05-12T20-27-36-04-00_browser.json"
TOOLS = [
    {
        "type": "function",
        "function": {"name": "go", "description": "attachment://d1", "parameters": {}},
    }
]


def _event(messages, cached, ts):
    return {
        "event": "model",
        "timestamp": ts,
        "model": "openai/gpt-4o-mini",
        "call": {
            "request": {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS},
            "response": {
                "usage": {
                    "prompt_tokens": 1200,
                    "completion_tokens": 9,
                    "prompt_tokens_details": {"cached_tokens": cached},
                }
            },
        },
        "output": {"usage": {"input_tokens": 1200}},
    }


def _log():
    first = [{"role": "user", "content": "attachment://q1"}]
    second = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    sample = {
        "id": "task-1",
        "epoch": 1,
        "attachments": {"q1": "What is on the page? " * 30, "d1": "Open a URL."},
        "events": [
            {"event": "sample_init"},
            _event(first, 0, "2025-05-12T20:27:38-04:00"),
            {"event": "tool"},
            _event(second, 1024, "2025-05-12T20:27:44-04:00"),
        ],
    }
    other = {
        "id": "task-2",
        "epoch": 1,
        "attachments": {"q1": "Elsewhere.", "d1": "Open a URL."},
        "events": [_event(first, 0, "2025-05-12T20:28:00-04:00")],
    }
    return {
        "version": 2,
        "status": "success",
        "eval": {"model": "openai/gpt-4o-mini"},
        "samples": [sample, other],
    }


@pytest.fixture
def log_file(tmp_path):
    path = tmp_path / "2025-05-12_browser.json"
    path.write_text(json.dumps(_log(), indent=2))
    return path


def test_model_events_become_calls_with_attachments_resolved(log_file):
    assert detect(log_file) == "inspect"
    session = cacheviz.load(log_file)
    assert [c.thread_hint for c in session.calls] == [
        "sample:task-1:1",
        "sample:task-1:1",
        "sample:task-2:1",
    ]
    first = session.calls[0]
    assert (first.provider, first.model, first.api) == ("openai", "gpt-4o-mini", "chat.completions")
    texts = [c.value for c in session.contents.values()]
    assert not any("attachment://" in json.dumps(v) for v in texts)
    assert session.calls[1].usage.cache_read_tokens == 1024
    calls = session.analyze().calls
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]
    assert calls["thread"][2] != calls["thread"][0]  # another sample: its own thread
    # but the same cache namespace: the shared leading messages are the common prefix
    assert 0 < calls["prefix_tokens"][2] < calls["input_tokens"][2]


def test_zipped_eval_logs_explain_how_to_convert(tmp_path):
    path = tmp_path / "run.eval"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(
        TranscriptError,
        match=r"run\.eval: a zipped \.eval log; convert it with `inspect log convert --to json`",
    ):
        cacheviz.load(path)


def test_a_bad_event_names_its_path(log_file):
    log = _log()
    log["samples"][0]["events"][3]["call"]["request"] = "oops"
    log_file.write_text(json.dumps(log))
    with pytest.raises(
        TranscriptError, match=r"samples\[0\]\.events\[3\]: `call\.request` is a string"
    ):
        cacheviz.load(log_file)
    with pytest.warns(CacheVizWarning, match="skipped 1 bad line"):
        assert len(cacheviz.load(log_file, errors="skip").calls) == 2


def test_truncated_json_names_the_line(log_file):
    log_file.write_text(log_file.read_text()[:300])
    with pytest.raises(
        TranscriptError, match=r"\.json:\d+: not valid JSON: .*the file may be truncated"
    ):
        cacheviz.load(log_file, format="inspect")


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_logs_load_or_fail_in_one_line(log_file, data, loads_or_fails_cleanly):
    log = _log()
    sample = log["samples"][0]
    target = data.draw(st.sampled_from(["event", "messages", "call", "samples", "attachments"]))
    junk = data.draw(
        st.one_of(
            st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2)
        )
    )
    if target == "event":
        sample["events"][1] = junk
    elif target == "messages":
        sample["events"][1]["call"]["request"]["messages"] = junk
    elif target == "call":
        sample["events"][3]["call"] = junk
    elif target == "samples":
        log["samples"][1] = junk
    else:
        sample["attachments"] = junk
    path = log_file.with_name("fuzz.json")
    path.write_text(json.dumps(log))
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="inspect", errors=e))


def test_real_log(realdata):
    path = realdata / LOG
    raw = json.loads(path.read_text())
    events = [e for s in raw["samples"] for e in s["events"] if e["event"] == "model"]
    usages = [e["call"]["response"]["usage"] for e in events]
    session = cacheviz.load(path)
    assert session.format == "inspect"
    calls = session.analyze().calls
    assert calls.height == len(events) == 5
    assert calls["reported_input_tokens"].sum() == sum(u["prompt_tokens"] for u in usages)
    assert calls["reported_cache_read_tokens"].sum() == sum(
        u["prompt_tokens_details"]["cached_tokens"] for u in usages
    )
    assert not any("attachment://" in json.dumps(c.value) for c in session.contents.values())
    assert calls["prefix_tokens"].to_list()[1:] == calls["input_tokens"].to_list()[:-1]
