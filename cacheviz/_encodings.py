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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cacheviz import _usercache

FORMAT = 2  # bump when the file layout or what the header records changes
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


@dataclass(frozen=True)
class Table:
    """An encoding's constructor arguments and what :func:`restricted` needs of its ranks."""

    arguments: dict[str, Any]  # tiktoken.Encoding's keyword arguments
    pairs: bytes  # 65,536 flags: byte pair (a << 8 | b) occurs inside some token
    longest: int  # bytes in the longest token


_TABLES: dict[str, Table] = {}


def _pairs(ranks: dict[bytes, int]) -> bytes:
    seen = {token[i : i + 2] for token in ranks for i in range(len(token) - 1)}
    flags = bytearray(65536)
    for pair in seen:
        flags[pair[0] << 8 | pair[1]] = 1
    return bytes(flags)


def _read(name: str) -> Table | None:
    """The table from the copy, or ``None`` when it is missing or unfit."""
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
    ranks, pairs, longest = marshal.loads(body)
    arguments = header.get("arguments")
    if not isinstance(ranks, dict) or not isinstance(arguments, dict):
        return None
    if len(ranks) != header.get("ranks") or len(pairs) != 65536 or not isinstance(longest, int):
        return None
    return Table({**arguments, "mergeable_ranks": ranks}, pairs, longest)


def _write(name: str, table: Table, module_file: str | None) -> bool:
    ranks = table.arguments["mergeable_ranks"]
    rest = {k: v for k, v in table.arguments.items() if k != "mergeable_ranks"}
    body = marshal.dumps((ranks, table.pairs, table.longest))
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


def _table(name: str) -> Table | None:
    """The table of ``name``: from the copy when fit, else from tiktoken's constructor.

    Read once per process. ``None`` when tiktoken's registry has no constructor for it;
    the constructor's own errors (no file, no network) are the caller's.
    """
    if name in _TABLES:
        return _TABLES[name]
    try:
        table = _read(name)
    except Exception:  # a damaged or foreign copy: load as tiktoken does
        table = None
    if table is None:
        try:
            constructor = _constructor(name)
        except Exception:
            constructor = None
        if constructor is None:
            return None
        arguments = constructor()  # tiktoken's own loading
        ranks = arguments["mergeable_ranks"]
        table = Table(arguments, _pairs(ranks), max(map(len, ranks), default=0))
        try:
            module = sys.modules.get(getattr(constructor, "__module__", ""))
            _write(name, table, getattr(module, "__file__", None))
        except Exception:  # the copy is an optimisation only
            pass
    _TABLES[name] = table
    return table


def load(name: str) -> Any:
    """The tiktoken encoding ``name``, from the copy of its ranks when there is a fit one.

    Raises what ``tiktoken.get_encoding`` raises when the encoding cannot be loaded
    (unknown name, no file and no network).
    """
    import tiktoken

    table = _table(name)
    if table is None:
        return tiktoken.get_encoding(name)
    try:
        return tiktoken.Encoding(**table.arguments)
    except Exception:
        return tiktoken.get_encoding(name)


def _utf8(text: str) -> bytes:
    """The bytes tiktoken encodes ``text`` as (lone surrogates replaced, as it does)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def restricted(name: str, texts: Iterable[str]) -> Any:
    """An encoding of ``name`` holding only the ranks that occur in ``texts``.

    It gives these texts the ids ``load(name)`` gives them: byte-pair encoding looks up
    only byte strings of its input (pieces cut by the pattern, then pairs of adjacent
    parts of a piece), and every token that is a byte string of the texts is kept. Those
    are found without the pattern: a token never spans two bytes that occur next to each
    other inside no token, so the texts are cut there and the byte strings of each
    distinct chunk are looked up. Building it takes ~20 ms for ~10,000 characters,
    against ~0.15 s for tiktoken's encoder of the whole table; the cost grows with the
    text (~3 µs per character), so it is for short texts. ``None`` when there is no
    table (the caller loads the encoding).
    """
    import tiktoken

    try:
        table = _table(name)
    except Exception:
        return None
    if table is None or not {"pat_str", "special_tokens"} <= set(table.arguments):
        return None
    ranks, pairs, longest = table.arguments["mergeable_ranks"], table.pairs, table.longest
    chunks: set[bytes] = set()
    for text in texts:
        data = _utf8(text)
        start = 0
        for end in range(1, len(data)):
            if not pairs[data[end - 1] << 8 | data[end]]:
                chunks.add(data[start:end])
                start = end
        chunks.add(data[start:])
    used = {token: ranks[token] for token in (bytes([b]) for b in range(256)) if token in ranks}
    get = ranks.get
    for chunk in chunks:
        size = len(chunk)
        for start in range(size):
            for end in range(start + 2, min(size, start + longest) + 1):
                piece = chunk[start:end]
                rank = get(piece)
                if rank is not None:
                    used[piece] = rank
    return tiktoken.Encoding(
        name,
        pat_str=table.arguments["pat_str"],
        mergeable_ranks=used,
        special_tokens=table.arguments["special_tokens"],
    )
