"""Older Gemini CLI chat JSON (`chats/session-*.json`), with sub-agent chats as threads."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz import cli
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect

EXAMPLES = Path("/work/examples/issue18/gemini_json")  # real chats from a public home backup
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
        "subagent:twynek:gemini-2.5-pro",
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


@pytest.mark.parametrize(
    "name",
    [
        "f528f00f72f21423df709bb5104dfe181c28474fac473cf1028c3bfd64be534a/chats/session-2026-03-29T01-38-50535b60.json",
        "idaho-vault/chats/session-2026-04-13T18-00-f328310d.json",
        "idaho-vault/chats/session-2026-04-15T03-00-3d743a4f.json",
        f"idaho-vault/chats/{SID}/twynek.json",
    ],
)
def test_real_chats(name, capsys):
    path = EXAMPLES / name
    if not path.is_file():
        pytest.skip(f"{path} is not present (a public example, kept outside the repo)")
    calls, inp, cached, out = _independent(path)
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
