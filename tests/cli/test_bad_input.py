"""The command line's output and errors on bad input, pipes and hostile text."""

import json
import subprocess
import sys

import pytest

from cacheviz import cli
from cacheviz._util.visible import visible
from cacheviz.cli import _summary as summary
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
