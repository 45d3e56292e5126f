"""``--help`` reads: one line per option, the long choice lists once, in ``cacheviz formats``."""

from __future__ import annotations

import pytest

from cacheviz.cli import _app as app
from cacheviz.formats import READERS
from cacheviz.prefix._thread import THREAD_MODES
from cacheviz.providers.anthropic import STRATEGIES

COMMANDS = ["summary", "simulate", "compare", "report", "check", "scan", "proxy"]


def _help(capsys, monkeypatch, *argv: str) -> list[str]:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exit_:
        app.main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("command", COMMANDS)
def test_one_line_per_option_and_no_format_list(capsys, monkeypatch, command):
    out = _help(capsys, monkeypatch, command)
    assert max(map(len, out)) <= 80
    options = out[next(i for i, line in enumerate(out) if line == "options:") + 1 :]
    assert options and all(line.startswith("  -") for line in options if line)
    text = "\n".join(out)
    assert "claude-trace" not in text and "whale-usage" not in text  # the 14 names: once


def test_report_has_no_unexplained_json(capsys, monkeypatch):
    assert "--json" not in "\n".join(_help(capsys, monkeypatch, "report"))
    summary = "\n".join(_help(capsys, monkeypatch, "summary"))
    assert "--json" in summary and "docs/format.md" in summary


def test_formats_lists_every_choice_once_with_what_it_means(capsys):
    assert app.main(["formats"]) == 0
    out = capsys.readouterr().out
    sections = out.split("\n\n")
    for names, section in ((READERS, 0), (THREAD_MODES, 1), (STRATEGIES, 3)):
        firsts = [line.split()[0] for line in sections[section].splitlines()[1:]]
        assert firsts == list(names)  # each once, with its meaning beside it
    assert set(app.THREAD_HELP) == set(THREAD_MODES)
    assert set(app.BREAKPOINT_STRATEGIES) == set(STRATEGIES)


def test_choices_are_still_checked(capsys):
    with pytest.raises(SystemExit):
        app.main(["summary", "x.jsonl", "--format", "nope"])
    assert "claude-code" in capsys.readouterr().err  # the error names the choices
