"""The CLI's tables fit the terminal (COLUMNS) and carry a per-call hit ratio (issue 20, 8 and 11)."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cacheviz.cli import _app as app
from cacheviz.cli._table import Column, render
from cacheviz.formats.native import record_line

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
WIDTHS = [80, 100]


def with_usage(path: Path, calls: int = 6) -> Path:
    """An Anthropic log with reported usage on every call but the last."""
    clock = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    system = [
        {
            "type": "text",
            "text": "You are a careful agent. " + "Keep the prefix stable. " * 300,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    history: list[dict] = []
    lines = []
    for i in range(calls):
        history.append({"role": "user", "content": [{"type": "text", "text": f"step {i} " * 40}]})
        request = {"model": "claude-sonnet-4-5", "max_tokens": 256, "system": system}
        request["messages"] = [dict(m) for m in history]
        usage = None
        if i < calls - 1:
            read = 0 if i == 0 else 1500 + 40 * i
            usage = {
                "input_tokens": 200,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": 1600 if i == 0 else 90,
                "output_tokens": 20,
            }
        clock += timedelta(seconds=30)
        lines.append(
            record_line(
                request,
                provider="anthropic",
                model="claude-sonnet-4-5",
                api="messages",
                ts=clock.isoformat().replace("+00:00", "Z"),
                usage=usage,
            )
        )
        history.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(capsys, monkeypatch, width: int, *argv: str) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(width))
    assert app.main(list(argv)) == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("width", WIDTHS)
def test_summary_fits_the_width(capsys, monkeypatch, width):
    out = _run(capsys, monkeypatch, width, "summary", str(SAMPLES / "environment_details.jsonl"))
    assert max(map(len, out)) <= width
    # every call has its row, and the drift markers are wrapped, not cut
    rows = [line for line in out[2:] if line[:1].isdigit()]
    assert [int(r.split()[0]) for r in rows] == list(range(10))
    text = " ".join(line.strip() for line in out)
    assert text.count("✗ env_details_stripped at messages/user#") == 3
    assert "−335 tok, $0.0043" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_simulate_fits_the_width(capsys, monkeypatch, width, tmp_path):
    path = with_usage(tmp_path / "usage.jsonl")
    out = _run(capsys, monkeypatch, width, "simulate", str(path), "--provider", "anthropic")
    assert max(map(len, out)) <= width
    header = out[1].split()
    assert header[:3] == ["#", "model", "input"] and "cost" in header and header[-1] == "verdict"
    assert sum(line.rstrip().endswith(("match", "not_reported")) for line in out) == 6


def test_unlimited_without_a_terminal_or_columns(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert app.main(["summary", str(SAMPLES / "environment_details.jsonl")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "rep.write" in out[1]  # a pipe gets every column
    assert any(len(line) > 100 for line in out)


def _long_names(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    for i, name in enumerate(("append_only", "compaction")):
        target = folder / f"7ef4b236-d946-48a6-a856-e45b02af7be{i}-{name}-session.jsonl"
        shutil.copy(SAMPLES / f"{name}.jsonl", target)
    with_usage(folder / "0c1d2e3f-aaaa-bbbb-cccc-dddddddddddd-with-usage.jsonl")
    return folder


@pytest.mark.parametrize("width", WIDTHS)
def test_scan_by_session_fits_and_gives_each_session_its_context(
    capsys, monkeypatch, width, tmp_path
):
    # issue 33, items 8 and 14: when, billed and waste, models, the session (never
    # wrapped mid-word), what it was about; no always-1 `sessions` column
    folder = tmp_path / "logs"
    folder.mkdir()
    for i, name in enumerate(("append_only", "compaction")):
        shutil.copy(
            SAMPLES / f"{name}.jsonl", folder / f"7ef4b236-d946-48a6-a856-e45b02af7be{i}.jsonl"
        )
    with_usage(folder / "0c1d2e3f-aaaa-bbbb-cccc-dddddddddddd.jsonl")
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "cache"))
    out = _run(capsys, monkeypatch, width, "scan", str(folder), "--by", "session")
    assert max(map(len, out)) <= width
    table = out[out.index("") + 1 :]
    table = table[: table.index("")] if "" in table else table
    header = table[0]
    assert header.startswith("last activity") and header.endswith("title / first prompt")
    assert "sessions" not in header.split()
    for column in ("billed", "waste", "models", "session"):
        assert column in header.split(), column
    rows = [line for line in table[1:] if line[:4].isdigit()]
    assert len(rows) == 3 and all(row[:16].count(":") == 1 for row in rows)  # date HH:MM
    at = header.index("session")
    heads = {row[at : at + 8] for row in rows}  # each session's UUID head, on its row
    assert heads == {"7ef4b236", "0c1d2e3f"}
    titles = " ".join(line[header.index("title") :].strip() for line in table[1:])
    assert "step 0" in titles  # with_usage's first prompt
    doc = json.loads("\n".join(_run(capsys, monkeypatch, width, "scan", str(folder), "--json")))
    by_name = {Path(s["path"]).name: s for s in doc["sessions"]}
    usage = by_name["0c1d2e3f-aaaa-bbbb-cccc-dddddddddddd.jsonl"]
    assert usage["models"] == "claude-sonnet-4-5" and usage["title"].startswith("step 0 step 0")
    assert len(usage["title"]) <= 80 and usage["last_ts"] == "2026-03-02T09:03:00Z"


def test_scan_day_table_has_the_hit_ratio(capsys, monkeypatch, tmp_path):
    folder = _long_names(tmp_path)
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "cache"))
    out = _run(capsys, monkeypatch, 100, "scan", str(folder), "--json")
    doc = json.loads("\n".join(out))
    with_hits = [s for s in doc["sessions"] if s["hit_ratio"] is not None]
    assert len(with_hits) == 1 and doc["totals"]["hit_ratio"] == with_hits[0]["hit_ratio"]
    reads = 1540 + 1580 + 1620 + 1660
    inputs = 5 * 200 + 1600 + 4 * 90 + reads
    assert with_hits[0]["hit_ratio"] == pytest.approx(reads / inputs)


def test_summary_hit_ratio_per_call(capsys, monkeypatch, tmp_path):
    path = with_usage(tmp_path / "usage.jsonl")
    doc = json.loads("\n".join(_run(capsys, monkeypatch, 100, "summary", str(path), "--json")))
    ratios = [c["hit_ratio"] for c in doc["calls"]]
    assert ratios[0] == 0.0 and ratios[-1] is None  # nothing reported: null, not 0
    assert ratios[1] == pytest.approx(1540 / (200 + 1540 + 90))
    out = _run(capsys, monkeypatch, 100, "summary", str(path))
    header = out[1].split()
    cells = {int(line.split()[0]): line.split() for line in out[2:8]}
    at = header.index("hit")
    assert cells[1][at] == "84%" and cells[5][at] == "n/a"
    total = " ".join(
        line.strip() for line in out[out.index(next(x for x in out if x.startswith("total"))) :]
    )
    reads = 1540 + 1580 + 1620 + 1660
    share = reads / (5 * 200 + 1600 + 4 * 90 + reads)
    assert f"hit ratio {share:.0%} of the reported input" in total


def test_render_drops_by_priority_and_wraps_the_last_column():
    columns = [Column("a"), Column("b", drop=1), Column("c", drop=2), Column("note", "<")]
    rows = [["1", "22", "333", "a long note " * 6]]
    lines = render(columns, rows, 37)
    assert lines[0].split() == ["a", "b", "note"]  # c goes first, b stays
    assert all(len(line) <= 37 for line in lines) and len(lines) > 2
    assert render(columns, rows, None)[0].split() == ["a", "b", "c", "note"]


def test_simulate_shows_the_billed_cost_beside_the_simulated_one(capsys, monkeypatch):
    sample = SAMPLES / "reported_usage.jsonl"
    out = _run(capsys, monkeypatch, 100, "simulate", str(sample), "--provider", "anthropic")
    header = out[1].split()
    assert header.index("billed") == header.index("cost") + 1
    doc = json.loads("\n".join(_run(capsys, monkeypatch, 100, "summary", str(sample), "--json")))
    billed = [f"${c['billed_usd']:,.4f}" for c in doc["calls"]]
    cells = [line.split()[header.index("billed")] for line in out[2 : 2 + len(billed)]]
    assert cells == billed


def _claude_code_session(folder: Path, agents: list[str]) -> Path:
    """A Claude Code session in ``~/.claude/projects/<project>/`` naming ``agents``' results."""
    session = folder / "7ef4b236-d946-48a6-a856-e45b02af7be7.jsonl"
    records, parent = [], None
    for i in range(3):
        ts = f"2026-01-01T10:00:{2 * i:02d}Z"
        user: dict = {"type": "user", "uuid": f"u{i}", "parentUuid": parent, "timestamp": ts}
        user["message"] = {"role": "user", "content": f"step {i}"}
        if i and agents:
            user["toolUseResult"] = {"agentId": agents[i - 1], "status": "completed"}
        usage = {"input_tokens": 3, "cache_read_input_tokens": 15000 * bool(i)}
        usage |= {"cache_creation_input_tokens": 20 if i else 15000, "output_tokens": 7}
        reply = {"id": f"msg_{i}", "role": "assistant", "model": "claude-sonnet-4-5"}
        reply |= {"content": [{"type": "text", "text": f"done {i}"}], "usage": usage}
        ts = f"2026-01-01T10:00:{2 * i + 1:02d}Z"
        records += [user, {"type": "assistant", "uuid": f"a{i}", "parentUuid": f"u{i}"}]
        records[-1] |= {"timestamp": ts, "message": reply}
        parent = f"a{i}"
    for record in records:
        record |= {"sessionId": "s1", "isSidechain": False}
    session.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return session


def _stderr(capsys, width: int = 80) -> list[str]:
    """stderr's messages, each line fitting ``width``, continuation lines joined."""
    lines = capsys.readouterr().err.splitlines()
    assert all(len(line) <= width for line in lines), lines
    messages: list[str] = []
    for line in lines:
        if line.startswith("    ") and messages:
            messages[-1] += " " + line.strip()
        else:
            messages.append(line)
    return messages


def test_warnings_on_stderr_are_one_short_line_at_80_columns(tmp_path, monkeypatch, capsys):
    # a missing sub-agent folder's warning named two absolute paths: 182-368 characters
    monkeypatch.setenv("COLUMNS", "80")
    project = tmp_path / ".claude" / "projects" / ("-home-someone-src-" + "deep-" * 12 + "project")
    project.mkdir(parents=True)
    agents = ["a957850183dbc96f4", "aside_question-fcbf929fc3d4fdc0"]
    session = _claude_code_session(project, agents)
    assert app.main(["summary", str(session)]) == 0
    (warning,) = _stderr(capsys)
    assert len(warning) < 120 and str(tmp_path) not in warning
    assert warning.startswith("cacheviz: warning: 7ef4b236")
    assert "2 sub-agent(s) missing from subagents/ (a957850183db…, +1); not counted" in warning
    # a project folder of several sessions: which one is read, on one line
    shutil.copy(session, project / "0000-older.jsonl")
    assert app.main(["summary", str(project)]) == 0
    lines = _stderr(capsys)
    assert any("2 sessions here; reading the newest" in line for line in lines)
    assert all(len(line) < 120 and str(tmp_path) not in line for line in lines)
    # a message logged twice with other usage: which lines, on one line
    (project / "0000-older.jsonl").unlink()
    records = session.read_text().splitlines()
    again = json.loads(records[3])  # the second reply, msg_1, with other usage
    again["uuid"] = "a1-again"
    again["message"]["usage"]["input_tokens"] = 999
    session.write_text("\n".join([*records, json.dumps(again)]) + "\n")
    assert app.main(["summary", str(session)]) == 0
    lines = _stderr(capsys)
    assert any(":7: repeats line 4's message with other usage" in line for line in lines)
    assert all(len(line) < 120 and str(tmp_path) not in line for line in lines)


def _projects_layout(realdata: Path, home: Path) -> Path:
    """The real Claude Code session with sub-agents, put back in Claude Code's layout."""
    stem = "7ef4b236-d946-48a6-a856-e45b02af7be7"
    found = sorted((realdata / "claude_code_jsonl").glob(f"Xu-Wentao__dotfile__{stem}*"))
    if not found:
        pytest.skip("the Xu-Wentao session is not in ../shared/realdata")
    project = home / ".claude" / "projects" / ("-Users-someone-Project-" + "deep-" * 10 + "volcano")
    agents = project / stem / "subagents"
    agents.mkdir(parents=True)
    for path in found:
        _, _, rest = path.name.partition(f"{stem}__subagents__")
        target = agents / rest if rest else project / f"{stem}.jsonl"
        shutil.copy(path, target)
    return project / f"{stem}.jsonl"


@pytest.mark.parametrize("width", WIDTHS)
def test_every_command_fits_the_width_on_stdout_and_stderr(
    realdata, tmp_path, monkeypatch, capsys, width
):
    # issue 33, item 8: summary, scan, check, compare, simulate on a real session with
    # sub-agents in the projects layout (one sub-agent log missing: a warning), at 80/100
    session = _projects_layout(realdata, tmp_path)
    (session.parent / session.stem / "subagents" / "agent-a957850183dbc96f4.meta.json").unlink()
    lost = session.parent / session.stem / "subagents" / "agent-a957850183dbc96f4.jsonl"
    lost.rename(tmp_path / "elsewhere.jsonl")
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    runs = [
        ["summary", str(session)],
        ["scan", str(session.parent), "--by", "session"],
        ["scan", str(session.parent)],
        ["check", str(session)],
        ["compare", str(session)],
        ["simulate", str(session)],
        ["simulate", str(session), "--provider", "google"],
    ]
    for argv in runs:
        assert app.main(argv) in (0, 1), argv  # check: 1 with warnings
        captured = capsys.readouterr()
        for stream, text in (("stdout", captured.out), ("stderr", captured.err)):
            long = [line for line in text.splitlines() if len(line) > width]
            assert not long, (argv, stream, long[:3])
        assert str(tmp_path) not in captured.err, argv  # paths shortened
        if argv[0] in ("summary", "check", "compare", "simulate"):
            assert "sub-agent(s) missing" in captured.err, argv


def test_a_legend_says_what_the_marks_mean(capsys, monkeypatch):
    # issue 33, item 10: the drift / miss cells' notation (✗, ◌, −335 tok) is explained
    out = _run(capsys, monkeypatch, 80, "summary", str(SAMPLES / "environment_details.jsonl"))
    (legend,) = [line for line in out if line.startswith("legend:")]
    assert legend.startswith("legend: ✗ drift: bytes this thread already sent were changed")
    assert "◌" not in legend  # only the marks the table uses
    out = _run(capsys, monkeypatch, 200, "summary", str(SAMPLES / "reported_usage.jsonl"))
    (legend,) = [line for line in out if line.startswith("legend:")]
    assert "◌ miss: the provider read less than the common prefix offered" in legend
    at = out.index(legend)  # under the table, after its last row
    assert out[at - 1].split()[0] == "14" and any("◌ miss:" in line for line in out[:at])
    with pytest.raises(SystemExit):
        app.main(["summary", "--help"])
    help_text = capsys.readouterr().out
    assert "◌ miss: the provider read less" in " ".join(help_text.split())
