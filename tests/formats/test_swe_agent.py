import copy
import json
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.analysis import analyze
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import swe_agent

SAMPLES = "swe_agent_traj"
SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample_sessions"
PYDICOM = f"{SAMPLES}/SWE-agent__SWE-agent__pydicom__pydicom-1458.traj"
MARSHMALLOW = f"{SAMPLES}/SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867__function_calling_replace_from_source.traj"
SYSTEM = "SETTING: You are an autonomous programmer, working in a command line. " * 20
ISSUE = "We're currently solving the following issue within our repository: TimeDelta rounds. " * 10


def _write(tmp_path, document, name="run.traj"):
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def _read(path, errors="raise"):
    head = path.read_bytes()[: 1 << 20]
    assert swe_agent.detect(path, head)
    return swe_agent.read(path, errors=errors)


def _contents(session, call):
    """The chat messages of one call, as rebuilt."""
    return [session.contents[h].value for h in call.hashes]


# --- SWE-agent 0.x: `history` only ------------------------------------------------------


def _h(role, content, agent="primary", **extra):
    return {"role": role, "content": content, "agent": agent, **extra}


def _swe0():
    history = [
        _h("system", SYSTEM),
        _h("user", "Here is a demonstration: ...\n" * 30, is_demo=True),
        _h("user", ISSUE),
        _h("assistant", "Let's look.\n```\nls\n```", thought="Let's look.", action="ls\n"),
        _h("user", "setup.py src/\n(Open file: n/a)\nbash-$"),
        _h(
            "assistant",
            "Open it.\n```\nopen setup.py\n```",
            thought="Open it.",
            action="open setup.py",
        ),
        _h("user", "[File: setup.py (3 lines total)]\n1:import re\n(Open file: setup.py)\nbash-$"),
        _h("assistant", "Done.\n```\nsubmit\n```", thought="Done.", action="submit\n"),
    ]
    steps = [
        {
            "action": "ls\n",
            "observation": "setup.py src/",
            "response": "...",
            "state": "{}",
            "thought": "Let's look.",
        },
        {
            "action": "open setup.py",
            "observation": "...",
            "response": "...",
            "state": "{}",
            "thought": "Open it.",
        },
        {
            "action": "submit\n",
            "observation": "diff",
            "response": "...",
            "state": "{}",
            "thought": "Done.",
        },
    ]
    info = {"exit_status": "submitted", "model_stats": {"tokens_sent": 9000, "api_calls": 3}}
    return {"environment": "swe_main", "trajectory": steps, "history": history, "info": info}


def test_swe_agent_0x_history_each_assistant_entry_is_a_call(tmp_path):
    session = _read(_write(tmp_path, _swe0()))
    assert session.format == "swe-agent"
    assert [c.line for c in session.calls] == [3, 5, 7]
    assert [len(c.blocks) for c in session.calls] == [3, 5, 7]
    first = session.calls[0]
    assert (first.model, first.provider, first.api) == ("unknown", "unknown", "chat.completions")
    assert first.reconstructed and first.usage is None and first.ts is None
    assert first.thread_hint == "primary"
    assert first.meta["step"] == "history[3]"
    assert [b.part for b in first.blocks] == ["system", "messages", "messages"]
    # only role and content are sent; the demonstration is sent as a user message
    assert _contents(session, first)[1] == {
        "role": "user",
        "content": "Here is a demonstration: ...\n" * 30,
    }
    calls = analyze(session).calls
    assert calls["prefix_tokens"].to_list()[1:] == calls["input_tokens"].to_list()[:-1]
    assert not calls["drift"].any()


def test_swe_agent_0x_other_agents_have_their_own_conversation(tmp_path):
    document = _swe0()
    document["history"][5:5] = [
        _h("system", "You edit files.", agent="edit"),
        _h("user", "Edit setup.py", agent="edit"),
        _h("assistant", "edited", agent="edit"),
    ]
    session = _read(_write(tmp_path, document))
    assert [c.thread_hint for c in session.calls] == ["primary", "edit", "primary", "primary"]
    edit = session.calls[1]
    assert [m["content"] for m in _contents(session, edit)] == ["You edit files.", "Edit setup.py"]
    assert len(session.calls[2].blocks) == 5  # the primary agent never saw the edit agent's turns


# --- SWE-agent 1.x: steps with `query` (the prompt as sent) -----------------------------


def _tool_call(call_id, command):
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }


def _swe1_query():
    system = {"role": "system", "content": SYSTEM, "agent": "main", "message_type": "system_prompt"}
    issue = {"role": "user", "content": ISSUE, "agent": "main", "message_type": "observation"}
    act = {
        "role": "assistant",
        "content": "List the files.",
        "thought": "List the files.",
        "action": "ls",
        "agent": "main",
        "tool_calls": [_tool_call("call_1", "ls")],
        "message_type": "action",
    }
    obs = {
        "role": "tool",
        "content": "setup.py",
        "agent": "main",
        "message_type": "observation",
        "tool_call_ids": ["call_1"],
    }
    steps = [
        {
            "action": "ls",
            "observation": "setup.py",
            "response": "List the files.",
            "thought": "List the files.",
            "execution_time": 0.1,
            "state": {},
            "query": [system, issue],
            "extra_info": {},
        },
        {
            "action": "submit",
            "observation": "diff",
            "response": "Submit.",
            "thought": "Submit.",
            "execution_time": 0.1,
            "state": {},
            "query": [system, issue, act, obs],
            "extra_info": {},
        },
        {
            "action": "",
            "observation": "Exited (autosubmitted)",
            "response": "Exit due to cost limit",
            "thought": "Exit due to cost limit",
            "execution_time": 0.0,
            "state": {},
            "query": [{}],
            "extra_info": {},
        },
    ]
    config = {"agent": {"model": {"name": "gpt-4o", "per_instance_cost_limit": 3.0}}}
    return {
        "trajectory": steps,
        "history": [system, issue, act, obs],
        "info": {"exit_status": "submitted", "model_stats": {"api_calls": 2}},
        "replay_config": json.dumps(config),
        "environment": "main",
    }


def test_swe_agent_1x_query_steps_are_the_prompts_sent(tmp_path):
    session = _read(_write(tmp_path, _swe1_query()))
    assert len(session.calls) == 2
    assert session.ignored == {"step without a model query": 1}
    second = session.calls[1]
    assert (second.model, second.provider, second.thread_hint) == ("gpt-4o", "openai", "main")
    messages = _contents(session, second)
    assert messages[2] == {
        "role": "assistant",
        "content": "List the files.",
        "tool_calls": [_tool_call("call_1", "ls")],
    }
    assert messages[3] == {"role": "tool", "content": "setup.py", "tool_call_id": "call_1"}
    assert second.hashes[:2] == session.calls[0].hashes
    assert second.blocks[0] is session.calls[0].blocks[0]  # unchanged messages are re-used
    calls = analyze(session).calls
    assert calls["prefix_tokens"][1] == calls["input_tokens"][0]
    assert calls["tokens_exact"].all()  # gpt-4o has a public tokenizer


def test_retry_agent_attempts_are_separate_threads(tmp_path):
    attempt = _swe1_query()
    document = {"attempts": [attempt, copy.deepcopy(attempt)], **copy.deepcopy(attempt)}
    session = _read(_write(tmp_path, document))
    assert [c.thread_hint for c in session.calls] == ["attempts[0]"] * 2 + ["attempts[1]"] * 2
    assert session.calls[2].meta["step"] == "attempts[1].trajectory[0]"


# --- SWE-agent 1.x, older: steps with `messages` (the history after the step) ------------


def _swe1_messages():
    def msg(role, content):
        return {"role": role, "content": content, "agent": "main", "message_type": "x"}

    history = [msg("system", SYSTEM), msg("user", ISSUE)]
    steps = []
    for i in range(3):
        history += [msg("assistant", f"step {i}"), msg("user", f"output {i}\n" * 40)]
        after = copy.deepcopy(history)
        if i == 2:  # a history processor elides an old observation
            after[3]["content"] = "Old environment output: (40 lines omitted)"
        steps.append(
            {
                "action": f"a{i}",
                "observation": f"output {i}",
                "response": f"step {i}",
                "thought": "",
                "state": {},
                "messages": after,
            }
        )
    return {"trajectory": steps, "history": history, "info": {"model_stats": {"api_calls": 3}}}


def test_swe_agent_1x_step_messages_are_the_next_calls_prompt(tmp_path):
    document = _swe1_messages()
    session = _read(_write(tmp_path, document))
    steps = document["trajectory"]
    assert [len(c.blocks) for c in session.calls] == [2, 4, 6]
    assert [m["content"] for m in _contents(session, session.calls[0])] == [SYSTEM, ISSUE]
    for i in (1, 2):
        assert [m["content"] for m in _contents(session, session.calls[i])] == [
            m["content"] for m in steps[i - 1]["messages"]
        ]
    # the elided observation shows in the call after step 2 only: no call carries it here
    assert not analyze(session).calls["drift"].any()
    steps.append({**steps[2], "messages": steps[2]["messages"] + [steps[2]["messages"][-1]]})
    session = _read(_write(tmp_path, document))
    analysis = analyze(session)
    assert analysis.calls["drift"].to_list() == [False, False, False, True]
    assert analysis.drifts.select("call", "label", "cause").row(0) == (
        3,
        "user#2",
        "content_edited",
    )


# --- mini-swe-agent ----------------------------------------------------------------------


def _completion(content, prompt, cached, created, model="gpt-4o-mini-2024-07-18"):
    return {
        "id": f"chatcmpl-{created}",
        "created": created,
        "model": model,
        "object": "chat.completion",
        "system_fingerprint": "fp_0",
        "choices": [
            {
                "finish_reason": "stop",
                "index": 0,
                "message": {
                    "content": content,
                    "role": "assistant",
                    "tool_calls": None,
                    "function_call": None,
                },
            }
        ],
        "usage": {
            "completion_tokens": 40,
            "prompt_tokens": prompt,
            "total_tokens": prompt + 40,
            "completion_tokens_details": {"reasoning_tokens": 0},
            "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": cached},
        },
        "service_tier": "default",
    }


MINI_SYSTEM = (
    "You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks. "
    * 8
)
MINI_TASK = (
    "<pr_description>\nConsider the following PR description: TimeDelta serialization precision\n</pr_description>"
    * 5
)


def _mini_v1():
    """mini-swe-agent 1.x (`trajectory_format: mini-swe-agent-1`), written by `save_traj`."""
    usage = [(1400, 0), (1650, 1280), (1900, 1536)]
    messages = [{"role": "system", "content": MINI_SYSTEM}, {"role": "user", "content": MINI_TASK}]
    for i, (prompt, cached) in enumerate(usage):
        content = f"THOUGHT: step {i}\n\n```bash\necho {i}\n```"
        response = _completion(content, prompt, cached, 1754500000 + 10 * i)
        messages.append({"role": "assistant", "content": content, "extra": {"response": response}})
        messages.append(
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{i}\n</output>"}
        )
    messages[-1] = {
        "role": "user",
        "content": "diff --git a/src/fields.py b/src/fields.py",
    }  # Submitted
    return {
        "info": {
            "exit_status": "Submitted",
            "submission": "diff --git a/src/fields.py b/src/fields.py",
            "model_stats": {"instance_cost": 0.0021, "api_calls": 3},
            "mini_version": "1.9.1",
            "config": {
                "agent": {
                    "system_template": "You are a helpful assistant ...",
                    "step_limit": 250,
                    "cost_limit": 3.0,
                },
                "model": {"model_name": "gpt-4o-mini", "model_kwargs": {"temperature": 0.0}},
                "environment": {"cwd": "", "timeout": 60},
                "agent_type": "minisweagent.agents.default.DefaultAgent",
                "model_type": "minisweagent.models.litellm_model.LitellmModel",
                "environment_type": "minisweagent.environments.docker.DockerEnvironment",
            },
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }


def _mini_v2():
    """mini-swe-agent 2.x: assistant messages are the full response message, with `extra`."""
    document = _mini_v1()
    messages = document["messages"][:2]
    stamp = 1754600000.5
    for i, (prompt, cached) in enumerate([(1400, 0), (1500, 1280), (1700, 1408)]):
        content = f"THOUGHT: step {i}\n\n```mswea_bash_command\necho {i}\n```"
        response = _completion(
            content, prompt, cached, 1754600000 + 10 * i, model="claude-sonnet-4-5-20250929"
        )
        if i == 1:  # no action in the output: the response is replaced by the error message
            messages.append(
                {
                    "role": "user",
                    "content": "Please always provide EXACTLY ONE action in triple backticks, found 0 actions.",
                    "extra": {
                        "interrupt_type": "FormatError",
                        "n_actions": 0,
                        "model_response": content,
                    },
                }
            )
            continue
        message = {**response["choices"][0]["message"], "provider_specific_fields": {}}
        extra = {
            "actions": [{"command": f"echo {i}"}],
            "response": response,
            "cost": 0.001,
            "timestamp": stamp + i,
        }
        messages.append({**message, "extra": extra})
        messages.append(
            {
                "role": "user",
                "content": f"<returncode>0</returncode>\n<output>\n{i}\n</output>",
                "extra": {"raw_output": f"{i}\n", "returncode": 0, "timestamp": stamp + i},
            }
        )
    messages.append(
        {
            "role": "exit",
            "content": "diff",
            "extra": {"exit_status": "Submitted", "submission": "diff"},
        }
    )
    document["messages"] = messages
    document["info"]["mini_version"] = "2.0.0"
    document["info"]["config"]["model"] = {
        "model_name": "anthropic/claude-sonnet-4-5-20250929",
        "model_kwargs": {},
    }
    document["trajectory_format"] = "mini-swe-agent-1.1"
    return document


def test_mini_swe_agent_v1_calls_and_usage(tmp_path):
    document = _mini_v1()
    session = _read(_write(tmp_path, document, "task.traj.json"))
    assert [c.line for c in session.calls] == [2, 4, 6]
    first = session.calls[0]
    assert (first.model, first.provider, first.thread_hint) == ("gpt-4o-mini", "openai", "main")
    assert first.ts == datetime.fromtimestamp(1754500000, UTC)
    assert [c.usage.input_tokens for c in session.calls] == [1400, 1650, 1900]
    assert [c.usage.cache_read_tokens for c in session.calls] == [0, 1280, 1536]
    assert session.calls[1].usage.output_tokens == 40
    # `extra` is not sent
    assert _contents(session, session.calls[1])[2] == {
        "role": "assistant",
        "content": "THOUGHT: step 0\n\n```bash\necho 0\n```",
    }
    calls = analyze(session).calls
    assert calls.height == document["info"]["model_stats"]["api_calls"]
    assert calls["prefix_tokens"].to_list()[1:] == calls["input_tokens"].to_list()[:-1]
    assert calls["reported_cache_read_tokens"].to_list() == [0, 1280, 1536]


def test_mini_swe_agent_v2_format_errors_are_calls_and_exit_is_not(tmp_path):
    session = _read(_write(tmp_path, _mini_v2(), "task.traj.json"))
    assert [c.line for c in session.calls] == [2, 4, 5]
    assert session.ignored == {"exit message": 1}
    assert session.calls[0].model == "anthropic/claude-sonnet-4-5-20250929"
    assert session.calls[0].provider == "anthropic"
    assert session.calls[0].ts == datetime.fromtimestamp(1754600000, UTC)
    assert session.calls[1].usage is None  # the response of a format error is not kept
    sent = _contents(session, session.calls[2])
    assert sent[2]["tool_calls"] is None and "extra" not in sent[2]
    assert sent[4]["content"].startswith("Please always provide EXACTLY ONE action")
    calls = analyze(session).calls
    assert calls["prefix_tokens"].to_list()[1:] == calls["input_tokens"].to_list()[:-1]


def test_mini_swe_agent_without_config_uses_the_response_model(tmp_path):
    document = _mini_v1()
    del document["info"]["config"]
    session = _read(_write(tmp_path, document, "task.traj.json"))
    assert session.calls[0].model == "gpt-4o-mini-2024-07-18"


# --- detection and errors ----------------------------------------------------------------


def test_detect_ignores_other_formats(tmp_path):
    for path in sorted(SAMPLE_DIR.glob("*.jsonl")):
        assert not swe_agent.detect(path, path.read_bytes()[: 1 << 20]), path
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"eval": {}, "version": 2, "samples": []}))
    assert not swe_agent.detect(other, other.read_bytes())
    history = tmp_path / "x.aider.llm.history"
    history.write_text("TO LLM 2025-01-31T11:21:36\n-------\nUSER hi\n")
    assert not swe_agent.detect(history, history.read_bytes())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["history"].__setitem__(4, {"content": "x"}),
            r"history\[4\]\.role is null; expected the role name",
        ),
        (
            lambda d: d["history"][4].__setitem__("content", 7),
            r"history\[4\]\.content is a number; expected a string or a list",
        ),
        (
            lambda d: d.__setitem__("history", {}),
            r"`?history`? is an object; expected a list of messages",
        ),
        (
            lambda d: d.__setitem__("trajectory", 3),
            r"trajectory is a number; expected a list of steps",
        ),
    ],
)
def test_bad_fields_are_named_in_one_line(tmp_path, mutate, message):
    document = _swe0()
    mutate(document)
    path = _write(tmp_path, document)
    with pytest.raises(TranscriptError, match=message) as caught:
        swe_agent.read(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_skip_leaves_out_a_bad_step(tmp_path):
    document = _swe1_query()
    document["trajectory"][0]["query"][1] = "oops"
    path = _write(tmp_path, document)
    with pytest.raises(
        TranscriptError, match=r"trajectory\[0\]\.query\[1\] is a string; expected a message object"
    ):
        swe_agent.read(path)
    with pytest.warns(CacheVizWarning, match="skipped 1 bad line"):
        session = swe_agent.read(path, errors="skip")
    assert len(session.calls) == 1 and session.skipped[0].reason.startswith(
        "trajectory[0].query[1]"
    )


def test_a_usage_count_that_is_not_finite_is_an_error_or_a_null_usage(tmp_path):
    document = _mini_v1()
    document["messages"][4]["extra"]["response"]["usage"]["prompt_tokens"] = float("nan")
    path = _write(tmp_path, document, "task.traj.json")
    with pytest.raises(TranscriptError, match=r"`usage\.prompt_tokens` is nan"):
        swe_agent.read(path)
    with pytest.warns(CacheVizWarning, match=r"usage set to null for 1 call"):
        calls = cacheviz.load(path, errors="skip").calls
    assert calls[1].usage is None


def test_truncated_and_empty_files(tmp_path):
    path = _write(tmp_path, _swe0())
    path.write_text(path.read_text()[:400])
    with pytest.raises(TranscriptError, match=r"run\.traj:\d+: not valid JSON: .*truncated"):
        swe_agent.read(path)
    path.write_text(json.dumps({"trajectory": [], "history": []}))
    with pytest.raises(TranscriptError, match="no model call in the trajectory"):
        swe_agent.read(path)
    path.write_text("[1, 2]")
    with pytest.raises(TranscriptError, match="the document is an array; expected a SWE-agent"):
        swe_agent.read(path)
    path.write_bytes(b'{"history": [{"role": "user", "content": "\xff"}]}')
    with pytest.raises(TranscriptError, match=r"run\.traj:1: not valid UTF-8"):
        swe_agent.read(path)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _replace(document, path, junk):
    if not path:
        return junk
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = junk
    return document


FIXTURES = {
    "0.x": _swe0,
    "1.x query": _swe1_query,
    "1.x messages": _swe1_messages,
    "mini 1": _mini_v1,
    "mini 2": _mini_v2,
}
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(
        st.sampled_from(["role", "content", "query", "messages", "extra", "usage", "created"]),
        st.none() | st.integers() | st.floats() | st.text(max_size=3),
        max_size=2,
    ),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
@pytest.mark.slow
def test_fuzzed_trajectories_load_or_fail_with_one_clear_line(tmp_path, data):
    document = FIXTURES[data.draw(st.sampled_from(sorted(FIXTURES)))]()
    text = json.dumps(document, indent=1).encode()
    how = data.draw(st.sampled_from(["field", "truncate", "bytes"]))
    if how == "field":
        path = data.draw(st.sampled_from(list(_paths(document))))
        text = json.dumps(_replace(document, path, data.draw(JUNK))).encode()
    elif how == "truncate":
        text = text[: data.draw(st.integers(0, len(text)))]
    else:
        at = data.draw(st.integers(0, len(text) - 1))
        text = text[:at] + data.draw(st.binary(min_size=1, max_size=3)) + text[at + 1 :]
    path = tmp_path / "fuzz.traj"
    path.write_bytes(text)
    for errors in ("raise", "skip"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheVizWarning)
                session = swe_agent.read(path, errors=errors)
        except TranscriptError as exc:
            assert "\n" not in str(exc)
            assert str(path) in str(exc)
            continue
        assert session.calls
        analyze(session)


# --- real trajectories -------------------------------------------------------------------


def test_real_swe_agent_0x_trajectory(realdata):
    path = realdata / PYDICOM
    raw = json.loads(path.read_text())
    responses = [
        k for k, h in enumerate(raw["history"]) if h["role"] == "assistant" and not h.get("is_demo")
    ]
    assert swe_agent.detect(path, path.read_bytes()[: 1 << 20])
    session = swe_agent.read(path)
    assert len(session.calls) == len(responses) == raw["info"]["model_stats"]["api_calls"] == 12
    assert [c.line for c in session.calls] == responses
    assert [len(c.blocks) for c in session.calls] == responses  # everything before the response
    assert {c.model for c in session.calls} == {"unknown"}
    assert all(c.usage is None and c.reconstructed for c in session.calls)
    calls = analyze(session).calls
    # append-only: every call re-sends the whole previous call
    assert calls["prefix_tokens"].to_list()[1:] == calls["input_tokens"].to_list()[:-1]
    assert not calls["drift"].any()
    assert calls["prefix_tokens"][1] > 5000  # system prompt + demonstration + issue


def test_real_swe_agent_1x_trajectory(realdata):
    path = realdata / MARSHMALLOW
    raw = json.loads(path.read_text())
    steps = raw["trajectory"]
    assert swe_agent.detect(path, path.read_bytes()[: 1 << 20])
    session = swe_agent.read(path)
    assert len(session.calls) == len(steps) == raw["info"]["model_stats"]["api_calls"] == 13
    assert (
        {c.model for c in session.calls}
        == {raw["replay_config"]["agent"]["model"]["name"]}
        == {"replay"}
    )
    first = [m["content"] for m in _contents(session, session.calls[0])]
    assert first == [m["content"] for m in raw["history"][:2]]  # system prompt + issue
    for i in range(1, len(steps)):
        sent = [m["content"] for m in _contents(session, session.calls[i])]
        assert sent == [m["content"] for m in steps[i - 1]["messages"]]
    # the `last_n_observations` history processor rewrites an old observation on every step
    # once more than 5 are kept: those calls drift, the ones before extend the previous call
    elided = [
        sum(m["content"].startswith("Old environment output") for m in s["messages"]) for s in steps
    ]
    expected = [False, False] + [elided[i - 1] > elided[i - 2] for i in range(2, len(steps))]
    analysis = analyze(session)
    calls = analysis.calls
    assert calls["drift"].to_list() == expected == [False] * 6 + [True] * 7
    assert set(analysis.drifts["cause"]) == {"content_edited"}
    assert set(analysis.drifts["label"].str.slice(0, 5)) == {"tool#"}
    appended = [i for i in range(1, len(steps)) if not expected[i]]
    for i in appended:
        assert calls["prefix_tokens"][i] == calls["input_tokens"][i - 1]
    assert all(calls["prefix_tokens"][i] > 1000 for i in range(1, len(steps)))  # system + issue


def test_detect_is_false_on_the_other_real_files(realdata):
    others = [p for p in sorted(realdata.rglob("*")) if p.is_file() and SAMPLES not in str(p)]
    assert others
    for path in others:
        assert not swe_agent.detect(path, path.read_bytes()[: 1 << 20]), path
