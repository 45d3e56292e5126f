"""GitHub Copilot CLI events.jsonl: calls per assistant message, usage a session figure."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz import cli
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect


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
        "reasoning_tokens": None,  # not reported: null, not 0
        "scope": "session",
        "calls_reporting": 0,
    }


def test_a_resumed_session_adds_up_its_shutdowns(events):
    lines = events.read_text().splitlines()
    resumed = [line.replace('"id": "e-', '"id": "r-') for line in lines[1:]]  # new events
    events.write_text("\n".join(lines + resumed) + "\n")
    with pytest.warns(CacheVizWarning, match="out of step"):  # the copy repeats the times
        session = cacheviz.load(events)
    totals = session.analyze().summary()["reported_totals"]
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


# -- a longer session, in the shape Copilot CLI writes ------------------------------------

SONNET, MINI = "claude-sonnet-4.5", "gpt-5-mini"


def _metrics(models):
    """``modelMetrics`` of a shutdown from {model: (input, cache read, output, requests)}."""
    return {
        model: {
            "requests": {"count": n, "cost": n},
            "usage": {
                "inputTokens": inp,
                "outputTokens": out,
                "cacheReadTokens": read,
                "cacheWriteTokens": 0,
            },
        }
        for model, (inp, read, out, n) in models.items()
    }


def _compaction(inp, cached, out, request):
    return {
        "success": True,
        "preCompactionTokens": inp,
        "postCompactionTokens": 4100,
        "preCompactionMessagesLength": 31,
        "messagesRemoved": 27,
        "tokensRemoved": inp - 4100,
        "summaryContent": f"<overview>Adding --verbose; {request}</overview>",
        "checkpointNumber": 1,
        "checkpointPath": "/home/dev/.copilot/session-state/s2/checkpoints/001.md",
        "compactionTokensUsed": {"input": inp, "output": out, "cachedInput": cached},
        "requestId": request,
    }


def _long_session() -> list[dict]:
    """Two runs of one session (resumed): tools, a failed tool and a failed turn, two model
    switches, two compactions (one in the middle of a turn) and a shutdown per run."""
    tick = iter(range(100))
    items = []

    def add(kind, **data):
        ts = next(tick)
        items.append(
            {
                "type": kind,
                "data": data,
                "id": f"9d0c-{ts:04d}",
                "timestamp": f"2026-04-02T05:{ts // 60:02d}:{ts % 60:02d}.120Z",
                "parentId": items[-1]["id"] if items else None,
            }
        )

    def ask(text):
        add(
            "user.message",
            content=text,
            transformedContent=f"<current_datetime>2026-04-02</current_datetime>\n\n{text}",
            attachments=[],
        )

    def say(text, out, *tools):
        requests = [
            {"toolCallId": f"toolu_{n}", "name": name, "arguments": args, "type": "function"}
            for n, name, args in tools
        ]
        add(
            "assistant.message",
            messageId=f"m{len(items)}",
            content=text,
            toolRequests=requests,
            outputTokens=out,
        )
        for n, name, args in tools:
            add("tool.execution_start", toolCallId=f"toolu_{n}", toolName=name, arguments=args)
            if name == "create":
                error = {"message": "file exists", "code": "failure"}
                add("tool.execution_complete", toolCallId=f"toolu_{n}", success=False, error=error)
            else:
                result = {"content": f"{name} done", "detailedContent": f"{name} done ✓"}
                add("tool.execution_complete", toolCallId=f"toolu_{n}", success=True, result=result)

    add(
        "session.start",
        sessionId="s2",
        version=1,
        producer="copilot-agent",
        copilotVersion="0.0.354",
        startTime="2026-04-02T05:00:00.000Z",
        selectedModel=SONNET,
        context={"cwd": "/home/dev/app", "gitRoot": "/home/dev/app", "branch": "main"},
    )
    add("session.info", infoType="mcp", message="Connected to 1 MCP server")
    ask("add a --verbose flag")
    add("assistant.turn_start", turnId="0")
    say("", 40, (1, "view", {"path": "cli.py"}))
    say("", 210, (2, "edit", {"path": "cli.py", "old_str": "a", "new_str": "b"}))
    say("Added --verbose.", 30)
    add("assistant.turn_end", turnId="0")
    add("session.model_change", previousModel=SONNET, newModel=MINI)
    ask("explain the change")
    add("assistant.turn_start", turnId="1")
    say("It prints each step.", 150)
    add("assistant.turn_end", turnId="1")
    add("session.model_change", previousModel=MINI, newModel=SONNET)
    ask("now add tests")
    add("assistant.turn_start", turnId="2")
    add("session.error", errorType="rate_limit", message="429 Too Many Requests", statusCode=429)
    add("assistant.turn_end", turnId="2")
    add("session.compaction_start")
    add("session.compaction_complete", **_compaction(98000, 90000, 1200, "req-1"))
    ask("now add tests")
    add("assistant.turn_start", turnId="3")
    say("", 400, (3, "create", {"path": "tests/test_cli.py"}))
    say("Created tests.", 60)
    add("assistant.turn_end", turnId="3")
    add(
        "session.shutdown",
        shutdownType="routine",
        totalPremiumRequests=6,
        totalApiDurationMs=41000,
        sessionStartTime=1775106000000,
        codeChanges={"linesAdded": 40, "linesRemoved": 2, "filesModified": ["cli.py"]},
        modelMetrics=_metrics({SONNET: (412000, 380000, 2300, 5), MINI: (9000, 0, 150, 1)}),
        currentModel=SONNET,
    )
    add("session.resume", resumeTime="2026-04-02T06:00:00.000Z", eventCount=len(items))
    ask("run them")
    add("assistant.turn_start", turnId="4")
    say("", 25, (4, "bash", {"command": "pytest -q"}))
    add("session.compaction_start")
    add("session.compaction_complete", **_compaction(120500, 110000, 1500, "req-2"))
    say("All 12 pass.", 20)
    add("assistant.turn_end", turnId="4")
    add(
        "session.shutdown",
        shutdownType="routine",
        totalPremiumRequests=3,
        totalApiDurationMs=12000,
        sessionStartTime=1775106000000,
        codeChanges={"linesAdded": 0, "linesRemoved": 0, "filesModified": []},
        modelMetrics=_metrics({SONNET: (250000, 231000, 1900, 3)}),
        currentModel=SONNET,
    )
    return items


def test_a_resumed_session_with_compactions(tmp_path, capsys):
    path = tmp_path / "s2" / "events.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in _long_session()))
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    messages = sum(e["type"] == "assistant.message" for e in events)
    compactions = [e["data"] for e in events if e["type"] == "session.compaction_complete"]
    usage = {}
    for e in events:
        if e["type"] == "session.shutdown":
            for entry in e["data"]["modelMetrics"].values():
                for key, value in entry["usage"].items():
                    usage[key] = usage.get(key, 0) + value
    assert detect(path) == "copilot-cli"
    session = cacheviz.load(path)
    assert session.format == "copilot-cli"
    assert len(session.calls) == messages + len(compactions) == 8 + 2
    models = [c.model for c in session.calls if c.thread_hint == "main"]
    assert models == [SONNET, SONNET, SONNET, MINI, SONNET, SONNET, SONNET, SONNET]
    assert cli.main(["summary", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    totals = doc["reported_totals"]
    assert totals["scope"] == "session"
    assert totals["input_tokens"] == usage["inputTokens"] == 412000 + 9000 + 250000
    assert totals["cache_read_tokens"] == usage["cacheReadTokens"] == 380000 + 231000
    assert totals["output_tokens"] == usage["outputTokens"] == 2300 + 150 + 1900
    compaction = [c for c in doc["calls"] if c["reported"] is not None]
    assert (
        [c["reported"]["input_tokens"] for c in compaction]
        == [c["compactionTokensUsed"]["input"] for c in compactions]
        == [98000, 120500]
    )


def test_a_session_whose_turns_all_failed_has_no_call(tmp_path):
    path = tmp_path / "s3" / "events.jsonl"
    path.parent.mkdir()
    failed = [
        _event("session.start", {"sessionId": "s3", "selectedModel": SONNET}, 0),
        _event("user.message", {"content": "hi", "transformedContent": "<t>0</t> hi"}, 1),
        _event("assistant.turn_start", {"turnId": "0"}, 2),
        _event("session.error", {"errorType": "authorization", "message": "401"}, 3),
        _event("user.message", {"content": "hi", "transformedContent": "<t>1</t> hi"}, 4),
        _event("assistant.turn_start", {"turnId": "1"}, 5),
        _event("session.error", {"errorType": "authorization", "message": "401"}, 6),
        _event("session.shutdown", {"shutdownType": "routine", "modelMetrics": {}}, 7),
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in failed))
    assert detect(path) == "copilot-cli"
    with pytest.raises(TranscriptError, match="no API call could be read"):
        cacheviz.load(path)


def test_scan_without_paths_looks_in_the_default_folder(events, monkeypatch):
    monkeypatch.setenv("HOME", str(events.parents[3]))
    result = cacheviz.scan(cache=False)
    found = {(loc.agent, loc.found) for loc in result.locations}
    assert ("copilot", True) in found
    assert result.calls.height == 2


# -- billing: the session's figure, or per-call usage where the log has it -----------------


def _rates(provider, model, ts, inp):
    from cacheviz.money._costs import provider_key
    from cacheviz.money.pricing import PriceBook, RateCache

    return RateCache(PriceBook(), provider_key(provider))(model, ts, inp)


def test_session_usage_is_billed_with_its_hit_ratio_and_no_simulated_cost(tmp_path, capsys):
    path = tmp_path / "s2" / "events.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(e) + "\n" for e in _long_session()))
    session = cacheviz.load(path)
    # by hand, per model over both runs: (input incl. cache, cache read, output)
    per_model = {SONNET: (412000 + 250000, 380000 + 231000, 2300 + 1900), MINI: (9000, 0, 150)}
    got = {u.model: u.usage for u in session.session_usage}
    assert {m: (u.input_tokens, u.cache_read_tokens, u.output_tokens) for m, u in got.items()} == (
        per_model
    )
    end = session.session_usage[0].ts
    providers = {u.model: u.provider for u in session.session_usage}
    assert providers == {SONNET: "anthropic", MINI: "openai"}
    expected = sum(
        _rates(providers[model], model, end, inp).cost(
            uncached=inp - read, cache_read=read, output=out
        )
        for model, (inp, read, out) in per_model.items()
    )
    analysis = session.analyze()
    assert analysis.billed_usd == pytest.approx(expected)
    # the compactions' own usage is in the session's figure: not added on top
    assert analysis.calls["billed_usd"].drop_nulls().len() == 2
    doc = analysis.summary()
    assert doc["billed_scope"] == "session"
    assert doc["hit_ratio"] == {
        "tokens": pytest.approx((380000 + 231000) / (412000 + 9000 + 250000)),
        "requests": None,
        "calls": 0,
        "scope": "session",
    }
    # the requests lack the system prompt and tools, of unknown size: no simulated figure
    assert doc["simulated_usd"] is None and doc["ideal_usd"] is None and doc["waste_usd"] is None
    assert "unknown size" in doc["simulation_withheld"]
    assert cli.main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(the session's reported usage per model at dated prices" in out
    assert "hit ratio 91% of the session's reported input" in out
    assert "simulated cost withheld" in out


def test_per_call_usage_events_and_new_compaction_names_are_read(tmp_path):
    items = _events()
    shutdown = items.pop()
    usage = {"model": "claude-haiku-4.5", "cost": 1, "duration": 900, "initiator": "agent"}
    first = {**usage, "inputTokens": 5000, "outputTokens": 50, "cacheReadTokens": 0}
    second = {**usage, "inputTokens": 4000, "outputTokens": 20, "cacheReadTokens": 4000}
    items.insert(4, _event("assistant.usage", {**first, "cacheWriteTokens": 4900}, 4))
    items.append(_event("assistant.usage", {**second, "cacheWriteTokens": 0}, 9))
    items.append({**items[-1]})  # the same event twice (same id): counted once
    compaction = {
        "summaryContent": "<overview>fix</overview>",
        "compactionTokensUsed": {
            "inputTokens": 9000,
            "outputTokens": 300,
            "cacheReadTokens": 8000,
            "cacheWriteTokens": 100,
        },
    }
    items.append(_event("session.compaction_complete", compaction, 10))
    items.append(shutdown)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in items))
    session = cacheviz.load(path)
    reported = [
        (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens)
        for u in (c.usage for c in session.calls)
    ]
    assert reported == [(5000, 0, 4900, 50), (4000, 4000, 0, 20), (9000, 8000, 100, 300)]
    assert session.ignored["event written twice (same id)"] == 1
    assert session.session_usage == [] and session.reported_totals is None  # calls billed
    doc = session.analyze().summary()
    assert doc["reported_totals"]["scope"] == "calls"
    assert doc["reported_totals"]["input_tokens"] == 18000
    assert "billed_scope" not in doc and doc["hit_ratio"]["calls"] == 3


def test_scan_bills_the_session_figure(tmp_path):
    path = tmp_path / "session-state" / "s2" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in _long_session()))
    billed = cacheviz.load(path).analyze().billed_usd
    result = cacheviz.scan([tmp_path / "session-state"], cache=False)
    assert result.calls["billed_usd"].sum() == pytest.approx(billed)
    assert result.sessions["billed_usd"].to_list() == [pytest.approx(billed)]
    assert result.sessions["unpriced_calls"].to_list() == [0]


def _old_flat_session() -> list[dict]:
    """The older flat ``session-state/<id>.jsonl``: the same events, no model named."""
    start = {"sessionId": "s9", "version": 1, "producer": "copilot-agent",
             "copilotVersion": "0.0.339", "startTime": "2025-10-12T08:00:00.000Z"}  # fmt: skip
    return [
        _event("session.start", start, 0),
        _event("user.message", {"content": "fix", "transformedContent": "<t>0</t> fix"}, 1),
        _event("assistant.message", {"messageId": "m1", "content": "Done.", "toolRequests": []}, 2),
    ]


def test_a_session_without_shutdown_has_calls_and_no_invented_bill(tmp_path):
    path = tmp_path / "s1" / "events.jsonl"
    path.parent.mkdir()
    running = [e for e in _events() if e["type"] != "session.shutdown"]
    path.write_text("".join(json.dumps(e) + "\n" for e in running))
    session = cacheviz.load(path)
    assert len(session.calls) == 2 and all(c.usage is None for c in session.calls)
    assert session.session_usage == [] and session.reported_totals is None
    assert session.analyze().billed_usd is None


def test_the_older_flat_layout_reads_without_a_logged_model(tmp_path):
    state = tmp_path / ".copilot" / "session-state"
    state.mkdir(parents=True)
    path = state / "s9.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in _old_flat_session()))
    assert detect(path) == "copilot-cli"
    session = cacheviz.load(path)
    (call,) = session.calls
    assert call.model == "unknown" and call.usage is None
    assert call.meta["model_source"].startswith("not logged")
    (tmp_path / ".copilot" / "config.json").write_text(
        json.dumps({"model": "claude-sonnet-4.5", "banner": "never"})
    )
    (call,) = cacheviz.load(path).calls
    assert call.model == "claude-sonnet-4.5" and call.provider == "anthropic"
    assert "config.json" in call.meta["model_source"]


def test_every_event_written_twice_counts_once(tmp_path, events):
    """Issue 29 item 5: an events file holding each event twice (same ids) gives the
    same calls and totals as the file written once; the repeats are counted."""
    doubled = tmp_path / "doubled" / "events.jsonl"
    doubled.parent.mkdir()
    lines = events.read_text().splitlines(keepends=True)
    doubled.write_text("".join(line + line for line in lines))
    once, twice = cacheviz.load(events), cacheviz.load(doubled)
    assert len(twice.calls) == len(once.calls) == 2
    assert (
        twice.analyze().summary()["reported_totals"] == once.analyze().summary()["reported_totals"]
    )
    assert twice.ignored["event written twice (same id)"] == len(lines)
