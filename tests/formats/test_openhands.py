import copy
import json
import re
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cacheviz.analysis import analyze
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import openhands
from cacheviz.model import OPAQUE

MODEL = "openai/proxy-model"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "execute_bash",
            "description": "Run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    },
    {"type": "function", "function": {"name": "finish", "description": "Stop"}},
]


def _ts(second):
    return f"2025-04-30T16:00:{second:02d}.000000"


def _response(rid, content, *calls):
    tool_calls = [
        {
            "index": i + 1,
            "function": {"arguments": json.dumps(args), "name": name},
            "id": cid,
            "type": "function",
        }
        for i, (cid, name, args) in enumerate(calls)
    ]
    message = {
        "content": content,
        "role": "assistant",
        "tool_calls": tool_calls,
        "function_call": None,
    }
    return {
        "id": rid,
        "model": "served/model",
        "object": "chat.completion",
        "choices": [{"finish_reason": "stop", "index": 0, "message": message}],
        "usage": {"completion_tokens": 7, "prompt_tokens": 70, "prompt_tokens_details": None},
    }


def _metadata(response, cid, name):
    return {
        "function_name": name,
        "tool_call_id": cid,
        "model_response": response,
        "total_calls_in_response": 1,
    }


def _action(eid, action, response, cid, name, **args):
    return {
        "id": eid,
        "timestamp": _ts(eid),
        "source": "agent",
        "message": f"{action}...",
        "action": action,
        "tool_call_metadata": _metadata(response, cid, name),
        "llm_metrics": {"accumulated_cost": 0.0},
        "args": {"thought": "", **args},
    }


def _observation(eid, observation, response, cid, name, content):
    return {
        "id": eid,
        "timestamp": _ts(eid),
        "source": "agent",
        "message": content,
        "cause": eid - 1,
        "observation": observation,
        "tool_call_metadata": _metadata(response, cid, name),
        "content": content,
        "extras": {},
    }


R1 = _response("r1", "Let me look.", ("c1", "execute_bash", {"command": "ls"}))
R2 = _response(
    "r2",
    None,
    ("c2", "execute_bash", {"command": "cat a"}),
    ("c3", "execute_bash", {"command": "cat b"}),
)
R4 = _response("r4", "Done.", ("c4", "finish", {"message": "ok"}))


def _history():
    return [
        {
            "id": 0,
            "timestamp": _ts(0),
            "source": "agent",
            "message": "sys",
            "action": "system",
            "args": {
                "content": "You are OpenHands agent.",
                "tools": TOOLS,
                "openhands_version": "0.35.0",
            },
        },
        {
            "id": 1,
            "timestamp": _ts(1),
            "source": "user",
            "message": "Fix the bug",
            "action": "message",
            "args": {"content": "Fix the bug", "image_urls": None, "wait_for_response": False},
        },
        {
            "id": 2,
            "timestamp": _ts(2),
            "source": "user",
            "message": "Retrieving",
            "action": "recall",
            "args": {"recall_type": "workspace_context", "query": "Fix the bug"},
        },
        {
            "id": 3,
            "timestamp": _ts(3),
            "source": "environment",
            "message": "Added workspace context",
            "cause": 2,
            "observation": "recall",
            "content": "Added workspace context",
            "extras": {"recall_type": "workspace_context", "date": "2025-04-30"},
        },
        _action(4, "run", R1, "c1", "execute_bash", command="ls"),
        _observation(5, "run", R1, "c1", "execute_bash", "a b"),
        _action(6, "run", R2, "c2", "execute_bash", command="cat a"),
        _action(7, "run", R2, "c3", "execute_bash", command="cat b"),
        _observation(8, "run", R2, "c2", "execute_bash", "A"),
        _observation(9, "run", R2, "c3", "execute_bash", "B"),
        {
            "id": 10,
            "timestamp": _ts(10),
            "source": "agent",
            "message": "Parameter 'x' is invalid.",
            "observation": "error",
            "content": "Parameter 'x' is invalid.",
            "extras": {"error_id": ""},
        },
        _action(11, "finish", R4, "c4", "finish", final_thought="ok"),
    ]


def _usage(rid, prompt, completion=5, read=0, write=0):
    return {
        "model": MODEL,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cache_read_tokens": read,
        "cache_write_tokens": write,
        "response_id": rid,
    }


def _record(instance_id="org__repo-1"):
    return copy.deepcopy(_raw_record(instance_id))


def _raw_record(instance_id):
    return {
        "instance_id": instance_id,
        "instruction": "Fix the bug",
        "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": MODEL}},
        "history": _history(),
        "metrics": {
            "accumulated_cost": 0.0,
            "token_usages": [
                _usage("r1", 1000),
                _usage("r2", 1100, read=900),
                _usage("r4", 1300, read=1000, write=20),
            ],
            "response_latencies": [
                {"model": MODEL, "latency": 1.0, "response_id": rid}
                for rid in ("r1", "r2", "r3", "r4")
            ],
        },
        "error": None,
    }


def _write(tmp_path, *records, name="output.jsonl"):
    path = tmp_path / name
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def _labels(call):
    return [b.label for b in call.blocks]


def _values(session, call):
    return [session.contents[b.hash].value for b in call.blocks]


def _one_line_error(path, match, **kwargs):
    with pytest.raises(TranscriptError) as info:
        openhands.read(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert re.search(match, message), message
    return info.value


# -- reading -------------------------------------------------------------------------


def test_calls_follow_the_responses_and_rebuild_the_messages_before_them(tmp_path):
    session = openhands.read(_write(tmp_path, _record()))
    assert session.format == "openhands"
    assert [c.meta.get("response_id") for c in session.calls] == ["r1", "r2", "r3", "r4"]
    prefix = ["system[0]", "execute_bash", "finish"]
    assert [_labels(c)[3:] for c in session.calls] == [
        ["user#0", "user#1"],
        ["user#0", "user#1", "assistant#2", "tool#3"],
        ["user#0", "user#1", "assistant#2", "tool#3", "assistant#4", "tool#5", "tool#6"],
        ["user#0", "user#1", "assistant#2", "tool#3", "assistant#4", "tool#5", "tool#6", "user#7"],
    ]
    assert all(_labels(c)[:3] == prefix for c in session.calls)
    call = session.calls[0]
    assert (call.provider, call.api, call.model, call.line) == (
        "openai",
        "chat.completions",
        MODEL,
        1,
    )
    assert call.thread_hint == "org__repo-1"
    assert call.reconstructed
    assert call.ts.isoformat() == "2025-04-30T16:00:03+00:00"  # the last event before it
    values = _values(session, session.calls[3])
    assert values[5] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
            },
        ],
    }
    assert values[7] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "execute_bash", "arguments": '{"command": "cat a"}'},
            },
            {
                "id": "c3",
                "type": "function",
                "function": {"name": "execute_bash", "arguments": '{"command": "cat b"}'},
            },
        ],
    }
    assert values[8:] == [
        {"role": "tool", "tool_call_id": "c2", "name": "execute_bash", "content": "A"},
        {"role": "tool", "tool_call_id": "c3", "name": "execute_bash", "content": "B"},
        {"role": "user", "content": "Parameter 'x' is invalid."},
    ]
    assert values[4] == {
        "role": "user",
        "content": '{"recall_type":"workspace_context","date":"2025-04-30"}',
    }


def test_the_logged_system_prompt_and_tools_are_real_blocks(tmp_path):
    session = openhands.read(_write(tmp_path, _record()))
    call = session.calls[0]
    assert [b.part for b in call.blocks[:3]] == ["system", "tools", "tools"]
    assert call.message_start == 3
    assert _values(session, call)[:3] == [
        {"role": "system", "content": "You are OpenHands agent."},
        *TOOLS,
    ]
    assert all(session.contents[h].kind != OPAQUE for h in call.hashes)
    assert session.calls[1].blocks[:5] == call.blocks  # blocks are shared between calls


def test_usage_is_inclusive_and_a_reported_zero_stays_zero(tmp_path):
    calls = openhands.read(_write(tmp_path, _record())).calls
    first, second, unreported, last = (c.usage for c in calls)
    assert (first.input_tokens, first.cache_read_tokens, first.cache_write_tokens) == (1000, 0, 0)
    assert first.provenance == "reported"
    assert (second.input_tokens, second.cache_read_tokens) == (1100, 900)  # reads included
    assert (last.cache_read_tokens, last.cache_write_tokens, last.output_tokens) == (1000, 20, 5)
    assert unreported is None  # listed in response_latencies only


def test_a_completion_without_usage_is_placed_at_the_event_it_caused(tmp_path):
    record = _record()
    record["metrics"]["response_latencies"].insert(
        0, {"model": MODEL, "latency": 1.0, "response_id": "r0"}
    )
    calls = openhands.read(_write(tmp_path, record)).calls
    assert [c.meta["response_id"] for c in calls] == ["r0", "r1", "r2", "r3", "r4"]
    # r0 has no event of its own and no unclaimed event before r1: it sent what r1 sent
    assert calls[0].hashes == calls[1].hashes
    assert len(calls[3].blocks) == len(calls[2].blocks) + 3  # r3 sits at the error observation


def test_each_instance_is_its_own_thread(tmp_path):
    session = openhands.read(_write(tmp_path, _record("a__b-1"), _record("a__b-2")))
    assert len(session.calls) == 8
    assert sorted(c.line for c in session.calls) == [1] * 4 + [2] * 4
    frame = analyze(session).calls
    assert frame["thread"].unique(maintain_order=True).to_list() == ["a__b-1", "a__b-2"]
    assert not frame["drift"].any()


def test_a_repeated_instance_is_a_thread_of_its_own(tmp_path):
    # two runs of one instance: the second does not build on the first's requests
    session = openhands.read(_write(tmp_path, _record("a__b-1"), _record("a__b-1")))
    assert {(c.line, c.thread_hint) for c in session.calls} == {(1, "a__b-1"), (2, "a__b-1#2")}
    assert {c.meta["instance_id"] for c in session.calls} == {"a__b-1"}
    frame = analyze(session).calls
    second = frame.filter(frame["line"] == 2)
    assert second["thread"][0] != frame["thread"][0]
    # the second run re-sends what the first sent: a provider could serve it from cache
    assert second["prefix_tokens"][0] == second["input_tokens"][0]


def test_without_a_system_event_the_prefix_is_unlogged(tmp_path):
    record = _record()
    del record["history"][0]
    session = openhands.read(_write(tmp_path, record))
    call = session.calls[0]
    assert _labels(call) == ["unlogged prefix", "user#0", "user#1"]
    assert session.contents[call.hashes[0]].kind == OPAQUE


def test_without_token_usages_the_calls_are_the_logged_responses(tmp_path):
    record = _record()
    del record["metrics"]["token_usages"]
    del record["metrics"]["response_latencies"]
    calls = openhands.read(_write(tmp_path, record)).calls
    assert [c.meta["response_id"] for c in calls] == ["r1", "r2", "r4"]
    assert calls[0].usage.input_tokens == 70
    assert calls[0].usage.cache_read_tokens is None  # prompt_tokens_details: null
    assert calls[0].model == "served/model"


def test_a_condensation_drops_forgotten_events_and_inserts_its_summary(tmp_path):
    record = _record()
    condensation = {
        "id": 12,
        "timestamp": _ts(12),
        "source": "agent",
        "message": "Summary",
        "action": "condensation",
        "args": {
            "forgotten_events_start_id": 4,
            "forgotten_events_end_id": 9,
            "summary": "I listed and read files.",
            "summary_offset": 4,
        },
    }
    r5 = _response("r5", "Next.", ("c5", "execute_bash", {"command": "pwd"}))
    record["history"][11:] = [
        condensation,
        _action(13, "run", r5, "c5", "execute_bash", command="pwd"),
    ]
    record["metrics"]["token_usages"][2] = _usage("r5", 600)
    record["metrics"]["response_latencies"][3]["response_id"] = "r5"
    session = openhands.read(_write(tmp_path, record))
    last = session.calls[-1]
    assert _labels(last)[3:] == ["user#0", "user#1", "user#2", "user#3"]
    assert [v["content"] for v in _values(session, last)[3:]] == [
        "Fix the bug",
        '{"recall_type":"workspace_context","date":"2025-04-30"}',
        "I listed and read files.",
        "Parameter 'x' is invalid.",
    ]
    drift = analyze(session).drifts.row(0, named=True)
    assert (drift["call"], drift["position"]) == (3, 2)


def test_detect(tmp_path):
    path = _write(tmp_path, _record())
    data = path.read_bytes()
    assert openhands.detect(path, data)
    assert openhands.detect(path, data[:3000])  # a first line longer than the head
    assert not openhands.detect(path, b'{"instance_id": "x", "history": {}}\n')
    assert not openhands.detect(path, b"")
    assert not openhands.detect(tmp_path, b"")


def test_detect_is_false_for_the_sample_sessions_and_other_real_formats():
    root = Path(__file__).resolve().parents[2]
    paths = sorted((root / "sample_sessions").glob("*.jsonl"))
    shared = root.parent / "shared" / "realdata"
    paths += (
        sorted(p for p in shared.rglob("*") if p.is_file() and p.parent.name != "openhands")
        if shared.is_dir()
        else []
    )
    for path in paths:
        assert not openhands.detect(path, path.read_bytes()[: 1 << 20]), path


# -- bad input ------------------------------------------------------------------------


def _set(path_keys, value):
    def mutate(record):
        target = record
        for key in path_keys[:-1]:
            target = target[key]
        target[path_keys[-1]] = value
        return record

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_set(["history"], {}), r"field `history` is an object; expected the event array"),
        (_set(["history", 5], "oops"), r"`history\[5\]` is a string; expected an event object"),
        (
            _set(["history", 4, "tool_call_metadata"], "r1"),
            r"`history\[4\]\.tool_call_metadata` is a string; expected an object",
        ),
        (
            _set(["history", 4, "tool_call_metadata", "model_response", "choices"], {}),
            r"`history\[4\]\.tool_call_metadata\.model_response\.choices` is an object; expected an array",
        ),
        (
            _set(["history", 5, "tool_call_metadata", "tool_call_id"], 5),
            r"`history\[5\]\.tool_call_metadata\.tool_call_id` is a number; expected a string",
        ),
        (
            _set(["history", 1, "timestamp"], "noon"),
            r"`history\[1\]\.timestamp` 'noon' is not ISO-8601",
        ),
        (
            _set(["metrics", "token_usages"], "many"),
            r"`metrics\.token_usages` is a string; expected an array",
        ),
        (
            _set(["metrics", "token_usages", 1, "prompt_tokens"], "1100"),
            r"`metrics\.token_usages\[1\]\.prompt_tokens` is a string; expected a number",
        ),
        (
            _set(["metrics", "token_usages", 1, "prompt_tokens"], True),
            r"`metrics\.token_usages\[1\]\.prompt_tokens` is a boolean; expected a number",
        ),
        (
            _set(["metrics", "response_latencies", 0], 1.5),
            r"`metrics\.response_latencies\[0\]` is a number; expected an object",
        ),
        (
            _set(["instance_id"], ["x"]),
            r"`record\.instance_id` is an array; expected a string or an integer",
        ),
    ],
)
def test_a_bad_field_is_named_with_its_line(tmp_path, mutate, expected):
    path = _write(tmp_path, _record(), mutate(_record("second")))
    error = _one_line_error(path, expected)
    assert error.line == 2
    assert "expected one OpenHands evaluation record per line" in str(error)
    assert "--errors skip" in str(error)


def test_bad_lines(tmp_path):
    _one_line_error(
        _write(tmp_path, _record(), '{"instance_id": "x", "hist'), r":2: not valid JSON: .*column"
    )
    _one_line_error(
        _write(tmp_path, "[1, 2]"), r":1: the line is an array; expected an OpenHands instance"
    )
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(_record()).encode() + b'\n{"instance_id": "\xff"}\n')
    _one_line_error(path, r":2: not valid UTF-8")


def test_skip_leaves_out_the_bad_instance(tmp_path):
    bad = _record("bad")
    bad["history"][3]["extras"] = []
    path = _write(tmp_path, _record("good"), bad)
    with pytest.warns(
        CacheVizWarning, match=r"skipped 1 bad line\(s\): line 2 \(`history\[3\]\.extras`"
    ):
        session = openhands.read(path, errors="skip")
    assert {c.thread_hint for c in session.calls} == {"good"}


def test_an_instance_without_calls_is_counted_and_none_at_all_is_an_error(tmp_path):
    empty = {"instance_id": "x", "history": [], "metrics": None}
    session = openhands.read(_write(tmp_path, _record(), empty))
    assert session.ignored == {"instance without LLM calls": 1}
    _one_line_error(_write(tmp_path, empty), r"no API call could be read")


# -- fuzz -----------------------------------------------------------------------------

GOOD = json.dumps(_record())
KEYS = [
    "history",
    "metrics",
    "token_usages",
    "response_latencies",
    "response_id",
    "action",
    "observation",
    "tool_call_metadata",
    "model_response",
    "choices",
    "message",
    "tool_calls",
    "tool_call_id",
    "content",
    "args",
    "tools",
    "timestamp",
    "id",
    "prompt_tokens",
    "cache_read_tokens",
    "source",
    "extras",
    "forgotten_event_ids",
    "summary_offset",
]
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(KEYS), c, max_size=4),
    max_leaves=10,
)


def _containers(value, out):
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            _containers(v, out)
    elif isinstance(value, list):
        for v in value:
            _containers(v, out)
    return out


def _edit(t):
    """Set one key of one object somewhere in a good record to a random value."""
    index, key, value = t
    record = copy.deepcopy(_record())
    targets = _containers(record, [])
    targets[index % len(targets)][key] = value
    return json.dumps(record).encode()


def _mutations():
    good = GOOD.encode()
    return st.one_of(
        st.integers(0, len(good)).map(lambda n: good[:n]),  # truncated
        st.binary(max_size=80),  # garbage, invalid UTF-8
        st.tuples(st.integers(0, len(good) - 1), st.binary(min_size=1, max_size=3)).map(
            lambda t: good[: t[0]] + t[1] + good[t[0] + 1 :]
        ),  # byte flips
        VALUES.map(lambda v: json.dumps(v).encode()),  # well-formed JSON, wrong shapes
        st.tuples(st.integers(0, 500), st.sampled_from(KEYS), VALUES).map(_edit),  # one field off
    )


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_mutations(), min_size=1, max_size=3))
@pytest.mark.slow
def test_fuzzed_outputs_load_or_fail_with_one_clear_line(tmp_path, lines):
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for errors in ("raise", "skip"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheVizWarning)
                session = openhands.read(path, errors=errors)
        except TranscriptError as exc:
            assert "\n" not in str(exc)
            assert str(path) in str(exc)
            event(f"{errors}: error")
            continue
        assert len(session.calls) >= 1
        analyze(session)
        event(f"{errors}: loaded")


# -- real data ------------------------------------------------------------------------

OUTPUT = "openhands/OpenHands__OpenHands__multi_swe_bench_examples_output.jsonl"


def test_real_openhands_output(realdata):
    path = realdata / OUTPUT
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    usages = [u for r in records for u in r["metrics"]["token_usages"]]
    reported = {u["response_id"] for u in usages}
    unreported = [
        lat["response_id"]
        for r in records
        for lat in r["metrics"]["response_latencies"]
        if lat["response_id"] not in reported
    ]
    assert openhands.detect(path, path.read_bytes()[: 1 << 20])
    session = openhands.read(path)

    assert (len(records), len(usages), len(unreported)) == (3, 105, 2)
    assert len(session.calls) == 107
    by_instance = {}
    for call in session.calls:
        by_instance[call.thread_hint] = by_instance.get(call.thread_hint, 0) + 1
    assert by_instance == {
        "ponylang__ponyc-4595": 23,
        "ponylang__ponyc-4593": 34,
        "ponylang__ponyc-4588": 50,
    }

    prompt = sum(u["prompt_tokens"] for u in usages)
    completion = sum(u["completion_tokens"] for u in usages)
    assert (prompt, completion) == (1913342, 13341)
    counted = [c.usage for c in session.calls if c.usage is not None]
    assert len(counted) == 105
    assert sum(u.input_tokens for u in counted) == prompt
    assert sum(u.output_tokens for u in counted) == completion
    assert {(u.cache_read_tokens, u.cache_write_tokens) for u in counted} == {(0, 0)}  # reported 0
    assert {c.meta["response_id"] for c in session.calls if c.usage is None} == set(unreported)

    # every call is aligned with the response that produced its events, in order
    for record in records:
        produced = []
        for ev in record["history"]:
            response = (ev.get("tool_call_metadata") or {}).get("model_response")
            if "action" in ev and response and response["id"] not in produced:
                produced.append(response["id"])
        calls = [
            c.meta["response_id"] for c in session.calls if c.thread_hint == record["instance_id"]
        ]
        assert [rid for rid in calls if rid in reported] == produced

    # the system prompt and the 4 tool schemas are logged: real blocks, no unlogged prefix
    first = session.calls[0]
    assert [b.part for b in first.blocks[:5]] == ["system", "tools", "tools", "tools", "tools"]
    assert not any(session.contents[b.hash].kind == OPAQUE for c in session.calls for b in c.blocks)

    frame = analyze(session).calls
    assert frame.height == 107
    assert frame["thread"].n_unique() == 3
    assert not frame["drift"].any()
    assert frame["reported_cache_read_tokens"].null_count() == 2
