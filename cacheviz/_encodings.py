"""tiktoken encodings built from a binary copy of their rank tables.

tiktoken reads an encoding's ranks from a text file of base64 lines (200,000 for
``o200k_base``) and decodes them one by one in Python, 0.2-0.45 s per process. The
decoded table is kept here, in the user cache folder (``$CACHEVIZ_CACHE_DIR/tiktoken``),
as marshal data read in ~0.05 s, with the other arguments tiktoken's own registry
constructor gives (``pat_str``, ``special_tokens``, ...): nothing of an encoding is
spelled in cacheviz. The encoding is then built by ``tiktoken.Encoding(**arguments)``,
as ``tiktoken.get_encoding`` builds it.

A copy is used only when it was made by the same tiktoken version, from the same
constructor module and from the same files in tiktoken's cache folder (names, sizes and
modification times), and when its bytes match the digest in its header. Anything else
(no copy, a stale or corrupt one, an unwritable cache folder) falls back to tiktoken's
own loading, and the copy is rewritten when it can be.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from cacheviz import _usercache

FORMAT = 1  # bump when the file layout or what the header records changes
_MAGIC = b"cacheviz-tiktoken-ranks\n"


def cache_file(name: str) -> Path:
    """Where the copy of encoding ``name`` is kept."""
    return _usercache.folder("tiktoken") / f"{name}.ranks"


def _tiktoken_dir() -> str:
    """The folder tiktoken reads its downloaded files from (its own rule, ``tiktoken.load``)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return str(Path(tempfile.gettempdir()) / "data-gym-cache")


def _stat(path: str) -> list[Any]:
    try:
        info = Path(path).stat()
    except OSError:
        return [path, None, None]
    return [path, info.st_size, info.st_mtime_ns]


def _sources() -> list[Any]:
    """The files tiktoken may read ranks from: its cache folder's files, with size and mtime.

    An empty folder name means tiktoken downloads every time (its cache disabled); the
    file it downloads is checked against the hash pinned in its code, so the version
    alone names the content then.
    """
    folder = _tiktoken_dir()
    if not folder:
        return [""]
    try:
        names = sorted(entry.name for entry in os.scandir(folder) if entry.is_file())
    except OSError:
        names = []
    return [str(Path(folder).absolute()), [[n, *_stat(f"{folder}/{n}")[1:]] for n in names]]


def _key(name: str, module_file: str | None) -> str:
    import tiktoken

    return json.dumps(
        [FORMAT, name, tiktoken.__version__, sys.version, _stat(module_file or ""), _sources()],
        separators=(",", ":"),
    )


def _read(name: str) -> dict[str, Any] | None:
    """The constructor arguments from the copy, or ``None`` when it is missing or unfit."""
    try:
        data = cache_file(name).read_bytes()
    except OSError:
        return None
    if not data.startswith(_MAGIC):
        return None
    end = data.find(b"\n", len(_MAGIC))
    if end < 0:
        return None
    header = json.loads(data[len(_MAGIC) : end])
    body = memoryview(data)[end + 1 :]
    if not isinstance(header, dict) or header.get("key") != _key(name, header.get("module")):
        return None
    if hashlib.blake2b(body, digest_size=16).hexdigest() != header.get("digest"):
        return None
    ranks = marshal.loads(body)
    arguments = header.get("arguments")
    if not isinstance(ranks, dict) or not isinstance(arguments, dict):
        return None
    if len(ranks) != header.get("ranks"):
        return None
    return {**arguments, "mergeable_ranks": ranks}


def _write(name: str, arguments: dict[str, Any], module_file: str | None) -> bool:
    ranks = arguments["mergeable_ranks"]
    rest = {k: v for k, v in arguments.items() if k != "mergeable_ranks"}
    body = marshal.dumps(ranks)
    header = {
        "key": _key(name, module_file),
        "module": module_file,
        "digest": hashlib.blake2b(body, digest_size=16).hexdigest(),
        "ranks": len(ranks),
        "arguments": rest,
    }
    line = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if json.loads(line)["arguments"] != rest:  # an argument JSON cannot carry as it is
        return False
    return _usercache.write_atomic(cache_file(name), _MAGIC + line + b"\n" + body)


def _constructor(name: str) -> Any:
    """The registry constructor of tiktoken for ``name`` (``None``: tiktoken does not know it)."""
    from tiktoken import registry

    if name not in registry.list_encoding_names():
        return None
    constructors = registry.ENCODING_CONSTRUCTORS
    return None if constructors is None else constructors.get(name)


def load(name: str) -> Any:
    """The tiktoken encoding ``name``, from the copy of its ranks when there is a fit one.

    Raises what ``tiktoken.get_encoding`` raises when the encoding cannot be loaded
    (unknown name, no file and no network).
    """
    import tiktoken

    try:
        arguments = _read(name)
        if arguments is not None:
            return tiktoken.Encoding(**arguments)
    except Exception:  # a damaged or foreign copy: load as tiktoken does
        pass
    try:
        constructor = _constructor(name)
    except Exception:
        constructor = None
    if constructor is None:
        return tiktoken.get_encoding(name)
    arguments = constructor()  # tiktoken's own loading; its errors are the caller's
    encoding = tiktoken.Encoding(**arguments)
    try:
        module = sys.modules.get(getattr(constructor, "__module__", ""))
        _write(name, arguments, getattr(module, "__file__", None))
    except Exception:  # the copy is an optimisation only
        pass
    return encoding
