"""tiktoken encodings built from a binary copy of their rank tables.

tiktoken reads an encoding's ranks from a text file of base64 lines (200,000 for
``o200k_base``) and decodes them one by one in Python, 0.2-0.45 s per process. The
decoded table is kept here, in the user cache folder (``$CACHEVIZ_CACHE_DIR/tiktoken``),
as marshal data read in ~0.05 s, with the other arguments tiktoken's own registry
constructor gives (``pat_str``, ``special_tokens``, ...): nothing of an encoding is
spelled in cacheviz. The encoding is then built by ``tiktoken.Encoding(**arguments)``,
as ``tiktoken.get_encoding`` builds it.

The copy holds three sections, each with its digest and read only when used: the ranks,
the byte pairs that occur inside tokens, and the ranks again grouped by their first two
bytes (:func:`restricted` reads the groups its texts need, not the whole table).

A copy is used only when it was made by the same tiktoken version, from the same
constructor module and from the same files in tiktoken's cache folder (names, sizes and
modification times), and when the section read matches its digest. Anything else (no
copy, a stale or corrupt one, an unwritable cache folder) falls back to tiktoken's own
loading, and the copy is rewritten when it can be.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cacheviz._util import usercache as _usercache

if TYPE_CHECKING:
    from tiktoken import Encoding

FORMAT = 3  # bump when the file layout or what the header records changes
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


class DamagedCopyError(Exception):
    """A section of the copy does not match its digest."""


def _digest(data: bytes | memoryview) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


@dataclass
class Table:
    """An encoding's constructor arguments and its ranks, read from the copy as needed."""

    arguments: dict[str, Any]  # tiktoken.Encoding's keyword arguments but the ranks
    longest: int  # bytes in the longest token
    sections: dict[str, memoryview] = field(default_factory=dict)  # raw, checked when read
    digests: dict[str, str] = field(default_factory=dict)
    loaded: dict[str, Any] = field(default_factory=dict)
    groups: dict[bytes, dict[bytes, int]] = field(default_factory=dict)

    def _section(self, name: str) -> Any:
        if name not in self.loaded:
            data = self.sections[name]
            if _digest(data) != self.digests.get(name):
                raise DamagedCopyError(name)
            self.loaded[name] = bytes(data) if name == "pairs" else marshal.loads(data)
        return self.loaded[name]

    def ranks(self) -> dict[bytes, int]:
        """Every token's rank."""
        ranks: dict[bytes, int] = self._section("ranks")
        return ranks

    def pairs(self) -> bytes:
        """65,536 flags: byte pair ``a << 8 | b`` occurs inside some token."""
        pairs: bytes = self._section("pairs")
        return pairs

    def group(self, first: bytes) -> dict[bytes, int]:
        """The ranks of the tokens that start with ``first`` (two bytes; ``b""``: one byte)."""
        found = self.groups.get(first)
        if found is None:
            blob = self._section("groups").get(first)
            found = self.groups[first] = {} if blob is None else marshal.loads(blob)
        return found


_TABLES: dict[str, Table] = {}


def _from_ranks(arguments: dict[str, Any]) -> Table:
    """The table of the arguments of tiktoken's constructor (every section computed)."""
    ranks = arguments["mergeable_ranks"]
    rest = {k: v for k, v in arguments.items() if k != "mergeable_ranks"}
    seen = {token[i : i + 2] for token in ranks for i in range(len(token) - 1)}
    flags = bytearray(65536)
    for pair in seen:
        flags[pair[0] << 8 | pair[1]] = 1
    grouped: dict[bytes, dict[bytes, int]] = {}
    for token, rank in ranks.items():
        grouped.setdefault(token[:2] if len(token) > 1 else b"", {})[token] = rank
    table = Table(rest, max(map(len, ranks), default=0))
    table.loaded = {"ranks": ranks, "pairs": bytes(flags), "groups": {}}  # no blob: all parsed
    table.groups = grouped
    return table


def _read(name: str) -> Table | None:
    """The table from the copy, or ``None`` when it is missing or not this tiktoken's."""
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
    if not isinstance(header, dict) or header.get("key") != _key(name, header.get("module")):
        return None
    arguments, longest = header.get("arguments"), header.get("longest")
    if not isinstance(arguments, dict) or not isinstance(longest, int):
        return None
    if header.get("digest") != _digest(_canonical([arguments, longest])):
        return None
    table = Table(arguments, longest)
    view, offset = memoryview(data), end + 1
    for section, size, digest in header["sections"]:
        table.sections[section] = view[offset : offset + size]
        table.digests[section] = digest
        offset += size
    if offset != len(data) or set(table.sections) != {"ranks", "pairs", "groups"}:
        return None
    return table


def _write(name: str, table: Table, module_file: str | None) -> bool:
    groups = {first: marshal.dumps(ranks) for first, ranks in table.groups.items()}
    sections = [
        ("ranks", marshal.dumps(table.ranks())),
        ("pairs", table.pairs()),
        ("groups", marshal.dumps(groups)),
    ]
    header = {
        "key": _key(name, module_file),
        "module": module_file,
        "arguments": table.arguments,
        "longest": table.longest,
        "digest": _digest(_canonical([table.arguments, table.longest])),
        "sections": [[section, len(data), _digest(data)] for section, data in sections],
    }
    line = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if json.loads(line)["arguments"] != table.arguments:  # an argument JSON cannot carry
        return False
    parts = [_MAGIC, line, b"\n", *(data for _, data in sections)]
    return _usercache.write_atomic(cache_file(name), b"".join(parts))


def _constructor(name: str) -> Any:
    """The registry constructor of tiktoken for ``name`` (``None``: tiktoken does not know it)."""
    from tiktoken import registry

    if name not in registry.list_encoding_names():
        return None
    constructors = registry.ENCODING_CONSTRUCTORS
    return None if constructors is None else constructors.get(name)


def _table(name: str, *, fresh: bool = False) -> Table | None:
    """The table of ``name``: from the copy when fit, else from tiktoken's constructor.

    Read once per process (``fresh``: from the constructor, the copy found damaged).
    ``None`` when tiktoken's registry has no constructor for it; the constructor's own
    errors (no file, no network) are the caller's.
    """
    if name in _TABLES and not fresh:
        return _TABLES[name]
    table = None
    if not fresh:
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
        table = _from_ranks(constructor())  # tiktoken's own loading
        try:
            module = sys.modules.get(getattr(constructor, "__module__", ""))
            _write(name, table, getattr(module, "__file__", None))
        except Exception:  # the copy is an optimisation only
            pass
    _TABLES[name] = table
    return table


def _checked(name: str, use: Any) -> Any:
    """``use(table)``, read again from tiktoken when a section of the copy is damaged."""
    table = _table(name)
    if table is None:
        return None
    try:
        return use(table)
    except (DamagedCopyError, ValueError, EOFError, TypeError):
        table = _table(name, fresh=True)
        return None if table is None else use(table)


def load(name: str) -> Encoding:
    """The tiktoken encoding ``name``, from the copy of its ranks when there is a fit one.

    Raises what ``tiktoken.get_encoding`` raises when the encoding cannot be loaded
    (unknown name, no file and no network).
    """
    import tiktoken

    arguments = _checked(name, lambda table: {**table.arguments, "mergeable_ranks": table.ranks()})
    if arguments is None:
        return tiktoken.get_encoding(name)
    try:
        encoding = tiktoken.Encoding(**arguments)
    except Exception:
        return tiktoken.get_encoding(name)
    table = _TABLES.get(name)
    if table is not None and "ranks" in table.sections:
        # tiktoken's Rust encoder holds the ranks; its Python dict (~25 MB for
        # o200k_base) is read again only to pickle the encoding
        table.loaded.pop("ranks", None)
        encoding._mergeable_ranks = _RanksOnDemand(name)  # type: ignore[assignment]
    return encoding


class _RanksOnDemand(Mapping[bytes, int]):
    """An encoding's ranks, read again from the copy when asked (pickling asks: as a dict)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _ranks(self) -> dict[bytes, int]:
        ranks: dict[bytes, int] | None = _checked(self._name, lambda table: table.ranks())
        if ranks is None:
            msg = f"the ranks of tiktoken encoding {self._name!r} can no longer be read"
            raise LookupError(msg)
        table = _TABLES.get(self._name)
        if table is not None and "ranks" in table.sections:
            table.loaded.pop("ranks", None)  # not kept: read again when asked again
        return ranks

    def __getitem__(self, token: bytes) -> int:
        return self._ranks()[token]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._ranks())

    def __len__(self) -> int:
        return len(self._ranks())

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self._ranks(),))


def _utf8(text: str) -> bytes:
    """The bytes tiktoken encodes ``text`` as (lone surrogates replaced, as it does)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def _used_ranks(table: Table, texts: Iterable[str]) -> dict[bytes, int]:
    """Every token of the table that is a byte string of one of ``texts``, with its rank."""
    pairs, longest = table.pairs(), table.longest
    chunks: set[bytes] = set()
    for text in texts:
        data = _utf8(text)
        start = 0
        for end in range(1, len(data)):
            if not pairs[data[end - 1] << 8 | data[end]]:
                chunks.add(data[start:end])
                start = end
        chunks.add(data[start:])
    used = dict(table.group(b""))  # every single byte
    for chunk in chunks:
        size = len(chunk)
        for start in range(size - 1):
            get = table.group(chunk[start : start + 2]).get
            for end in range(start + 2, min(size, start + longest) + 1):
                piece = chunk[start:end]
                rank = get(piece)
                if rank is not None:
                    used[piece] = rank
    return used


def restricted(name: str, texts: Iterable[str]) -> Encoding | None:
    """An encoding of ``name`` holding only the ranks that occur in ``texts``.

    It gives these texts the ids ``load(name)`` gives them: byte-pair encoding looks up
    only byte strings of its input (pieces cut by the pattern, then pairs of adjacent
    parts of a piece), and every token that is a byte string of the texts is kept. Those
    are found without the pattern: a token never spans two bytes that occur next to each
    other inside no token, so the texts are cut there and the byte strings of each
    distinct chunk are looked up, in the groups of their first two bytes. Building it
    takes ~20 ms for ~10,000 characters, against ~0.2 s to read the whole table and build
    tiktoken's encoder of it; the cost grows with the text (~3 µs per character), so it
    is for short texts. ``None`` when there is no table (the caller loads the encoding).
    """
    import tiktoken

    texts = list(texts)
    try:
        table = _table(name)
        if table is None or not {"pat_str", "special_tokens"} <= set(table.arguments):
            return None
        used = _checked(name, lambda table: _used_ranks(table, texts))
    except Exception:
        return None
    if not used:
        return None
    return tiktoken.Encoding(
        name,
        pat_str=table.arguments["pat_str"],
        mergeable_ranks=used,
        special_tokens=table.arguments["special_tokens"],
    )
