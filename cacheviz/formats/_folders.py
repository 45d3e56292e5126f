"""What a folder given as a transcript stands for (the same for ``load`` and the CLI).

A Claude Code session folder (``<project>/<session>/``, holding ``subagents/``) is its
``<session>.jsonl``; a Claude Code project folder is its newest session; a Cline task
folder holding only ``ui_messages.json`` is that file. Any other folder is read as a
folder (formats stored as folders: a whole Cline task, OpenCode storage, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from cacheviz.errors import CacheVizError
from cacheviz.formats._lines import short_name
from cacheviz.formats._registry import detect

_CLINE_UI = "ui_messages.json"
_CLINE_HISTORY = "api_conversation_history.json"


class Resolved(NamedTuple):
    """What a path stands for.

    The ``path`` to read, a ``note`` saying which, and whether one session was
    ``chosen`` among several (worth a warning).
    """

    path: Path
    note: str | None = None
    chosen: bool = False


def session_file(path: Path) -> Resolved:
    """The transcript ``path`` stands for, and a note saying which (None: unchanged)."""
    if not path.is_dir():
        return Resolved(path)
    beside = path.parent / f"{path.name}.jsonl"
    if (path / "subagents").is_dir() and beside.is_file():
        return Resolved(beside, f"reading {beside.name}, the session of this folder")
    ui = sorted(path.glob(f"*{_CLINE_UI}"))
    if len(ui) == 1 and not any(path.glob(f"*{_CLINE_HISTORY}")):
        return Resolved(ui[0])
    sessions = [
        p
        for p in path.glob("*.jsonl")
        if p.is_file() and p.stat().st_size and not p.name.startswith("agent-")
    ]
    if not sessions:
        return Resolved(path)
    newest = max(sessions, key=lambda p: (p.stat().st_mtime, p.name))
    try:
        if detect(newest) != "claude-code":
            return Resolved(path)
    except CacheVizError:
        return Resolved(path)
    if len(sessions) == 1:
        return Resolved(newest)
    note = (
        f"{len(sessions)} sessions here; reading the newest, {short_name(newest)} "
        "(pass a file for another)"
    )
    return Resolved(newest, note, chosen=True)
