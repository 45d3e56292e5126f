"""docs/check.md's example output is what ``cacheviz check`` prints (issue 33, item 11)."""

from __future__ import annotations

import re
from pathlib import Path

from cacheviz.cli import _app as app

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_example_is_a_real_run(capsys, monkeypatch):
    text = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    block = re.search(r"```\n\$ cacheviz check (\S+)\n(.*?)\n\$ echo \$\?\n(\d+)\n```", text, re.S)
    assert block, "docs/check.md has no example run"
    path, shown, status = block[1], block[2], int(block[3])
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe: every line whole
    assert app.main(["check", path]) == status
    assert capsys.readouterr().out.rstrip("\n") == shown
