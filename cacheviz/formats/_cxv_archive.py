"""cx-viewer's Log Store V2: a session archive folder, materialized into wire entries.

cx-viewer (npm ``cx-viewer``, read at 1.1.20) keeps each Codex session as
``~/.codex/cx-viewer/<project>/<YYYYMMDD>_<session>.cxvsession/``: ``manifest.json``
(``kind: "cx-viewer.session-archive"``), ``timeline.jsonl`` (one record per committed
entry revision, in order), ``threads/<t_…>/entries.jsonl`` (entry revisions: the parts
set or deleted, each a content object), ``threads/<t_…>/input.jsonl`` (the thread's input
list as retain / remove / append operations) and ``objects/aa/bb/<sha256>.json``. Records
are addressed by offset, length and SHA-256; objects by the SHA-256 of their text.

An entry is rebuilt as cx-viewer's materializer does: its parts after its latest
revision, with the thread's input list as it stood at that revision attached at the
binding's path (``root.body.input``). Every object is written with **sorted keys**, so
the request body's key order as sent is lost: these calls are ``reconstructed``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cacheviz._limits import Expansion
from cacheviz.request._jsonspan import json_type

ARCHIVE_SUFFIX = ".cxvsession"
SESSION_KIND = "cx-viewer.session-archive"
_PART_ORDER = (
    "root.meta",
    "root.headers",
    "root.body",
    "request.meta",
    "request.headers",
    "request.body",
    "response.meta",
    "response.headers",
    "response.body",
)
_INPUT_PATHS = {
    "root.input": (),
    "root.body.input": ("body",),
    "request.input": ("request",),
    "request.body.input": ("request", "body"),
}


def is_archive(path: Path) -> bool:
    """Whether ``path`` is a cx-viewer V2 session folder (its manifest says so)."""
    manifest = path / "manifest.json"
    if not path.is_dir() or not manifest.is_file():
        return False
    try:
        value = json.loads(manifest.read_bytes()[: 1 << 20])
    except (ValueError, RecursionError, OSError):
        return False
    return isinstance(value, dict) and value.get("kind") == SESSION_KIND


def archives_in(folder: Path) -> list[Path]:
    """The session archives of a project folder, by name (their start date first)."""
    return [p for p in sorted(folder.glob(f"*{ARCHIVE_SUFFIX}")) if is_archive(p)]


@dataclass(slots=True)
class _State:
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    input: tuple[str, list[dict[str, Any]]] | None = None  # (path, object refs)


class Archive:
    """One session archive, read one timeline record at a time (``apply``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entries: dict[str, _State] = {}  # by entryKey, in order of first revision
        self.first_line: dict[str, int] = {}
        self.threads: dict[str, tuple[str, list[dict[str, Any]]]] = {}
        self._objects: dict[str, tuple[Any, int]] = {}  # parsed, and its size in bytes
        self.budget = Expansion(folder)  # what the objects may expand to, in all

    def apply(self, record: Any, line: int) -> None:
        """Apply one timeline record.

        Raises
        ------
        ValueError
            When the record, or what it references, is missing, corrupt or out of place.
        """
        if not isinstance(record, dict) or not isinstance(record.get("entryRef"), dict):
            msg = "a timeline record without `entryRef`"
            raise ValueError(msg)
        ref = record["entryRef"]
        thread = _token(ref.get("thread"))
        revision = self._reference(thread, "entries.jsonl", ref)
        key = revision.get("entryKey")
        if not isinstance(key, str) or key != record.get("entryKey"):
            msg = "the entry revision's `entryKey` differs from the timeline record's"
            raise ValueError(msg)
        state = self.entries.get(key) or _State()
        parts = dict(state.parts)
        for part in revision.get("delete") or []:
            parts.pop(part, None)
        changes = revision.get("set") or {}
        if not isinstance(changes, dict):
            msg = f"`set` of an entry revision is {json_type(changes)}; expected an object"
            raise ValueError(msg)
        for part, object_ref in changes.items():
            if part not in _PART_ORDER or not isinstance(object_ref, dict):
                msg = f"entry part {part!r} is not one cx-viewer writes"
                raise ValueError(msg)
            parts[part] = object_ref
        binding = revision.get("inputBinding")
        current = state.input
        if isinstance(binding, dict):
            path = binding.get("path")
            if path not in _INPUT_PATHS:
                msg = f"input path {path!r} is not one cx-viewer writes"
                raise ValueError(msg)
            if isinstance(binding.get("ref"), dict):
                self.threads[thread] = self._input(thread, binding["ref"], path)
            current = self.threads.get(thread, (path, []))
        self.entries[key] = _State(parts, current)
        self.first_line.setdefault(key, line)

    def _input(self, thread: str, ref: dict[str, Any], path: str) -> tuple[str, list[Any]]:
        operation = self._reference(thread, "input.jsonl", ref)
        _, previous = self.threads.get(thread, (path, []))
        retain, remove, append = (operation.get(k) for k in ("retain", "remove", "append"))
        if (
            not isinstance(retain, int)
            or not isinstance(remove, int)
            or not isinstance(append, list)
            or not 0 <= retain <= len(previous)
            or retain + remove != len(previous)
        ):
            msg = "an input revision does not fit the thread's input so far"
            raise ValueError(msg)
        return path, [*previous[:retain], *append]

    def _reference(self, thread: str, name: str, ref: dict[str, Any]) -> dict[str, Any]:
        """The JSON line ``ref`` points at (offset, length, checksum) in a thread file."""
        offset, length, checksum = ref.get("offset"), ref.get("length"), ref.get("checksum")
        if not (isinstance(offset, int) and isinstance(length, int) and isinstance(checksum, str)):
            msg = f"a reference into {name} without offset, length and checksum"
            raise ValueError(msg)
        file = self.folder / "threads" / thread / name
        try:
            with file.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if isinstance(offset, bool) or not 0 <= offset <= offset + length <= size:
                    msg = (
                        f"a reference into threads/{thread[:10]}…/{name} at offset {offset} "
                        f"of length {length} is outside the file ({size:,} bytes); "
                        "the archive is corrupt"
                    )
                    raise ValueError(msg)
                handle.seek(offset)
                data = handle.read(length)
        except OSError:
            msg = f"threads/{thread[:10]}…/{name} is missing; the archive is incomplete"
            raise ValueError(msg) from None
        if len(data) != length or f"sha256:{hashlib.sha256(data).hexdigest()}" != checksum:
            msg = f"a record of threads/{thread[:10]}…/{name} is cut or changed (checksum)"
            raise ValueError(msg)
        value = _loads(data, name)
        if not isinstance(value, dict):
            msg = f"a record of {name} is {json_type(value)}; expected an object"
            raise ValueError(msg)
        return value

    def _object(self, ref: Any) -> Any:
        digest = ref.get("hash") if isinstance(ref, dict) else None
        if not isinstance(digest, str) or len(digest) != 64 or not digest.isalnum():
            msg = "a content object reference without its sha256"
            raise ValueError(msg)
        if digest not in self._objects:
            file = self.folder / "objects" / digest[:2] / digest[2:4] / f"{digest}.json"
            try:
                raw = file.read_bytes().rstrip()
            except OSError:
                msg = f"object {digest[:12]}… is missing; the archive is incomplete"
                raise ValueError(msg) from None
            if hashlib.sha256(raw).hexdigest() != digest:
                msg = f"object {digest[:12]}… does not match its hash; the archive is corrupt"
                raise ValueError(msg)
            self._objects[digest] = (_loads(raw, f"object {digest[:12]}…"), len(raw))
        value, size = self._objects[digest]
        self.budget.spend(size)  # each use is a copy: a small archive can't expand forever
        return json.loads(json.dumps(value))  # a fresh copy per entry

    def entry(self, key: str) -> dict[str, Any]:
        """The wire entry of ``key`` after its latest revision (like cx-viewer's view).

        Raises
        ------
        ValueError
            When an object it needs is missing or corrupt.
        """
        state = self.entries[key]
        entry: dict[str, Any] = {}
        for part in _PART_ORDER:
            if part not in state.parts:
                continue
            container, suffix = part.split(".")
            value = self._object(state.parts[part])
            target = entry
            if container != "root":
                if not isinstance(entry.get(container), dict):
                    entry[container] = {}
                target = entry[container]
            if suffix == "meta" and isinstance(value, dict):
                target.update(value)
            else:
                target[suffix] = value
        if state.input is not None:
            path, refs = state.input
            items = [self._object(r) for r in refs]
            target = entry
            for name in _INPUT_PATHS[path]:
                if not isinstance(target.get(name), dict):
                    target[name] = {}
                target = target[name]
            target["input"] = items
        return entry


def _token(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("t_") or "/" in value or ".." in value:
        msg = "a reference to a thread that is not `t_<sha256>`"
        raise ValueError(msg)
    return value


def _loads(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        msg = f"{where} is not valid JSON"
        raise ValueError(msg) from None
