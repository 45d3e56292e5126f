import json
import subprocess
import sys
from pathlib import Path

import pytest

from cacheviz import cli

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def _section(out, title):
    start = next(i for i, line in enumerate(out) if line.startswith(title))
    end = next(i for i in range(start + 1, len(out)) if not out[i].startswith("   "))
    return out[start + 1 : end]


def test_summary_table_has_a_row_per_call_and_totals(capsys):
    assert cli.main(["summary", str(SAMPLES / "timestamp_in_system.jsonl")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("(cacheviz, 8 calls)")
    rows = out[2 : next(i for i, line in enumerate(out) if line.startswith("legend"))]
    assert len(rows) == 8
    # call 1's prefix (833 tokens) is below Sonnet 4.5's 1,024-token minimum: the break
    # cost nothing, so it is folded; calls 2-7 each lost a cached prefix
    assert sum("✗ volatile_value at system/system[1]" in r for r in rows) == 6
    details = _section(out, "drifts")
    assert len(details) == 6
    assert all("timestamp changed" in line and "[$0.0" in line for line in details)
    assert out[-2].startswith("+1 costless drift(s) folded")
    assert out[-1].startswith("total: ") and "6 drift(s) (+1 costless)" in out[-1]
    assert "counts approximate" in out[-1]


def test_all_drifts_lists_the_costless_ones(capsys):
    assert cli.main(["summary", str(SAMPLES / "timestamp_in_system.jsonl"), "--all-drifts"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(_section(out, "drifts")) == 7 and "7 drift(s)" in out[-1]


def test_summary_json_contract(capsys):
    assert cli.main(["summary", str(SAMPLES / "compaction.jsonl"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "cacheviz"
    for call in doc["calls"]:
        assert isinstance(call["call"], int)
        assert isinstance(call["thread"], str) and isinstance(call["model"], str)
        assert call["ts"] is None or call["ts"].endswith("Z")
        assert isinstance(call["input_tokens"], int) and isinstance(call["prefix_tokens"], int)
        assert call["reported"] is None
        drift = call["drift"]
        if drift is not None:
            assert drift["part"] in ("tools", "system", "messages")
            assert isinstance(drift["position"], int) and isinstance(
                drift["prev_common_tokens"], int
            )
            assert isinstance(drift["cause"], str)
    assert [c["call"] for c in doc["calls"] if c["drift"]] == []
    threads = [c["thread"] for c in doc["calls"]]
    assert threads[8] != threads[7] and threads[8:] == [threads[8]] * len(threads[8:])
    assert doc["calls"][8]["prefix_tokens"] > 0  # tools + system are still cached


def test_reported_usage_in_json(write_log, anthropic_body, capsys):
    usage = [
        {
            "input_tokens": 4,
            "cache_read_input_tokens": 10,
            "cache_creation_input_tokens": 0,
            "output_tokens": 1,
        }
    ]
    path = write_log([anthropic_body([{"role": "user", "content": "hi"}])], usage=usage)
    assert cli.main(["summary", str(path), "--json"]) == 0
    reported = json.loads(capsys.readouterr().out)["calls"][0]["reported"]
    assert {
        k: reported[k]
        for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    } == {
        "input_tokens": 14,
        "cache_read_tokens": 10,
        "cache_write_tokens": 0,
        "output_tokens": 1,
    }


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "file is empty"),
        (b"hello\n", "can't tell the transcript format"),
        (
            b'{"model":"m","request":{"messages":[{"role":"user","content":"x"}]}}\n{broken\n',
            ":2: not valid JSON",
        ),
        (b'{"model":"m","request":{"system":"x"}}\n', ":1: request has no `messages`"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content, expected):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    assert cli.main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cacheviz: error: ")
    assert expected in err
    assert "Traceback" not in err


def test_missing_file_exit_2(tmp_path, capsys):
    assert cli.main(["summary", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_errors_skip_reports_the_count(tmp_path, capsys):
    good = (SAMPLES / "append_only.jsonl").read_text().splitlines()
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([good[0], "{bad", good[1], "[1,2]"]) + "\n")
    assert cli.main(["summary", str(path), "--errors", "skip"]) == 0
    captured = capsys.readouterr()
    assert "skipped 2 bad line(s): line 2 (" in captured.err
    assert "; line 4 (" in captured.err  # every skipped line is named
    assert "2 bad line(s) skipped" in captured.out


def test_console_script_runs_as_a_module():
    result = subprocess.run(
        [sys.executable, "-m", "cacheviz", "summary", str(SAMPLES / "append_only.jsonl"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert len(json.loads(result.stdout)["calls"]) == 12


def test_missing_tiktoken_files_are_one_line_with_the_fix(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"),
        "HOME": str(tmp_path),
    }
    code = (
        "import sys, socket\n"
        "socket.socket.connect = lambda *a, **k: (_ for _ in ()).throw(OSError('offline'))\n"
        "from cacheviz import cli\n"
        f"sys.exit(cli.main(['summary', {str(SAMPLES / 'append_only.jsonl')!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "tiktoken encoding 'o200k_base' could not be loaded" in result.stderr
    assert "TIKTOKEN_CACHE_DIR" in result.stderr


def test_formats_lists_every_reader(capsys):
    from cacheviz.formats import READERS

    assert cli.main(["formats"]) == 0
    formats = capsys.readouterr().out.split("\n\n")[0].splitlines()[1:]
    assert [line.split()[0] for line in formats] == list(READERS)


# ---- issue 10: CLI ergonomics --------------------------------------------------------
REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"
SAMPLE = Path(__file__).resolve().parents[2] / "sample_sessions" / "environment_details.jsonl"


def test_version(capsys):
    from cacheviz import __version__

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"cacheviz {__version__}"


def test_simulate_defaults_to_the_recorded_provider(capsys):
    assert cli.main(["simulate", str(SAMPLE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["provider"] == "anthropic"


def test_compare_has_default_targets(capsys):
    assert cli.main(["compare", str(SAMPLE), "--json"]) == 0
    targets = [row["target"] for row in json.loads(capsys.readouterr().out)["targets"]]
    providers = [t.split(":")[0] for t in targets]
    assert targets[0].startswith("anthropic:")  # the recorded model first
    assert {"anthropic", "openai", "deepseek", "google"} <= set(providers)
    assert len(providers) == len(set(providers))  # one comparable model per provider


def test_report_defaults_to_the_input_name_in_the_working_folder(tmp_path, monkeypatch, capsys):
    # not beside the input: a Claude Code session's folder belongs to the agent
    agent, here = tmp_path / "agent", tmp_path / "here"
    agent.mkdir()
    here.mkdir()
    source = agent / "session.jsonl"
    source.write_bytes(SAMPLE.read_bytes())
    monkeypatch.chdir(here)
    assert cli.main(["report", str(source)]) == 0
    captured = capsys.readouterr()
    assert (here / "session.html").is_file()
    assert list(agent.iterdir()) == [source]
    assert "report written to session.html in the current folder" in captured.err
    # a second run never overwrites the first silently: it takes the next free name
    first = (here / "session.html").read_bytes()
    assert cli.main(["report", str(source)]) == 0
    assert "report written to session-2.html" in capsys.readouterr().err
    assert (here / "session.html").read_bytes() == first
    assert (here / "session-2.html").is_file()


def test_report_never_overwrites_its_input_by_default(tmp_path, monkeypatch, capsys):
    source = tmp_path / "session.html"  # a transcript with an unlucky name
    source.write_bytes(SAMPLE.read_bytes())
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", str(source), "--format", "cacheviz"]) == 0
    assert source.read_bytes() == SAMPLE.read_bytes()
    assert "report written to session-2.html" in capsys.readouterr().err


def test_thread_names_are_never_truncated(write_log, anthropic_body, capsys):
    name = "a-thread-name-that-is-much-longer-than-twenty-two-characters"
    path = write_log([anthropic_body([{"role": "user", "content": "hi"}])])
    record = json.loads(path.read_text().splitlines()[0])
    record.setdefault("meta", {})["thread"] = name
    path.write_text(json.dumps(record) + "\n")
    assert cli.main(["summary", str(path), "--json"]) == 0
    threads = {call["thread"] for call in json.loads(capsys.readouterr().out)["calls"]}
    assert max(map(len, threads)) > 22
    assert cli.main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert all(thread in out for thread in threads)


@pytest.mark.skipif(not (REALDATA / "claude_code_jsonl").is_dir(), reason="no ../shared/realdata")
def test_a_claude_code_project_or_session_folder_is_accepted(tmp_path, capsys):
    project = tmp_path / "project"
    project.mkdir()
    sessions = sorted((REALDATA / "claude_code_jsonl").glob("d-kimuson*.jsonl"))
    for session in sessions:
        (project / session.name).write_bytes(session.read_bytes())
    assert cli.main(["summary", str(project), "--json"]) == 0
    captured = capsys.readouterr()
    assert f"{len(sessions)} sessions here; reading the newest" in captured.err
    assert json.loads(captured.out)["format"] == "claude-code"
    # a session folder (<project>/<session>/subagents/) stands for <session>.jsonl
    newest = max(project.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name))
    folder = project / newest.stem
    (folder / "subagents").mkdir(parents=True)
    assert cli.main(["summary", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["path"].endswith(newest.name)


def test_summary_names_an_unpriced_model_with_why(tmp_path, capsys):
    from tests.formats.test_kimi_cli import kimi_home

    home, old, _ = kimi_home(tmp_path)
    config = home / "config.toml"  # Kimi Code's membership model: no per-token price
    config.write_text(config.read_text().replace("kimi-k2-turbo-preview", "kimi-for-coding"))
    assert cli.main(["summary", str(old)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "no price for kimi-for-coding (Kimi Code's membership model" in last
    assert "billed $" not in last
