"""The last answers of ``cacheviz scan``, kept to answer again while nothing changed.

A warm scan with nothing changed would walk the folders, find every unit in the cache,
read the cached tables and roll them up again: the same document as last time, after
importing polars (more than the whole scan of an unchanged tree costs). So the command
keeps its last document per question (the paths, ``--by``, ``--tz``, ``--since``,
``--until``, the price file) beside the cache, with what the walk saw
(:class:`~cacheviz.scanning._walk.Tree`): every folder it listed, each entry's type, device,
inode, size and mtime. The next run lists those folders again; when every record is
the same, the walk would find the same units with the same files, so the document is
the same, and it is printed as it was. Any difference (a file grown, touched, added,
removed, replaced; a folder created) and the scan runs as usual.

The tree kept is the one the walk saw before any file was read: a file that changed
while the scan ran lists differently next time. A kept answer is written through a
temporary file, with a BLAKE2b of its text checked on reading; a damaged or unreadable
one is ignored. This module imports
neither polars nor the readers.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import suppress
from pathlib import Path
from typing import Any

from cacheviz.scanning._cachedir import replace_file
from cacheviz.scanning._walk import Tree, relist

ANSWERS = "answers"
KEEP = 8  # answers kept per cache folder (the most recently written)


def key(question: dict[str, Any]) -> str:
    """The name of the kept answer to ``question`` (any JSON-able description)."""
    text = json.dumps({**question, "cwd": str(Path.cwd())}, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def load(folder: Path, name: str) -> dict[str, Any] | None:
    """The answer kept as ``name`` in the cache ``folder`` if its tree is unchanged, else None.

    Returns the payload stored with :func:`store` (its ``"answer"``).
    """
    try:
        text = (folder / ANSWERS / f"{name}.json").read_bytes()
        digest, _, body = text.partition(b"\n")
        if hashlib.blake2b(body, digest_size=16).hexdigest().encode() != digest:
            return None
        kept = json.loads(body)
        seen = relist(kept["roots"], kept["folders"], kept["subtrees"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if seen.digest() != kept["tree"]:
        return None
    answer = kept["answer"]
    return answer if isinstance(answer, dict) else None


def store(folder: Path, name: str, tree: Tree, answer: dict[str, Any]) -> None:
    """Keep ``answer`` as ``name``, valid while ``tree`` lists the same.

    ``tree`` is what the walk saw before any file was read, so a file that changed
    while the scan ran (its rows may be of either version) lists differently next
    time and is scanned again. ``answer`` is stored as JSON (dates become their
    ``str``); a write that fails is let go (the next run scans as usual).
    """
    entry = {
        "roots": tree.roots,
        "folders": tree.folders,
        "subtrees": tree.subtrees,
        "tree": tree.digest(),
        "answer": answer,
    }
    body = json.dumps(entry, default=str, separators=(",", ":")).encode()
    digest = hashlib.blake2b(body, digest_size=16).hexdigest().encode()
    answers = folder / ANSWERS
    with suppress(OSError):
        answers.mkdir(parents=True, exist_ok=True)
        replace_file(answers / f"{name}.json", digest + b"\n" + body)
        kept = sorted(answers.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[KEEP:]:
            old.unlink(missing_ok=True)
