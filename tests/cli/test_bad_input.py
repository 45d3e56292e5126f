"""The command line's output and errors on bad input, pipes and hostile text."""

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cacheviz import cli
from cacheviz._util.visible import visible
from cacheviz.cli import _summary as summary
from cacheviz.formats.native import record_line
from cacheviz.ui.report import read_details

ESCAPES = "\x1b]0;pwned\x07\x1b[31mred\x9b\u202eevil\u2066"


def _session(write_log, model="claude-sonnet-4-5", system="You are careful. "):
    bodies = [
        {
            "model": model,
            "system": [{"type": "text", "text": system * 60}],
            "messages": [{"role": "user", "content": f"question {i}"}],
        }
        for i in range(2)
    ]
    return write_log(bodies)


def test_output_that_resolves_to_the_input_is_refused(write_log, tmp_path, monkeypatch):
    path = _session(write_log)
    before = path.read_bytes()
    monkeypatch.chdir(tmp_path)
    for output in (str(path), f"./{path.name}", str(tmp_path / ".." / tmp_path.name / path.name)):
        assert cli.main(["report", str(path), "-o", output]) == 2
    (tmp_path / "hard.jsonl").hardlink_to(path)
    assert cli.main(["report", str(path), "-o", "hard.jsonl"]) == 2
    assert path.read_bytes() == before


def test_a_claude_code_subagent_log_is_an_input_too(tmp_path, capsys):
    session = tmp_path / "abc.jsonl"
    session.write_text("{}\n")
    target = tmp_path / "abc" / "subagents" / "agent-1.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text("{}\n")
    assert cli.main(["report", str(session), "-o", str(target)]) == 2
    assert "would overwrite the transcript" in capsys.readouterr().err


def test_an_unwritable_output_names_the_output(write_log, tmp_path, capsys):
    path = _session(write_log)
    output = tmp_path / "missing" / "x.html"
    assert cli.main(["report", str(path), "-o", str(output)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cacheviz: error: -o {output}: can't write the report")
    assert err.count("\n") == 1


def test_a_missing_price_file_names_the_price_file(write_log, tmp_path, capsys):
    path = _session(write_log)
    prices = tmp_path / "nowhere.json"
    status = cli.main(["simulate", str(path), "--provider", "anthropic", "--prices", str(prices)])
    assert status == 2
    assert str(prices) in capsys.readouterr().err


def test_a_closed_pipe_exits_quietly(write_log):
    path = _session(write_log)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from cacheviz.cli import run; run()",
            "summary",
            "--json",
            str(path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    proc.stderr.close()
    status = proc.wait()
    assert "Broken pipe" not in err and "error" not in err
    assert status == 0


def test_broken_pipe_is_not_reported_as_an_input_error(write_log, monkeypatch):
    path = _session(write_log)

    def broken(*_args, **_kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(summary, "_print_table", broken)
    with pytest.raises(BrokenPipeError):
        cli.main(["summary", str(path)])


def test_escape_and_bidi_characters_never_reach_the_terminal(write_log, capsys):
    path = _session(write_log, model=f"m{ESCAPES}")
    assert cli.main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\\u001b]0;pwned" in out and "\\u202e" in out
    assert cli.main(["summary", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)  # still valid JSON, same meaning
    assert doc["calls"][0]["model"].endswith(ESCAPES)


def test_errors_are_escaped_too(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({f"k{ESCAPES}": 1}) + "\n")
    assert cli.main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and err.count("\n") == 1


def test_visible_keeps_text_and_newlines():
    assert visible("plain\ttext\nnext") == "plain\ttext\nnext"
    assert visible("a\rb") == "a\\u000db"
    assert visible("a\rb", keep_cr=True) == "a\rb"


def test_report_keeps_secrets_only_when_asked(write_log, tmp_path):
    key = "sk-ant-api03-Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7iO9qW4rT6yP3uI8oL1kJ"
    system = [{"type": "text", "text": "You are careful. " * 3000}]
    bodies = [
        {
            "model": "claude-sonnet-4-5",
            "system": system,
            "messages": [
                {"role": "user", "content": f"export KEY={key}\nstep {i}"},  # edited: a drift
                {"role": "assistant", "content": "noted"},
                {"role": "user", "content": "go on"},
            ],
        }
        for i in range(2)
    ]
    path = write_log(bodies)
    for flags, shown in (([], False), (["--no-redact"], True)):
        out = tmp_path / f"r{len(flags)}.html"
        assert cli.main(["report", str(path), "-o", str(out), *flags]) == 0
        embedded = out.read_text().split('id="cacheviz-data">', 1)[1].split("</script>", 1)[0]
        data = json.loads(embedded)
        text = json.dumps({**data, "details": read_details(data)})
        assert (key[20:40] in text) is shown


def test_an_endless_stream_stops_at_the_stream_limit_in_one_line(capsys, monkeypatch):
    """Issue 29 item 9: ``summary /dev/zero`` filled the temporary disk; it is read up to
    the stream-size limit (lowered to 2 MiB here), then refused in one line."""
    from pathlib import Path

    from cacheviz.cli import _app

    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    monkeypatch.setenv("CACHEVIZ_MAX_STREAM_MB", "2")
    assert _app.main(["summary", "/dev/zero"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("cacheviz: error: /dev/zero")
    assert "more than 2 MiB arrived" in err and "CACHEVIZ_MAX_STREAM_MB" in err


# -- issue 29 item 15: bad input across readers, one stderr line naming the right file --

ROOT = Path(__file__).resolve().parents[2]
T0_MS = 1_767_000_000_000


def _replace_line(path, lineno, text):
    lines = path.read_text().splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n")


def _native_bad_json(tmp):
    path = tmp / "log.jsonl"
    path.write_text((ROOT / "sample_sessions" / "append_only.jsonl").read_text())
    _replace_line(path, 3, "{oops")
    return [str(path)], f"{path}:3: not valid JSON"


def _claude_code(tmp):
    shutil.copytree(ROOT / "tests" / "fixtures" / "claude_code_subagents", tmp / "cc")
    main = next((tmp / "cc").rglob("5e551011-*.jsonl"))
    return main, next((tmp / "cc").rglob("agent-a2e9*.jsonl"))


def _claude_code_subagent_bad_line(tmp):
    main, agent = _claude_code(tmp)
    _replace_line(agent, 2, "{oops")
    return [str(main)], f"{agent}:2: "  # the sub-agent's file, not the session's


def _claude_code_subagent_bad_usage(tmp):
    main, agent = _claude_code(tmp)
    lines = agent.read_text().splitlines()
    for number, text in enumerate(lines, 1):
        record = json.loads(text)
        if isinstance(record.get("message"), dict) and "usage" in record["message"]:
            record["message"]["usage"]["output_tokens"] = -3
            _replace_line(agent, number, json.dumps(record))
            return [str(main)], f"{agent}:{number}: field `usage.output_tokens` is -3"
    raise AssertionError("the fixture has no usage")


def _opencode_records(time_of_msg_2, finish_tokens):
    messages = [
        ("msg_1", {"role": "user", "time": {"created": T0_MS}}),
        (
            "msg_2",
            {
                "role": "assistant",
                "providerID": "anthropic",
                "modelID": "claude-sonnet-4-5",
                "time": time_of_msg_2,
                "tokens": {"input": 3, "output": 4, "cache": {"read": 0, "write": 0}},
            },
        ),
    ]
    parts = [
        ("prt_01", "msg_1", {"type": "text", "text": "list the files"}),
        ("prt_02", "msg_2", {"type": "step-start"}),
        ("prt_03", "msg_2", {"type": "text", "text": "a.py"}),
        ("prt_04", "msg_2", {"type": "step-finish", "tokens": finish_tokens}),
    ]
    return messages, parts


def _opencode_db_time_not_an_object(tmp):
    path = tmp / "opencode.db"
    messages, parts = _opencode_records("yesterday", {"input": 3, "output": 4})
    con = sqlite3.connect(path)
    con.executescript(
        "create table session (id text primary key, parent_id text, title text);"
        "create table message (id text primary key, session_id text, time_created integer,"
        " time_updated integer, data text);"
        "create table part (id text primary key, message_id text, session_id text,"
        " time_created integer, time_updated integer, data text);"
        "insert into session values ('ses_a', null, 't');"
    )
    con.executemany(
        "insert into message values (?, 'ses_a', ?, ?, ?)",
        [(m, T0_MS, T0_MS, json.dumps(d)) for m, d in messages],
    )
    con.executemany(
        "insert into part values (?, ?, 'ses_a', ?, ?, ?)",
        [(p, m, T0_MS, T0_MS, json.dumps(d)) for p, m, d in parts],
    )
    con.commit()
    con.close()
    return [str(path)], f"{path}: message msg_2: field `time` is a string"


def _opencode_folder_bad_part_usage(tmp):
    storage = tmp / "opencode" / "storage"
    messages, parts = _opencode_records({"created": T0_MS + 10}, {"input": -4, "output": 4})
    session = storage / "session" / "prj_1" / "ses_a.json"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"id": "ses_a", "parentID": None, "title": "t"}))
    for mid, data in messages:
        path = storage / "message" / "ses_a" / f"{mid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"id": mid, "sessionID": "ses_a", **data}))
    for pid, mid, data in parts:
        path = storage / "part" / mid / f"{pid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"id": pid, "messageID": mid, "sessionID": "ses_a", **data}))
    return [str(storage)], f"{storage}: part/msg_2/prt_04.json: field `usage.input_tokens` is -4"


def _gemini_subagent_bad_tokens(tmp):
    sid = "f328310d-05ea-45ce-b9cb-fe2717bebe12"
    folder = tmp / ".gemini" / "tmp" / "f1995df9" / "chats"
    (folder / sid).mkdir(parents=True)

    def chat(session_id, messages, kind):
        return {
            "sessionId": session_id,
            "projectHash": "f1995df9",
            "startTime": "2026-04-13T18:00:01.405Z",
            "lastUpdated": "2026-04-13T18:05:00.000Z",
            "messages": messages,
            "kind": kind,
        }

    def said(mid, tokens, ts):
        return {"id": mid, "timestamp": ts, "type": "gemini", "content": "ok", "thoughts": []} | {
            "tokens": tokens,
            "model": "gemini-2.5-pro",
        }

    tokens = {"input": 12000, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 12020}
    user = {"id": "u1", "timestamp": "2026-04-13T18:00:02Z", "type": "user", "content": "hi"}
    main = folder / "session-2026-04-13T18-00-f328310d.json"
    main.write_text(
        json.dumps(chat(sid, [user, said("g1", tokens, "2026-04-13T18:00:05Z")], "main"))
    )
    agent = folder / sid / "twynek.json"
    bad = said("s2", {"input": "many"}, "2026-04-13T18:02:04Z")
    agent.write_text(json.dumps(chat("twynek", [user, bad], "subagent")))
    return [str(main)], f"{agent}: messages[1]: field `tokens.input` is a string"


def _cline_truncated_events(tmp):
    task = tmp / "tasks" / "1767000000000"
    task.mkdir(parents=True)
    history = [
        {"role": "user", "content": [{"type": "text", "text": "task"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
    ]
    (task / "api_conversation_history.json").write_text(json.dumps(history))
    (task / "ui_messages.json").write_text('[{"ts": 1767000000000, "type": "say"')
    return [str(task / "api_conversation_history.json")], f"{task / 'ui_messages.json'}:1: "


def _claude_tap_year_one(tmp):
    record = {
        "timestamp": "0001-01-01T00:00:00.100000+00:00",
        "request_id": "r1",
        "turn": 1,
        "duration_ms": 500,
        "request": {
            "method": "POST",
            "path": "/v1/messages",
            "headers": {},
            "body": {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]},
        },
        "response": {
            "status": 200,
            "headers": {"Content-Type": "application/json"},
            "body": {"id": "msg_1", "usage": {"input_tokens": 5, "output_tokens": 1}},
        },
        "upstream_base_url": "https://api.anthropic.com",
    }
    path = tmp / "trace.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return [str(path)], f"{path}:1: field `timestamp` '0001-01-01T00:00:00.100000+00:00'"


def _otel(attributes, spans=None):
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "b1",
        "name": "ChatCompletion",
        "startTimeUnixNano": "1767000000000000000",
        "attributes": [{"key": k, "value": v} for k, v in attributes.items()],
    }
    scope = {"spans": [span] if spans is None else spans}
    return {"resourceSpans": [{"scopeSpans": [scope]}]}


OTEL_LLM = {
    "openinference.span.kind": {"stringValue": "LLM"},
    "llm.model_name": {"stringValue": "gpt-4o"},
    "llm.input_messages.0.message.role": {"stringValue": "user"},
    "llm.input_messages.0.message.content": {"stringValue": "hello"},
}


def _otel_spans_of_the_wrong_type(tmp):
    path = tmp / "spans.jsonl"
    path.write_text(json.dumps(_otel(OTEL_LLM, spans="x")) + "\n")
    return [str(path), "--format", "otel"], (
        f"{path}:1: field `resourceSpans[0].scopeSpans[0].spans` is a string"
    )


def _otel_twenty_digit_count(tmp):
    path = tmp / "spans.jsonl"
    count = {"llm.token_count.prompt": {"intValue": "12345678901234567890"}}
    path.write_text(json.dumps(_otel(OTEL_LLM | count)) + "\n")
    return [str(path)], f"{path}:1: field `llm.token_count.prompt` is 12345678901234567890"


def _usage_contradiction(tmp):
    path = tmp / "log.jsonl"
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi " * 300}]}
    usages = [
        {"prompt_tokens": 400},
        {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 5000}},
    ]
    lines = [
        record_line(body, provider="openai", model="gpt-4o", api="chat.completions", usage=u)
        for u in usages
    ]
    path.write_text("\n".join(lines) + "\n")
    return [str(path)], f"{path}:2: field `usage.prompt_tokens_details.cached_tokens` is 5000"


def _a_name_holding_a_newline(tmp):
    path = tmp / "bad\nname.jsonl"
    path.write_text("{oops\n")
    return [str(path)], f"{tmp}/bad\\nname.jsonl:1:2: "


def _prices_nan(tmp):
    prices = tmp / "prices.json"
    prices.write_text('{"models": [{"model": "claude-sonnet-4-5", "input_mtok": NaN}]}')
    args = ["simulate", str(ROOT / "sample_sessions" / "append_only.jsonl")]
    return [*args, "--provider", "anthropic", "--prices", str(prices)], (
        f"{prices}: model 'claude-sonnet-4-5': field `input_mtok` is nan"
    )


BAD_INPUTS = {
    "native, a line that is not JSON": _native_bad_json,
    "claude-code, a bad line of a sub-agent": _claude_code_subagent_bad_line,
    "claude-code, a negative count in a sub-agent": _claude_code_subagent_bad_usage,
    "opencode db, a message time that is a string": _opencode_db_time_not_an_object,
    "opencode folder, a negative count in a part": _opencode_folder_bad_part_usage,
    "gemini-cli json, a bad count in a sub-agent chat": _gemini_subagent_bad_tokens,
    "cline, a truncated ui_messages.json": _cline_truncated_events,
    "claude-tap, a time in year 1": _claude_tap_year_one,
    "otel, spans of the wrong type": _otel_spans_of_the_wrong_type,
    "otel, a 20-digit token count": _otel_twenty_digit_count,
    "native, a cache read above its input": _usage_contradiction,
    "a file name holding a newline": _a_name_holding_a_newline,
    "prices, NaN": _prices_nan,
}


@pytest.mark.parametrize("make", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_is_one_stderr_line_naming_the_right_file(tmp_path, capsys, make):
    args, where = make(tmp_path)
    if args[0] != "simulate":
        args = ["summary", *args]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"cacheviz: error: {where}"), err
