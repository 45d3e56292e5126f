"""Claude Code 2.x on disk: detection by structure, 2.0 sibling sub-agents, forks counted
once (summary, report, inspector, scan), and folders read alike in Python and on the CLI.

Real sessions come from ../shared/realdata (skipped when absent), put back in the layout
Claude Code writes; expected figures are computed here from the raw lines.
"""

import base64
import io
import json
import os
import shutil
import warnings

import polars as pl
import pytest

import cacheviz
from cacheviz import cli
from cacheviz.errors import CacheVizWarning, UnknownFormatError
from cacheviz.formats import detect
from cacheviz.ui.report import report_data
from cacheviz.ui.widget import Inspector

XU = "Xu-Wentao__dotfile__7ef4b236-d946-48a6-a856-e45b02af7be7"
XU_ID = "7ef4b236-d946-48a6-a856-e45b02af7be7"
BESTLOVE = "bestlove1211__opencode__"
BESTLOVE_ID = "ce3dbbb4-29e8-46ff-8659-ebabb07f2db8"
FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _responses(paths):
    """Per message id, the final usage: the last record in each file, then the copy with
    the most output (a fork replays a streamed response's final record)."""
    best = {}
    for path in paths:
        last = {}
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            message = record.get("message")
            if record.get("type") != "assistant" or not isinstance(message, dict):
                continue
            if message.get("model") == "<synthetic>":
                continue
            last[message["id"]] = message["usage"]
        for mid, usage in last.items():
            if mid not in best or usage["output_tokens"] > best[mid]["output_tokens"]:
                best[mid] = usage
    return best


def _sums(responses):
    read = sum(u.get("cache_read_input_tokens") or 0 for u in responses.values())
    write = sum(u.get("cache_creation_input_tokens") or 0 for u in responses.values())
    return {
        "calls": len(responses),
        "input": sum(u.get("input_tokens") or 0 for u in responses.values()) + read + write,
        "read": read,
        "write": write,
        "output": sum(u.get("output_tokens") or 0 for u in responses.values()),
    }


def _frame_sums(calls):
    return {
        "calls": calls.height,
        "input": calls["reported_input_tokens"].sum(),
        "read": calls["reported_cache_read_tokens"].sum(),
        "write": calls["reported_cache_write_tokens"].sum(),
        "output": calls["reported_output_tokens"].sum(),
    }


@pytest.fixture
def xu_session(realdata, tmp_path):
    """The Xu-Wentao session in Claude Code 2.1's layout: <uuid>.jsonl + <uuid>/subagents/."""
    source = realdata / "claude_code_jsonl"
    project = tmp_path / "projects" / "-Users-x-dev"
    agents = project / XU_ID / "subagents"
    agents.mkdir(parents=True)
    shutil.copy(source / f"{XU}.jsonl", project / f"{XU_ID}.jsonl")
    for path in source.glob(f"{XU}__subagents__agent-*"):
        shutil.copy(path, agents / path.name.split("__subagents__")[1])
    return project / f"{XU_ID}.jsonl"


@pytest.fixture
def bestlove_session(realdata, tmp_path):
    """The bestlove1211 session in Claude Code 2.0's layout: agent-<id>.jsonl beside it."""
    project = tmp_path / "projects" / "-Users-y-opencode"
    project.mkdir(parents=True)
    for path in (realdata / "claude_code_jsonl").glob(f"{BESTLOVE}*"):
        shutil.copy(path, project / path.name.removeprefix(BESTLOVE))
    return project / f"{BESTLOVE_ID}.jsonl"


def _members(session):
    return [session, *sorted(session.parent.glob(f"{session.stem}/subagents/agent-*.jsonl"))]


def test_a_fork_counts_each_response_once(xu_session):
    expected = _sums(_responses(_members(xu_session)))
    assert expected["calls"] == 102  # 55 main + 46 Task agent + 1 side question's own
    session = cacheviz.load(xu_session)
    assert session.ignored["response replayed by a forked sub-agent"] == 22
    analysis = session.analyze()
    assert _frame_sums(analysis.calls) == expected
    fork = analysis.calls.filter(pl.col("thread").str.contains("aside_question"))
    assert fork.height == 1
    assert fork["parent_thread"].to_list() == ["main"]
    # its request starts from the parent's prefix: the same unlogged block, then the
    # replayed conversation, read from the cache
    assert fork["prefix_tokens"][0] > 0.9 * fork["input_tokens"][0]
    main_unlogged = analysis.calls.filter(pl.col("thread") == "main")["unlogged_tokens"][0]
    assert fork["unlogged_tokens"][0] == main_unlogged
    # summary, report and inspector see the same calls
    doc = analysis.summary()
    assert len(doc["calls"]) == 102
    report = report_data(analysis)
    timeline = pl.read_ipc_stream(io.BytesIO(base64.b64decode(report["timeline"])))
    assert timeline["call"].n_unique() == 102
    state = Inspector(analysis).get_state()
    timeline = pl.read_ipc_stream(io.BytesIO(state["_timeline"]))
    assert timeline["call"].n_unique() == 102
    result = cacheviz.scan([xu_session.parent.parent], cache=False)
    assert result.calls.height == 102
    assert result.duplicates_dropped == 22
    assert result.totals()["cache_read_tokens"] == expected["read"]


def test_the_cli_counts_a_fork_once_from_file_or_folder(xu_session, capsys):
    expected = _sums(_responses(_members(xu_session)))
    for target in (xu_session, xu_session.parent / XU_ID, xu_session.parent):
        assert cli.main(["summary", str(target), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert len(doc["calls"]) == expected["calls"], target
        assert sum(c["reported"]["cache_read_tokens"] for c in doc["calls"]) == expected["read"]


def test_sibling_sub_agents_of_claude_code_2_0_are_loaded(bestlove_session):
    agents = sorted(bestlove_session.parent.glob("agent-*.jsonl"))
    assert len(agents) == 4
    expected = _sums(_responses([bestlove_session, *agents]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheVizWarning)  # no sub-agent is missing
        session = cacheviz.load(bestlove_session)
    assert detect(bestlove_session) == "claude-code"  # opens with `summary` records
    calls = session.analyze().calls
    assert _frame_sums(calls) == expected
    assert expected["calls"] == 244
    assert calls.filter(pl.col("thread").str.starts_with("sub-agent")).height == 16
    # named by the Task call whose result names each agent (its file logs no prompt)
    assert set(calls["thread"]) == {
        "main",
        "sub-agent: Analyze test failures comprehensively",
        "sub-agent: Configure statusLine from PS1",
        "sub-agent: warmup",
        "sub-agent: warmup #2",
    }
    assert calls.filter(pl.col("thread") == "main")["parent_thread"].null_count() == 228
    # the scan reads the agents with their session, not as sessions of their own
    result = cacheviz.scan([bestlove_session.parent], cache=False)
    assert result.files["path"].to_list() == [str(bestlove_session)]
    assert result.calls.height == 244


def test_python_and_cli_read_the_same_folders(xu_session, bestlove_session, realdata, tmp_path):
    task = tmp_path / "cline-task"
    task.mkdir()
    (ui,) = (realdata / "cline_task").glob("*ui_messages.json")
    shutil.copy(ui, task / "ui_messages.json")
    for folder, fmt in (
        (xu_session.parent / XU_ID, "claude-code"),
        (bestlove_session.parent, "claude-code"),
        (task, "cline-ui"),
        (realdata / "cline_task", "cline"),
    ):
        session = cacheviz.load(folder)
        assert session.format == fmt, folder
        assert cli.main(["summary", str(folder), "--json"]) == 0


def test_a_project_folder_of_several_sessions_warns_which_one_is_read(xu_session):
    other = xu_session.with_name("0000-older.jsonl")
    shutil.copy(xu_session, other)
    os.utime(other, (1, 1))
    with pytest.warns(CacheVizWarning, match="2 sessions here; reading the newest"):
        session = cacheviz.load(xu_session.parent)
    assert session.path == xu_session


@pytest.mark.parametrize(
    "first",
    [
        {"type": "queue-operation", "operation": "enqueue", "timestamp": "t", "sessionId": "s"},
        {"type": "last-prompt", "lastPrompt": "hi", "sessionId": "s"},
        {"type": "summary", "summary": "Fix tests", "leafUuid": "u"},
        {"type": "progress", "data": {}, "uuid": "p", "sessionId": "s", "timestamp": "t"},
        {"type": "permission-mode", "permissionMode": "default", "sessionId": "s"},
    ],
)
def test_detection_by_structure_whatever_opens_the_file(tmp_path, first):
    user = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "s",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "hi"},
    }
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [first] * 30 + [user]))
    assert detect(path) == "claude-code"


def test_a_sub_agent_metadata_file_is_named_not_guessed(tmp_path):
    path = tmp_path / "agent-a95.meta.json"
    path.write_text('{"agentType":"Explore","description":"Explore code"}')
    with pytest.raises(UnknownFormatError, match=r"sub-agent's metadata .* load agent-a95\.jsonl"):
        cacheviz.load(path)


@pytest.mark.parametrize(
    "name",
    [
        f"{XU}.jsonl",
        f"{XU}__subagents__agent-a957850183dbc96f4.jsonl",
        f"{XU}__subagents__agent-aside_question-fcbf929fc3d4fdc0.jsonl",
        f"{BESTLOVE}{BESTLOVE_ID}.jsonl",
        f"{BESTLOVE}agent-5bd334ae.jsonl",
        f"{BESTLOVE}agent-6a7f316f.jsonl",
        f"{BESTLOVE}agent-98f8f6c3.jsonl",
        f"{BESTLOVE}agent-aa824985.jsonl",
    ],
)
def test_each_new_real_file_alone_loads_by_content_with_exact_sums(realdata, name, capsys):
    path = realdata / "claude_code_jsonl" / name
    expected = _sums(_responses([path]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheVizWarning)
        session = cacheviz.load(path)
    # stored apart from its sub-agents here, a session names the ones it misses
    assert all("sub-agent(s)" in str(w.message) for w in caught)
    assert session.format == "claude-code"
    assert _frame_sums(session.analyze().calls) == expected
    assert cli.main(["summary", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["calls"]) == expected["calls"]
