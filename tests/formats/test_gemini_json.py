"""Older Gemini CLI chat JSON (`chats/session-*.json`), with sub-agent chats as threads."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz import cli
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect

SID = "f328310d-05ea-45ce-b9cb-fe2717bebe12"


def _gemini(mid, text, tokens, ts, model="gemini-2.5-pro"):
    return {
        "id": mid,
        "timestamp": ts,
        "type": "gemini",
        "content": text,
        "thoughts": [],
        "tokens": tokens,
        "model": model,
    }


def _tokens(inp, cached, out, thoughts=0):
    total = inp + out + thoughts
    return {
        "input": inp,
        "output": out,
        "cached": cached,
        "thoughts": thoughts,
        "tool": 0,
        "total": total,
    }


def _chat(session_id, messages, kind="main"):
    return {
        "sessionId": session_id,
        "projectHash": "f1995df9",
        "startTime": "2026-04-13T18:00:01.405Z",
        "lastUpdated": "2026-04-13T18:05:00.000Z",
        "messages": messages,
        "kind": kind,
        "summary": "Copy files",
    }


@pytest.fixture
def chats(tmp_path):
    folder = tmp_path / ".gemini" / "tmp" / "f1995df9" / "chats"
    folder.mkdir(parents=True)
    main = [
        {
            "id": "u1",
            "timestamp": "2026-04-13T18:00:02Z",
            "type": "user",
            "content": [{"text": "hi"}],
        },
        _gemini("g1", "Hello.", _tokens(12000, 0, 20, 30), "2026-04-13T18:00:05Z"),
        {"id": "i1", "timestamp": "2026-04-13T18:00:06Z", "type": "info", "content": "saved"},
        {"id": "u2", "timestamp": "2026-04-13T18:01:00Z", "type": "user", "content": "more"},
        _gemini(
            "g2", "Sure.", _tokens(12100, 11900, 15), "2026-04-13T18:01:03Z", "gemini-2.5-flash"
        ),
    ]
    session = folder / "session-2026-04-13T18-00-f328310d.json"
    session.write_text(json.dumps(_chat(SID, main), indent=2))
    agent = folder / SID / "twynek.json"
    agent.parent.mkdir()
    sub = [
        {"id": "s1", "timestamp": "2026-04-13T18:02:00Z", "type": "user", "content": "look"},
        _gemini("s2", "Found it.", _tokens(9000, 0, 40), "2026-04-13T18:02:04Z"),
    ]
    agent.write_text(json.dumps(_chat("twynek", sub, kind="subagent"), indent=2))
    return session


def test_one_call_per_gemini_message_with_sub_agent_threads(chats):
    assert detect(chats) == "gemini-cli-json"
    session = cacheviz.load(chats)
    assert [c.thread_hint for c in session.calls] == [
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "sub-agent twynek",
    ]
    first, second, sub = session.calls
    assert first.usage.input_tokens == 12000 and first.usage.output_tokens == 50  # + thoughts
    assert second.usage.cache_read_tokens == 11900
    assert sub.parent_hint == "gemini-2.5-pro"
    assert session.ignored.get("info message") == 1
    totals = session.analyze().summary()["reported_totals"]
    assert totals["input_tokens"] == 12000 + 12100 + 9000
    assert totals["cache_read_tokens"] == 11900
    assert totals["output_tokens"] == 50 + 15 + 40


def test_a_one_line_chat_is_not_taken_for_a_jsonl_header(chats):
    chats.write_text(json.dumps(json.loads(chats.read_text())))  # compact, one line
    assert detect(chats) == "gemini-cli-json"


def test_scan_reads_sub_agent_chats_with_their_session(chats):
    result = cacheviz.scan([chats.parents[2]], cache=False)
    assert result.files["path"].to_list() == [str(chats)]
    assert result.calls.height == 3


def test_a_bad_message_names_its_index(chats):
    doc = json.loads(chats.read_text())
    doc["messages"][1]["tokens"] = {"input": "many"}
    chats.write_text(json.dumps(doc))
    with pytest.raises(TranscriptError, match=r"messages\[1\]: field `tokens.input` is a string"):
        cacheviz.load(chats)
    with pytest.warns(cacheviz.errors.CacheVizWarning, match="skipped 1 bad line"):
        session = cacheviz.load(chats, errors="skip")
    assert len(session.calls) == 2


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_chats_load_or_fail_in_one_line(chats, data, loads_or_fails_cleanly):
    text = chats.read_text()
    cut = data.draw(
        st.one_of(
            st.integers(0, len(text)).map(lambda n: text[:n]),
            st.just(text.replace('"messages"', '"messagez"')),
            st.just(text.replace('"tokens"', '"tokens": [], "x"')),
            st.just(text.replace('"type": "gemini"', '"type": 5')),
            st.text(max_size=30),
        )
    )
    path = chats.with_name("session-2026-04-13T18-09-fuzzfuzz.json")
    path.write_text(cut)
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="gemini-cli-json", errors=e))


def _independent(path):
    """Calls and usage sums straight from the raw JSON (the session and its sub-agents)."""
    files = [path, *sorted(path.parent.glob(f"{path.stem.rsplit('-', 1)[-1]}*/*.json"))]
    calls, inp, cached, out = 0, 0, 0, 0
    for file in files:
        for message in json.loads(file.read_text())["messages"]:
            if message.get("type") != "gemini" or not message.get("model"):
                continue
            calls += 1
            tokens = message.get("tokens") or {}
            inp += tokens.get("input") or 0
            cached += tokens.get("cached") or 0
            out += (tokens.get("output") or 0) + (tokens.get("thoughts") or 0)
    return calls, inp, cached, out


# -- chats in the shape Gemini CLI writes them ----------------------------------------------

PROJECT = "f528f00f72f21423df709bb5104dfe181c28474fac473cf1028c3bfd64be534a"
PRO, FLASH = "gemini-2.5-pro", "gemini-2.5-flash"


def _tool_call(name, args, output, ts, status="success"):
    call_id = f"{name}-1743212331-{len(output)}"
    response = {"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}
    return {
        "id": call_id,
        "name": name,
        "args": args,
        "result": [response] if status == "success" else None,
        "status": status,
        "timestamp": ts,
        "displayName": name.title(),
        "description": "",
        "renderOutputAsMarkdown": True,
        "resultDisplay": output,
    }


def _said(mid, ts, content, tokens, model, tools=(), thoughts=()):
    message = _gemini(mid, content, tokens, ts, model)
    message["toolCalls"] = list(tools)
    message["thoughts"] = [
        {"subject": t, "description": t + ".", "timestamp": ts} for t in thoughts
    ]
    return message


def _note(kind, mid, ts, text):
    return {"id": mid, "timestamp": ts, "type": kind, "content": text}


def _write(path, session_id, messages, kind="main"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_chat(session_id, messages, kind), indent=2, ensure_ascii=False))


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """Three sessions and a sub-agent chat: tool calls with and without results, thoughts,
    model switches, UI messages, a response never reported and one without a model."""
    chats = tmp_path_factory.mktemp("gemini") / "tmp" / PROJECT / "chats"
    t = "2026-03-29T01:38:{:02d}.000Z".format
    _write(
        chats / "session-2026-03-29T01-38-50535b60.json",
        "50535b60-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
        [
            _note("user", "a0", t(0), "summarise README.md ✓"),
            _said(
                "a1",
                t(4),
                "",
                _tokens(8120, 0, 25, 110),
                PRO,
                [_tool_call("read_file", {"absolute_path": "/app/README.md"}, "# App\n", t(5))],
                ["Reading the README"],
            ),
            _said("a2", t(9), "A command-line app.", _tokens(8410, 7980, 140, 60), PRO),
            _note("info", "a3", t(10), "Switched to fallback model gemini-2.5-flash"),
            _note("user", "a4", t(11), "shorter"),
            _said("a5", t(12), "A CLI.", _tokens(8600, 0, 6), FLASH),
            _note("error", "a6", t(13), "[API Error: quota exceeded]"),
            _note("user", "a7", t(14), "again"),
            _note("gemini", "a8", t(15), "Request cancelled."),  # no model: not an API call
        ],
    )
    sub_id = "f328310d-05ea-45ce-b9cb-fe2717bebe12"
    _write(
        chats / "session-2026-04-13T18-00-f328310d.json",
        sub_id,
        [
            {"id": "b0", "timestamp": t(20), "type": "user", "content": [{"text": "copy a to b"}]},
            _said(
                "b1",
                t(24),
                "",
                _tokens(12000, 0, 20, 30),
                PRO,
                [_tool_call("codebase_investigator", {"objective": "list a/"}, "a/1 a/2", t(40))],
            ),
            _said("b2", t(44), "Copied 2 files.", _tokens(12100, 11900, 15), FLASH),
            _note("warning", "b3", t(45), "Loop detection is off"),
        ],
    )
    _write(
        chats / sub_id / "twynek.json",
        "twynek",
        [
            _note("user", "s0", t(25), "List the files in a/"),
            _said(
                "s1",
                t(28),
                "",
                _tokens(9000, 0, 40, 12),
                FLASH,
                [_tool_call("list_directory", {"path": "a"}, "1\n2", t(29))],
            ),
            _said("s2", t(31), "a/1 a/2", _tokens(9150, 8990, 22), FLASH),
        ],
        kind="subagent",
    )
    unreported = _said(
        "c1",
        t(51),
        "Running the linter.",
        None,
        PRO,
        [_tool_call("run_shell_command", {"command": "ruff ."}, "", t(52), status="cancelled")],
    )
    _write(
        chats / "session-2026-04-15T03-00-3d743a4f.json",
        "3d743a4f-9e8d-4c7b-a6f5-e4d3c2b1a098",
        [
            _note("user", "c0", t(50), "fix lint"),
            unreported,  # its usage was never reported
            _note("user", "c2", t(53), "retry"),
            _said(
                "c3",
                t(56),
                "",
                {**_tokens(15000, 0, 80, 400), "tool": 35},
                PRO,
                [_tool_call("run_shell_command", {"command": "ruff ."}, "Found 0 errors", t(57))],
            ),
            _said("c4", t(59), "Lint is clean.", _tokens(15600, 14950, 9), PRO),
        ],
    )
    return chats


@pytest.mark.parametrize(
    ("name", "expected"),
    [  # (calls, input, cached, output + thoughts), added up by hand
        ("session-2026-03-29T01-38-50535b60.json", (3, 8120 + 8410 + 8600, 7980, 135 + 200 + 6)),
        (  # the session and its sub-agent's chat
            "session-2026-04-13T18-00-f328310d.json",
            (2 + 2, 12000 + 12100 + 9000 + 9150, 11900 + 8990, 50 + 15 + 52 + 22),
        ),
        ("session-2026-04-15T03-00-3d743a4f.json", (3, 15000 + 15600, 14950, 480 + 9)),
        (f"{SID}/twynek.json", (2, 9000 + 9150, 8990, 52 + 22)),  # a sub-agent chat alone
    ],
)
def test_chats_as_gemini_cli_writes_them(home, name, expected, capsys):
    path = home / name
    assert _independent(path) == expected
    calls, inp, cached, out = expected
    assert detect(path) == "gemini-cli-json"
    session = cacheviz.load(path)
    assert session.format == "gemini-cli-json"
    frame = session.analyze().calls
    assert frame.height == calls
    assert frame["reported_input_tokens"].sum() == inp
    assert frame["reported_cache_read_tokens"].sum() == cached
    assert frame["reported_output_tokens"].sum() == out
    assert cli.main(["summary", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["calls"]) == calls
    assert doc["reported_totals"]["input_tokens"] == inp


def test_a_jsonl_session_that_syncs_its_history_stays_jsonl(tmp_path):
    header = {"sessionId": "s", "projectHash": "p", "startTime": "t", "lastUpdated": "t"}
    sync = {"$set": {"messages": [{"id": "u1", "type": "user", "content": "hi"}]}}
    path = tmp_path / "session-2026-04-25T08-23-e435870b.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(sync) + "\n")
    assert detect(path) == "gemini-cli"
