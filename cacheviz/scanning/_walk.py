"""Find the sessions under the paths given to ``cacheviz scan``.

A *unit* is what one reader loads as one session: a file, plus the files that belong
to it (a Claude Code session's ``<session>/subagents/agent-*.jsonl``, or its
``agent-*.jsonl`` siblings carrying its ``sessionId``; a Gemini CLI chat's sub-agent
chats in ``chats/<sessionId>/``; a Cline task's
``ui_messages.json`` and ``task_metadata.json`` beside its history). Units are grouped
by file name only; the format of each is detected later, by content, in the worker.

The walk can record what it saw (:class:`Tree`: every folder it listed, each entry's
type, identity, size and mtime) so that a later run can tell, by listing the same
folders again, that nothing it depends on changed (:mod:`cacheviz.scanning._answers`). Nothing
here imports polars or the readers until a folder needs them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

_CLINE_HISTORY = "api_conversation_history.json"
_CLINE_UI = "ui_messages.json"
_CLINE_METADATA = "task_metadata.json"
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})
_SKIP_SUFFIXES = frozenset({".parquet", ".html", ".png", ".jpg", ".gif", ".pdf", ".zip", ".gz"})
# SQLite's companions of a database (claude-tap's traces.sqlite3): read with it
_SQLITE_WAL, _SQLITE_SHM, _WRITE_LOCK = "-wal", "-shm", ".write.lock"
# Claude Code's own state beside its transcripts: a session's tool outputs, a project's notes
_CLAUDE_TOOL_RESULTS, _CLAUDE_MEMORY = "tool-results", "memory"
_SESSION_ID = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}")
_CXV_SESSION = ".cxvsession"  # a cx-viewer (Log Store V2) session folder
# a Kimi CLI session folder: wire.jsonl is the session; the rest is read with it or not at all
_KIMI_WIRE = "wire.jsonl"
_OPENCLAW_INDEX = "sessions.json"
_DROID_SETTINGS = ".settings.json"
_KIMI_OTHERS = frozenset({"state.json", "meta.json", "prompt.txt", "output"})
# a Grok Build session folder: updates.jsonl is the session; the rest is its own state
_GROK_UPDATES = "updates.jsonl"
# a Codebuff chat folder: chat-messages.json is the chat; these are the agent's state
_CODEBUFF_CHAT = "chat-messages.json"
_CODEBUFF_STATE = frozenset({"run-state.json", "turn-checkpoint.json"})


@dataclass(frozen=True, slots=True)
class Unit:
    """One session to load: ``path`` is what the reader opens, ``members`` every file read."""

    path: Path
    members: tuple[Path, ...]
    project: str


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file the scan does not read, and why (``status``: ``skipped`` or ``duplicate``)."""

    path: Path
    status: str
    reason: str


def shown(text: str | Path) -> str:
    r"""``text`` as valid UTF-8: bytes of a non-UTF-8 file name are escaped (``\udcff``).

    File names are bytes; Python keeps undecodable ones as lone surrogates, which no
    table, terminal or JSON document takes.
    """
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True, slots=True)
class Location:
    """A default location of an agent's transcripts, and whether it exists here."""

    agent: str
    path: Path

    @property
    def found(self) -> bool:
        """Whether the location exists on this machine."""
        return self.path.exists()


def default_locations(home: Path | None = None) -> list[Location]:
    """Where the agents cacheviz reads keep their transcripts (as ccusage looks for them).

    ``CLAUDE_CONFIG_DIR`` (comma-separated), ``CODEX_HOME``, ``KILO_DATA_DIR``
    (comma-separated), ``KIMI_SHARE_DIR``, ``AMP_DATA_DIR``, ``PI_AGENT_DIR``,
    ``OPENCLAW_DIR``, ``HERMES_HOME``, ``DROID_SESSIONS_DIR``, ``GROK_HOME``,
    ``CODEBUFF_DATA_DIR`` and ``ZCODE_HOME`` (each comma-separated),
    ``GOOSE_PATH_ROOT`` and ``CRUSH_GLOBAL_DATA`` are honoured. Crush keeps a store in each
    project (``<project>/.crush/crush.db``): the projects it lists in its
    ``projects.json`` are looked in. Antigravity's conversations are listed so that a scan
    names them (they are encrypted: each is a failed file saying so).
    """
    home = Path.home() if home is None else home
    claude = [Path(p) for p in os.environ.get("CLAUDE_CONFIG_DIR", "").split(",") if p.strip()]
    claude = claude or [home / ".config" / "claude", home / ".claude"]
    codex = Path(os.environ.get("CODEX_HOME") or home / ".codex")
    cline = "saoudrizwan.claude-dev"
    out = [Location("claude-code", base / "projects") for base in claude]
    out += [
        Location("codex", codex / "sessions"),
        Location("gemini-cli", home / ".gemini" / "tmp"),
        Location("cline", home / ".config" / "Code" / "User" / "globalStorage" / cline / "tasks"),
        Location(
            "cline",
            home / "Library" / "Application Support" / "Code" / "User" / "globalStorage" / cline,
        ),
        Location("opencode", home / ".local" / "share" / "opencode" / "opencode.db"),
        Location("opencode", home / ".local" / "share" / "opencode" / "storage"),
        *(Location("kilo", folder / "kilo.db") for folder in _kilo_folders(home)),
        Location("copilot", home / ".copilot" / "session-state"),
        Location("whale", home / ".whale" / "usage.jsonl"),
        Location("whale", home / ".whale" / "usage"),
    ]
    out += [Location("qwen-code", home / ".qwen" / "projects")]
    amp_default = home / ".local" / "share" / "amp"
    pi_default = home / ".pi" / "agent" / "sessions"
    kimi = os.environ.get("KIMI_SHARE_DIR", "").strip()
    kimi_home = Path(kimi).expanduser() if kimi else home / ".kimi"
    out += [Location("kimi-cli", kimi_home / "sessions")]
    out += [Location("amp", folder / "threads") for folder in _listed("AMP_DATA_DIR", amp_default)]
    out += [Location("pi", folder) for folder in _listed("PI_AGENT_DIR", pi_default)]
    claws = [home / name for name in (".openclaw", ".clawdbot", ".moltbot", ".moldbot")]
    listed = _listed("OPENCLAW_DIR", claws[0])
    out += [
        Location("openclaw", folder / "agents")
        for folder in (listed if listed != claws[:1] else claws)
    ]
    hermes = _listed("HERMES_HOME", home / ".hermes")
    out += [Location("hermes", folder / "state.db") for folder in hermes]
    out += [Location("goose", db) for db in _goose_databases(home)]
    factory = home / ".factory" / "sessions"
    out += [Location("droid", folder) for folder in _listed("DROID_SESSIONS_DIR", factory)]
    grok = _listed("GROK_HOME", home / ".grok")
    out += [Location("grok", folder / "sessions") for folder in grok]
    channels = [home / ".config" / f"manicode{c}" for c in ("", "-dev", "-staging")]
    codebuff = _listed("CODEBUFF_DATA_DIR", channels[0])
    out += [
        Location("codebuff", folder if folder.name == "projects" else folder / "projects")
        for folder in (codebuff if codebuff != channels[:1] else channels)
    ]
    zcode = _listed("ZCODE_HOME", home / ".zcode")
    out += [Location("zcode", folder / "cli" / "db" / "db.sqlite") for folder in zcode]
    continue_dev = home / ".continue" / "dev_data"
    out += [Location("continue", continue_dev / "0.2.0" / "tokensGenerated.jsonl")]
    out += [Location("crush", db) for db in _crush_databases(home)]
    out += [Location("antigravity", home / ".gemini" / "antigravity" / "conversations")]
    out += [Location("claude-tap", _claude_tap_store(home))]
    ccv = os.environ.get("CCV_LOG_DIR", "").strip()
    out += [Location("cc-viewer", Path(ccv))] if ccv else []
    out += [Location("cc-viewer", base / "cc-viewer") for base in claude]
    cxv = os.environ.get("CXV_LOG_DIR", "").strip()
    out += [Location("cx-viewer", Path(cxv) if cxv else codex / "cx-viewer")]
    return out


def _listed(variable: str, default: Path) -> list[Path]:
    """The folders an environment variable lists (comma-separated), else ``default``."""
    listed = [Path(p.strip()).expanduser() for p in os.environ.get(variable, "").split(",")]
    return [p for p in listed if str(p) not in ("", ".")] or [default]


def _goose_databases(home: Path) -> list[Path]:
    """Goose's ``sessions.db``: under ``$GOOSE_PATH_ROOT/data``, else its default folders."""
    root = os.environ.get("GOOSE_PATH_ROOT", "").strip()
    if root:
        return [Path(root).expanduser() / "data" / "sessions" / "sessions.db"]
    folders = [
        home / ".local" / "share" / "goose",
        home / "Library" / "Application Support" / "goose",
        home / ".local" / "share" / "Block" / "goose",
    ]
    return [folder / "sessions" / "sessions.db" for folder in folders]


def _crush_databases(home: Path) -> list[Path]:
    """Each ``crush.db`` of the projects Crush lists in its ``projects.json``.

    The list is beside Crush's global data file: ``$CRUSH_GLOBAL_DATA``, else
    ``$XDG_DATA_HOME/crush``, else ``~/.local/share/crush`` (Crush's
    ``internal/projects``); each entry's ``data_dir`` (``<project>/.crush``) holds the
    project's ``crush.db``. A list that cannot be read gives none.
    """
    override = os.environ.get("CRUSH_GLOBAL_DATA", "").strip()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    if override:
        folder = Path(override).expanduser()
    else:
        folder = (Path(xdg).expanduser() if xdg else home / ".local" / "share") / "crush"
    try:
        listed = json.loads((folder / "projects.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    projects = listed.get("projects") if isinstance(listed, dict) else None
    out: list[Path] = []
    for project in projects if isinstance(projects, list) else []:
        data = project.get("data_dir") if isinstance(project, dict) else None
        if isinstance(data, str) and data.strip():
            db = Path(data).expanduser() / "crush.db"
            if db not in out:
                out.append(db)
    return out


def _kilo_folders(home: Path) -> list[Path]:
    """Kilo CLI's data folders: ``$KILO_DATA_DIR`` (comma-separated), else its default."""
    listed = [Path(p).expanduser() for p in os.environ.get("KILO_DATA_DIR", "").split(",")]
    return [p for p in listed if str(p) not in ("", ".")] or [home / ".local" / "share" / "kilo"]


def _claude_tap_store(home: Path) -> Path:
    """claude-tap's ``traces.sqlite3``: ``$CLOUDTAP_DB``, else under ``$XDG_DATA_HOME``."""
    override = os.environ.get("CLOUDTAP_DB", "").strip()
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    data = Path(xdg).expanduser() if xdg else home / ".local" / "share"
    return data / "claude-tap" / "traces.sqlite3"


def _project(path: Path, root: Path) -> str:
    """The project a session belongs to: the folder it sits in under the scanned root.

    Claude Code: ``projects/<project>/<session>.jsonl``; Gemini CLI:
    ``tmp/<project hash>/chats/<file>``; otherwise the file's folder name.
    """
    parent = path.parent
    while parent.name.isdigit() and parent != root:  # Codex: sessions/YYYY/MM/DD/
        parent = parent.parent
    if parent.name == "chats":
        parent = parent.parent
    if parent.name == "subagents":
        parent = parent.parent.parent
    if parent == root.parent or parent.name == "":
        return shown(root.name)
    return shown(parent.name)


def _cline_units(folder: Path, names: set[str], root: Path) -> tuple[list[Unit], set[str]]:
    """Cline tasks among ``names`` (their history and UI files side by side)."""
    units: list[Unit] = []
    used: set[str] = set()
    for name in sorted(names):
        if not name.endswith(_CLINE_HISTORY):
            continue
        prefix = name[: -len(_CLINE_HISTORY)]
        if f"{prefix}{_CLINE_UI}" not in names:
            continue
        members = [name, f"{prefix}{_CLINE_UI}"]
        if f"{prefix}{_CLINE_METADATA}" in names:
            members.append(f"{prefix}{_CLINE_METADATA}")
        used.update(members)
        task = folder / name
        project = folder.parent.name if prefix == "" else folder.name
        units.append(Unit(task, tuple(folder / m for m in members), shown(project or root.name)))
    return units, used


def _subagents(session: Path, beside: dict[str, list[Path]] | None) -> tuple[Path, ...]:
    """A Claude Code session's sub-agent logs: in ``<session>/subagents/`` or beside it.

    ``beside`` maps a session id to the ``agent-*.jsonl`` files of the session's folder
    that carry it (``None``: look them up).
    """
    folder = session.parent / session.stem / "subagents"
    inside = tuple(sorted(folder.glob("agent-*.jsonl"))) if folder.is_dir() else ()
    if session.name.startswith("agent-"):
        return inside
    if beside is None:
        from cacheviz.formats import claude_code

        return inside + tuple(claude_code.sibling_agents(session))
    return inside + tuple(beside.get(session.stem, ()))


def _agents_beside(folder: Path, names: set[str]) -> dict[str, list[Path]]:
    """Claude Code 2.0 sub-agent logs in ``folder`` whose session file is there too, by id."""
    out: dict[str, list[Path]] = {}
    for name in sorted(names):
        if name.startswith("agent-") and name.endswith(".jsonl"):
            from cacheviz.formats import claude_code

            session_id = claude_code.session_id_of(folder / name)
            if session_id and f"{session_id}.jsonl" in names:
                out.setdefault(session_id, []).append(folder / name)
    return out


def find_units(paths: list[Path]) -> list[Unit]:
    """Every unit under ``paths`` (files are units themselves), in a stable order.

    Hidden-tool folders (``.git``, ``node_modules``) and obvious non-transcripts
    (Parquet, HTML, images, archives) are not visited. See :func:`walk`.
    """
    return walk(paths)[0]


def walk(paths: list[Path], tree: Tree | None = None) -> tuple[list[Unit], list[Skipped]]:
    """The units under ``paths`` and the files passed over, with the reason.

    Symlinked folders are followed (a folder reached twice, a loop included, is walked
    once; a link up to the scanned folder or above, or into ``/proc``, ``/sys`` or
    ``/dev``, is listed as skipped, see :class:`_Inside`). A file is read once however many
    paths reach it (same device and inode); only regular files are read: a FIFO, a
    device or a broken link is listed as skipped.
    ``tree``, when given, records every root and folder the walk listed, as it listed
    them (:class:`Tree`).
    """
    from cacheviz.formats import opencode

    units: dict[Path, Unit] = {}
    skipped: dict[Path, Skipped] = {}
    seen: dict[tuple[int, int], Path] = {}
    folders: set[tuple[int, int]] = set()

    def admit(path: Path) -> bool:
        try:
            info = path.stat()
        except OSError as exc:
            reason = "a broken symlink" if path.is_symlink() else (exc.strerror or str(exc))
            skipped.setdefault(path, Skipped(path, "skipped", f"can't read it: {reason}"))
            return False
        if not stat.S_ISREG(info.st_mode):
            skipped.setdefault(path, Skipped(path, "skipped", "not a regular file; not read"))
            return False
        first = seen.setdefault((info.st_dev, info.st_ino), path)
        if first != path:
            reason = f"the same file as {shown(first)}"
            skipped.setdefault(path, Skipped(path, "duplicate", reason))
            return False
        return True

    for root in paths:
        root = root.expanduser()
        if tree is not None:
            tree.add_root(root)
        if not root.is_dir():
            if tree is not None:  # a file's unit depends on what is beside and above it
                tree.add_around(root)
            if (root.exists() or root.is_symlink()) and admit(root):
                _add_file(units, root, root.parent, set())
            continue
        inside = _Inside(root, skipped)
        for folder, dirs, files in _folders(str(root), tree):
            here = Path(folder)
            try:
                info = here.stat()
            except OSError:
                dirs[:] = []
                continue
            if (info.st_dev, info.st_ino) in folders:
                dirs[:] = []  # reached before (a loop, or a second path to it)
                continue
            folders.add((info.st_dev, info.st_ino))
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in _SKIP_DIRS
                and not _claude_code_state(here, d, files)
                and _inside(here, d, inside)
            )
            if here.name.endswith(_CXV_SESSION) and "manifest.json" in files:
                dirs[:] = []  # a cx-viewer session archive is read whole, as one unit
                if tree is not None:
                    tree.add_subtree(folder)
                units.setdefault(here, Unit(here, _archive_members(here), _project(here, root)))
                continue
            if opencode.is_storage(here):  # one session store: a unit, not its files
                members = tuple(sorted(p for p in here.rglob("*.json") if p.is_file()))
                units.setdefault(here, Unit(here, members, shown(root.name)))
                dirs[:] = []
                if tree is not None:
                    tree.add_subtree(folder)
                continue
            names = set(files)
            grok_session = _GROK_UPDATES in names and _grok_session(here)
            if grok_session:
                dirs[:] = []  # its sub-agents' pointers, terminal logs: not transcripts
            cline, used = _cline_units(here, names, root)
            for unit in cline:
                if admit(unit.path):
                    units.setdefault(unit.path, unit)
            beside = _agents_beside(here, names)
            used |= {agent.name for agents in beside.values() for agent in agents}
            for name in sorted(names - used):
                path = here / name
                if path.suffix.lower() in _SKIP_SUFFIXES or name.startswith("."):
                    continue
                if name.endswith(".meta.json") and "agent-" in name:
                    continue  # a Claude Code sub-agent's description, not a transcript
                if name.endswith((".db-wal", ".db-shm")):
                    continue  # a SQLite database's journal: read with the database
                if name.endswith(_DROID_SETTINGS) and _droid_session(name, names):
                    continue  # a Droid session's usage: read with its .jsonl
                if name == _OPENCLAW_INDEX and here.name == "sessions":
                    continue  # OpenClaw's index of its sessions, not a transcript
                if _KIMI_WIRE in names and _kimi_companion(name):
                    continue  # a Kimi CLI session's context and state: its wire log is read
                if grok_session and name != _GROK_UPDATES:
                    continue  # a Grok Build session's state and history: its updates are read
                if _CODEBUFF_CHAT in names and name in _CODEBUFF_STATE:
                    continue  # a Codebuff chat's run state: its chat-messages.json is read
                if admit(path):
                    _add_file(units, path, root, names, beside)
    for unit in units.values():
        skipped.pop(unit.path, None)
    if tree is not None:  # the folders of every file read, listed or not (their sizes, mtimes)
        tree.add_members(m for unit in units.values() for m in unit.members)
    ordered = sorted(units.values(), key=lambda u: str(u.path))
    return ordered, sorted(skipped.values(), key=lambda s: str(s.path))


def _claude_code_state(here: Path, name: str, files: list[str]) -> bool:
    """Whether folder ``name`` in ``here`` is Claude Code's own state, not transcripts.

    A session's ``<session>/tool-results/`` (tool outputs written aside, read by no reader)
    and a project's ``memory/`` (``~/.claude/projects/<project>/memory/*.md``, notes):
    listed as unknown files, they only added to the scan's "unknown files skipped".
    """
    if name == _CLAUDE_TOOL_RESULTS:  # in a session's folder, named by its id
        return (
            _SESSION_ID.fullmatch(here.name) is not None
            or here.parent.joinpath(f"{here.name}.jsonl").is_file()
        )
    return name == _CLAUDE_MEMORY and (
        here.parent.name == "projects" or any(f.endswith(".jsonl") for f in files)
    )


def _droid_session(name: str, names: set[str]) -> bool:
    """Whether ``name`` is the ``.settings.json`` of a Droid session file beside it."""
    return f"{name.removesuffix(_DROID_SETTINGS)}.jsonl" in names


# file systems of the kernel, not of files: endless files (/proc/kcore), links back up
_PSEUDO = tuple(Path(p) for p in ("/proc", "/sys", "/dev"))


class _Inside:
    """Which folders a walk from ``root`` enters: not the kernel's, not the ones above.

    A symlinked folder is followed (a project kept elsewhere), except a link up to
    ``root`` or a folder above it (``/`` included), which would walk the whole file
    system, and the kernel's file systems (``/proc``, ``/sys``, ``/dev``: ``/proc/self``
    links back into everything, ``/proc/kcore`` never ends), never entered from a folder
    by a link or not. Each is listed as skipped, with why (scan it by naming it).
    """

    def __init__(self, root: Path, skipped: dict[Path, Skipped]) -> None:
        try:
            self.root = root.resolve()
        except (OSError, RuntimeError):
            self.root = root.absolute()
        self.skipped = skipped

    def allows(self, path: Path) -> bool:
        link = path.is_symlink()
        if not link and not any(path == p for p in _PSEUDO):
            return True
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return False  # a loop or a dangling link: nothing to walk
        if any(target == p or p in target.parents for p in _PSEUDO) and not any(
            self.root == p or p in self.root.parents for p in _PSEUDO
        ):
            why = f"a folder of the kernel ({target}); not walked"
        elif link and (target == self.root or target in self.root.parents):
            why = f"a symbolic link up to {shown(target)}, above the scanned folder; not followed"
        else:
            return True
        self.skipped.setdefault(path, Skipped(path, "skipped", why))
        return False


def _inside(here: Path, name: str, inside: _Inside) -> bool:
    return inside.allows(here / name)


def _grok_session(folder: Path) -> bool:
    """Whether ``folder`` is a Grok Build session folder (its ``updates.jsonl`` is one)."""
    from cacheviz.formats import grok

    try:
        with (folder / _GROK_UPDATES).open("rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return False
    return grok.detect(folder / _GROK_UPDATES, head)


def _kimi_companion(name: str) -> bool:
    """A file of a Kimi CLI session folder other than its ``wire.jsonl`` (not a unit)."""
    if name in _KIMI_OTHERS:
        return True
    return name.startswith("context") and name.endswith(".jsonl")  # context_1, context_sub_1


def _kimi_subagent(path: Path) -> bool:
    """A Kimi CLI sub-agent's ``subagents/<id>/wire.jsonl``: its events are in the session's."""
    session = path.parent.parent.parent
    return (
        path.name == _KIMI_WIRE
        and path.parent.parent.name == "subagents"
        and (session / _KIMI_WIRE).is_file()
    )


def _archive_members(folder: Path) -> tuple[Path, ...]:
    """The files that say when a cx-viewer session archive changed (its objects follow)."""
    names = [folder / "manifest.json", folder / "timeline.jsonl"]
    return tuple(p for p in names if p.is_file()) + tuple(sorted(folder.glob("threads/*/*.jsonl")))


def _sqlite_companion(path: Path) -> bool:
    """A ``-wal`` / ``-shm`` / ``.write.lock`` file beside its database (not a unit)."""
    for suffix in (_SQLITE_WAL, _SQLITE_SHM, _WRITE_LOCK):
        if path.name.endswith(suffix) and path.with_name(path.name[: -len(suffix)]).is_file():
            return True
    return False


def _add_file(
    units: dict[Path, Unit],
    path: Path,
    root: Path,
    siblings: set[str],
    beside: dict[str, list[Path]] | None = None,
) -> None:
    if _sqlite_companion(path) or _kimi_subagent(path):
        return
    from cacheviz.formats import claude_code, gemini_json

    in_subagents = path.parent.name == "subagents" and path.name.startswith("agent-")
    if in_subagents and claude_code.session_of_agent(path) is not None:
        return  # read with its session
    if path.suffix == ".json" and gemini_json.session_of_subagent(path) is not None:
        return  # a Gemini CLI sub-agent's chat: read with its session
    if path.name.endswith(_CLINE_HISTORY) and not siblings:
        ui = path.with_name(path.name[: -len(_CLINE_HISTORY)] + _CLINE_UI)
        if ui.is_file():
            units.setdefault(path, Unit(path, (path, ui), _project(path, root)))
            return
    if path.suffix == ".jsonl":
        members = (path, *_subagents(path, beside))
        settings = path.with_name(path.name.removesuffix(".jsonl") + _DROID_SETTINGS)
        if settings.name in siblings:
            members = (*members, settings)  # a Droid session's usage
    elif path.suffix == ".db":
        wal = path.with_name(f"{path.name}-wal")
        members = (path, wal) if wal.is_file() else (path,)
    elif path.suffix == ".json" and path.parent.name == "chats":
        members = (path, *gemini_json.subagent_chats(path))
    else:
        wal = path.with_name(path.name + _SQLITE_WAL)  # claude-tap's traces.sqlite3
        members = (path, wal) if wal.is_file() else (path,)
    units.setdefault(path, Unit(path, members, _project(path, root)))


def _folders(top: str, tree: Tree | None) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top, followlinks=True)``, top-down, recording each listing in ``tree``.

    The caller prunes ``dirs`` in place, as with :func:`os.walk`. The entries recorded
    are the ones the walk went by (one listing for both), so a later
    :meth:`Tree.unchanged` compares what this walk saw. The walk keeps its own stack,
    so a chain of folders thousands deep is walked like any other (no recursion limit).
    """
    stack = [top]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as listing:
                entries = list(listing)
        except OSError as exc:
            if tree is not None:
                tree.add_folder(here, None, exc)
            continue
        if tree is not None:
            tree.add_folder(here, entries)
        dirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
        yield here, dirs, files
        stack += [os.path.join(here, name) for name in reversed(dirs)]  # noqa: PTH118


def _entry(entry: os.DirEntry[str]) -> list[object]:
    """An entry as a listing records it: name, is a link, and what ``stat`` follows to."""
    try:
        is_link = entry.is_symlink()
        info = entry.stat()
    except OSError as exc:
        return [entry.name, None, exc.errno]
    return [
        entry.name,
        is_link,
        [info.st_mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns],
    ]


def _listing(
    folder: str, entries: list[os.DirEntry[str]] | None, error: OSError | None
) -> list[object]:
    if entries is None:
        return [folder, None, None if error is None else error.errno]
    rows = sorted((_entry(e) for e in entries), key=lambda row: str(row[0]))
    return [folder, rows, None]


def _stat_of(path: str) -> list[object]:
    link = Path(path).is_symlink()
    try:
        info = Path(path).stat()
    except OSError as exc:
        return [link, exc.errno]
    return [link, [info.st_mode, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]]


@dataclass
class Tree:
    """What a walk saw: its roots and every folder it listed, entry by entry.

    Each entry is recorded with whether it is a symlink and the mode, device, inode,
    size and mtime (ns) of what it leads to. The walk depends on nothing else (file
    contents are taken as unchanged while those are, as the scan cache does), so when
    listing the same folders again gives the same records, walking again would give
    the same units, and their files the same rows. Folders read whole (an OpenCode
    store, a cx-viewer archive) are recorded with all their sub-folders.
    """

    roots: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    subtrees: list[str] = field(default_factory=list)
    _records: dict[str, list[list[object]]] = field(
        default_factory=lambda: {"roots": [], "folders": [], "subtrees": []}
    )

    def add_root(self, root: Path) -> None:
        """Record a root as given (a folder or a file), and what it is now."""
        self.roots.append(str(root))
        self._records["roots"].append([str(root), _stat_of(str(root))])

    def add_folder(
        self, folder: str, entries: list[os.DirEntry[str]] | None, error: OSError | None = None
    ) -> None:
        """Record one listing the walk made (``None`` and the error when it failed)."""
        self.folders.append(folder)
        self._records["folders"].append(_listing(folder, entries, error))

    def add_subtree(self, folder: str) -> None:
        """Record every folder under ``folder`` (read whole by its reader)."""
        self.subtrees.append(folder)
        self._records["subtrees"].extend(_subtree(folder))

    def add_around(self, file: Path) -> None:
        """Record what a file given as a root is read with.

        The folders beside and above it (sibling sub-agent logs, a Cline task's other
        files, the session of a sub-agent log) and, whole, the ``<name>/`` folder beside
        it (its sub-agents).
        """
        for folder in (file.parent, file.parent.parent):
            self.add_folder_now(str(folder))
        self.add_subtree(str(file.parent / file.stem))

    def add_members(self, members: Iterable[Path]) -> None:
        """Record the folders of ``members`` not listed yet (their files' sizes, mtimes)."""
        listed = set(self.folders)
        for member in members:
            folder = str(member.parent)
            if folder not in listed:
                listed.add(folder)
                self.add_folder_now(folder)

    def add_folder_now(self, folder: str) -> None:
        """List ``folder`` now and record it."""
        try:
            with os.scandir(folder) as listing:
                self.add_folder(folder, list(listing))
        except OSError as exc:
            self.add_folder(folder, None, exc)

    def digest(self) -> str:
        """BLAKE2b of everything recorded (equal digests: the same tree, as walked)."""
        return _digest(self._records)


def relist(roots: list[str], folders: list[str], subtrees: list[str]) -> Tree:
    """List ``roots``, ``folders`` and ``subtrees`` now, as a walk records them."""
    tree = Tree()
    for root in roots:
        tree.add_root(Path(root))
    for folder in folders:
        tree.add_folder_now(folder)
    for folder in subtrees:
        tree.add_subtree(folder)
    return tree


def _subtree(top: str) -> list[list[object]]:
    """Listings of ``top`` and every folder under it (symlinks followed, each once)."""
    out: list[list[object]] = []
    seen: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            info = Path(folder).stat()
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            out.append(_listing(folder, None, exc))
            continue
        out.append(_listing(folder, entries, None))
        for entry in sorted(entries, key=lambda e: e.name, reverse=True):
            try:
                if entry.is_dir():
                    stack.append(entry.path)
            except OSError:
                continue
    return out


def _digest(records: dict[str, list[list[object]]]) -> str:
    text = json.dumps(records, separators=(",", ":"))  # ASCII: escaped non-UTF-8 names too
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
