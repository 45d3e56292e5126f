"""GitHub Copilot CLI events.jsonl: calls per assistant message, usage a session figure."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz import cli
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect

EXAMPLES = Path("/work/examples/issue18/copilot")  # real sessions from a public home backup


def _event(kind, data, ts):
    return {"type": kind, "data": data, "id": f"e-{ts}", "timestamp": f"2026-04-02T04:40:{ts:02d}Z"}


def _events():
    tool = {"toolCallId": "t1", "name": "view", "arguments": {"path": "a.md"}, "type": "function"}
    metrics = {
        "claude-haiku-4.5": {
            "requests": {"count": 2, "cost": 0.33},
            "usage": {
                "inputTokens": 9000,
                "outputTokens": 70,
                "cacheReadTokens": 4000,
                "cacheWriteTokens": 0,
            },
        }
    }
    return [
        _event("session.start", {"sessionId": "s1", "selectedModel": "claude-haiku-4.5"}, 0),
        _event("user.message", {"content": "fix", "transformedContent": "<t>0</t> fix"}, 1),
        _event("assistant.turn_start", {"turnId": "0"}, 2),
        _event(
            "assistant.message",
            {"messageId": "m1", "content": "Looking.", "toolRequests": [tool], "outputTokens": 50},
            3,
        ),
        _event("tool.execution_start", {"toolCallId": "t1", "toolName": "view"}, 4),
        _event("tool.execution_complete", {"toolCallId": "t1", "result": {"content": "# A"}}, 5),
        _event("assistant.message", {"messageId": "m2", "content": "Done.", "outputTokens": 20}, 6),
        _event("assistant.turn_end", {"turnId": "0"}, 7),
        _event(
            "session.shutdown",
            {
                "shutdownType": "routine",
                "modelMetrics": metrics,
                "currentModel": "claude-haiku-4.5",
            },
            8,
        ),
    ]


@pytest.fixture
def events(tmp_path):
    path = tmp_path / ".copilot" / "session-state" / "s1" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in _events()))
    return path


def test_calls_per_message_and_usage_only_for_the_session(events):
    assert detect(events) == "copilot-cli"
    session = cacheviz.load(events)
    assert len(session.calls) == 2
    assert all(c.usage is None for c in session.calls)  # never spread over calls
    assert [c.meta["output_tokens"] for c in session.calls] == [50, 20]
    analysis = session.analyze()
    # the second request re-sends the first: the prompt, the tool call and its result
    assert analysis.calls["prefix_tokens"][1] == analysis.calls["input_tokens"][0]
    assert analysis.summary()["reported_totals"] == {
        "input_tokens": 9000,
        "cache_read_tokens": 4000,
        "cache_write_tokens": 0,
        "output_tokens": 70,
        "scope": "session",
        "calls_reporting": 0,
    }


def test_a_resumed_session_adds_up_its_shutdowns(events):
    lines = events.read_text().splitlines()
    events.write_text("\n".join(lines + lines[1:]) + "\n")
    totals = cacheviz.load(events).analyze().summary()["reported_totals"]
    assert totals["input_tokens"] == 18000 and totals["output_tokens"] == 140


def test_scan_finds_the_session_state_folder(events):
    result = cacheviz.scan([events.parents[1]], cache=False)
    assert result.files["format"].to_list() == ["copilot-cli"]
    assert result.calls.height == 2


def test_a_bad_event_is_one_line(events):
    with events.open("a") as handle:
        handle.write(
            json.dumps({"type": "assistant.message", "data": [], "timestamp": None}) + "\n"
        )
    with pytest.raises(TranscriptError, match=r":10: field `data` is an array"):
        cacheviz.load(events)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_events_load_or_fail_in_one_line(events, data, loads_or_fails_cleanly):
    lines = events.read_text().splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    mutated = data.draw(
        st.one_of(
            st.integers(0, len(lines[i])).map(lambda n: lines[i][:n]),
            st.just(lines[i].replace('"data"', '"dat"')),
            st.just(lines[i].replace('"inputTokens": 9000', '"inputTokens": -1')),
            st.just(lines[i].replace('"toolRequests"', '"toolRequests": 3, "x"')),
            st.text(max_size=30),
        )
    )
    path = events.with_name("fuzz.jsonl")
    path.write_text("\n".join([*lines[:i], mutated, *lines[i + 1 :]]) + "\n")
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="copilot-cli", errors=e))


def test_real_session(capsys):
    path = EXAMPLES / "252d6b6b-aaad-4790-8254-7ada091ee9fc" / "events.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not present (a public example, kept outside the repo)")
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    messages = sum(e["type"] == "assistant.message" for e in events)
    compactions = [e["data"] for e in events if e["type"] == "session.compaction_complete"]
    usage = {}
    for e in events:
        if e["type"] == "session.shutdown":
            for entry in e["data"]["modelMetrics"].values():
                for key, value in entry["usage"].items():
                    usage[key] = usage.get(key, 0) + value
    session = cacheviz.load(path)
    assert session.format == "copilot-cli"
    assert len(session.calls) == messages + len(compactions) == 17
    assert cli.main(["summary", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    totals = doc["reported_totals"]
    assert totals["scope"] == "session"
    assert totals["input_tokens"] == usage["inputTokens"] == 1884297
    assert totals["cache_read_tokens"] == usage["cacheReadTokens"]
    assert totals["output_tokens"] == usage["outputTokens"]
    compaction = [c for c in doc["calls"] if c["reported"] is not None]
    assert [c["reported"]["input_tokens"] for c in compaction] == [
        c["compactionTokensUsed"]["input"] for c in compactions
    ]


def test_a_session_whose_turns_all_failed_has_no_call(capsys):
    path = EXAMPLES / "3fc55392-3e98-4470-8d46-86557601b171" / "events.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not present (a public example, kept outside the repo)")
    assert detect(path) == "copilot-cli"
    with pytest.raises(TranscriptError, match="no API call could be read"):
        cacheviz.load(path)


def test_scan_without_paths_looks_in_the_default_folder(events, monkeypatch):
    monkeypatch.setenv("HOME", str(events.parents[3]))
    result = cacheviz.scan(cache=False)
    found = {(loc.agent, loc.found) for loc in result.locations}
    assert ("copilot", True) in found
    assert result.calls.height == 2
