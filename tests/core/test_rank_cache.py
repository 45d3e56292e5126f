"""The binary copy of tiktoken's ranks (cacheviz.request._encodings): same ids, or tiktoken's loading.

Each test has a private cacheviz cache folder, so that corrupting or locking it affects
nothing else. A test that needs a good copy to start from gets a file copy of the one
built once per session (``tokenizer_copies``, tests/conftest.py); a test of the build
itself starts from an empty folder. tiktoken's cache folder is only read (checked after
each test), but by the test that touches its files, which runs on a private copy of it.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import random
import shutil
from pathlib import Path

import pytest

from cacheviz.request import _encodings

TEXTS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog. It's 12,345.678 o'clock; we'll see!",
    "def f(x):\n    return {'a': [1, 2, 3]}  # comment\n\n\n\tindented\r\n",
    "日本語のテキスト、中文文本, 한국어 텍스트, עברית, العربية, Ελληνικά",
    "emoji 👩‍👩‍👧‍👦 🎉🎉 flags 🇫🇷🇯🇵 and combining e\u0301 a\u0308",
    "   leading and trailing spaces   \n\n\n   ",
    "1234567890123456789 0.000001 -42 3e10 ١٢٣",
    "<|endoftext|> is text here, not a special token <|endofprompt|>",
    "a lone surrogate \ud800 in the middle",
    "ALLCAPS CamelCase snake_case kebab-case SHOUTING'S DON'T",
    "",
]


def _random_text(seed: int, length: int = 4000) -> str:
    rng = random.Random(seed)
    alphabet = (
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        " \n\t.,;:'\"!?()[]{}<>/\\|-_=+*&^%$#@~`"
        "éüßøñçåæœ日本中文한국어🙂👍\u0301\u200b\u00a0"
    )
    return "".join(rng.choice(alphabet) for _ in range(length))


def _reference(name: str):
    import tiktoken

    return tiktoken.get_encoding(name)  # held by tiktoken: loaded once per session


@functools.cache
def _expected(name: str, text: str) -> list[int]:
    """tiktoken's own ids of ``text`` (computed once per session)."""
    return _reference(name).encode_ordinary(text)


@pytest.fixture(autouse=True)
def _no_table_held(monkeypatch):
    """Each test reads the copy as a new process would."""
    monkeypatch.setattr(_encodings, "_TABLES", {})


def _files(folder: Path) -> list[tuple[str, int, int]]:
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir())


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """tiktoken's cache folder (read only) and a private, empty cacheviz cache folder."""
    source = os.environ.get("TIKTOKEN_CACHE_DIR")
    if not source or not Path(source).is_dir():
        pytest.skip("TIKTOKEN_CACHE_DIR with tiktoken's files is not set")
    tiktoken_dir = Path(source)
    cache = tmp_path / "cache"
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(cache))
    before = _files(tiktoken_dir)
    yield tiktoken_dir, cache
    assert _files(tiktoken_dir) == before, "tiktoken's shared files were changed"


@pytest.fixture
def private_tiktoken(folders, tmp_path, monkeypatch) -> Path:
    """A private copy of tiktoken's cache folder, for a test that touches its files."""
    tiktoken_dir = tmp_path / "tiktoken"
    shutil.copytree(folders[0], tiktoken_dir)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_dir))
    return tiktoken_dir


@pytest.fixture
def copied(folders, tokenizer_copies):
    """Put a good copy of an encoding in the private cache folder; return its path.

    A file copy of the one built once per session, checked to be taken as this
    tiktoken's copy (its key): what then makes tiktoken's loading run in a test is what
    the test did to it, not a stale copy.
    """

    def copy(name: str) -> Path:
        tokenizer_copies.seed(folders[1], [name])
        path = _encodings.cache_file(name)
        assert path.is_file() and _encodings._read(name) is not None
        return path

    return copy


_CONSTRUCTED: dict[str, dict] = {}  # tiktoken's constructor runs once per name and session


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The encodings built by tiktoken's constructor (not from the copy), in order."""
    calls: list[str] = []
    original = _encodings._constructor

    def counting(name: str):
        constructor = original(name)
        if constructor is None:
            return None
        calls.append(name)

        def construct():
            if name not in _CONSTRUCTED:
                _CONSTRUCTED[name] = constructor()
            return dict(_CONSTRUCTED[name])

        construct.__module__ = constructor.__module__
        return construct

    monkeypatch.setattr(_encodings, "_constructor", counting)
    return calls


@pytest.fixture
def reads(monkeypatch) -> list[tuple[bytes | None, bool]]:
    """Each read of a copy: the file's bytes then, and whether it was taken as a copy."""
    seen: list[tuple[bytes | None, bool]] = []
    original = _encodings._read

    def reading(name: str):
        try:
            data = _encodings.cache_file(name).read_bytes()
        except OSError:
            data = None
        taken = False
        try:
            table = original(name)
            taken = table is not None
            return table
        finally:
            seen.append((data, taken))

    monkeypatch.setattr(_encodings, "_read", reading)
    return seen


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_copy_gives_tiktokens_ids(copied, built, tokenizer_copies, name):
    copied(name)  # the copy written when the table was built (once per session)
    table = tokenizer_copies.tables[name]
    assert not table.sections  # built by tiktoken's constructor, not read from a copy
    _encodings._TABLES[name] = table  # as in the process that built it
    first = _encodings.load(name)  # from the table built
    _encodings._TABLES.clear()  # as a new process starts
    second = _encodings.load(name)  # from the copy
    assert built == []
    reference = _reference(name)
    texts = [*TEXTS, *(_random_text(seed) for seed in range(3))]
    for text in texts:
        expected = _expected(name, text)
        assert first.encode_ordinary(text) == expected, text
        assert second.encode_ordinary(text) == expected, text
        assert second.encode(text, disallowed_special=()) == reference.encode(
            text, disallowed_special=()
        )
    assert second.encode("<|endoftext|>", allowed_special="all") == reference.encode(
        "<|endoftext|>", allowed_special="all"
    )
    assert second.name == reference.name
    assert second.max_token_value == reference.max_token_value
    assert second.n_vocab == reference.n_vocab


def test_the_python_ranks_are_not_kept_and_read_again_to_pickle(copied, built):
    """tiktoken's Rust encoder holds the ranks; the Python dict (~25 MB) is dropped."""
    name = "cl100k_base"
    copied(name)
    encoding = _encodings.load(name)  # from the copy
    table = _encodings._TABLES[name]
    assert "ranks" not in table.loaded
    reference = _reference(name)
    revived = pickle.loads(pickle.dumps(encoding))  # the only reader of the ranks
    assert type(revived._mergeable_ranks) is dict
    assert revived._mergeable_ranks == reference._mergeable_ranks
    assert "ranks" not in table.loaded  # read for the pickle, not kept
    for text in TEXTS:
        assert revived.encode_ordinary(text) == _expected(name, text)
    assert len(encoding._mergeable_ranks) == len(reference._mergeable_ranks)
    assert built == []


# The tests of a rebuild use cl100k_base, half o200k_base's size: what they check is the
# same for every encoding (both are built and read in the tests above and below).


def test_a_changed_tiktoken_file_rebuilds_the_copy(private_tiktoken, built):
    name = "cl100k_base"
    _encodings.load(name)
    before = _encodings.cache_file(name).read_bytes()
    for path in private_tiktoken.iterdir():  # a re-download: same name, new mtime
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    _encodings._TABLES.clear()
    encoding = _encodings.load(name)
    assert built == [name, name]
    after = _encodings.cache_file(name).read_bytes()
    assert after != before  # the new key recorded
    assert encoding.encode_ordinary("hello world") == _expected(name, "hello world")
    _encodings._TABLES.clear()
    _encodings.load(name)
    assert len(built) == 2  # and used again


def test_another_tiktoken_version_rebuilds_the_copy(copied, built, monkeypatch):
    import tiktoken

    name = "cl100k_base"
    path = copied(name)
    before = path.read_bytes()
    _encodings.load(name)
    assert built == []  # the copy is this tiktoken's
    monkeypatch.setattr(tiktoken, "__version__", "0.0.0-other")
    _encodings._TABLES.clear()
    _encodings.load(name)
    assert built == [name]
    assert path.read_bytes() != before  # rewritten, with the other version in its key


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-5000] + bytes([data[-5000] ^ 1]) + data[-4999:],  # one bit
        lambda data: b"not a cache file at all",
        lambda data: data.replace(b'"longest":128', b'"longest":12'),  # a header lie
        lambda data: data.replace(b"\\\\s", b"\\\\S", 1),  # the pattern edited
    ],
    ids=["truncated", "bit-flip", "garbage", "header", "pattern"],
)
def test_a_corrupt_copy_falls_back_and_is_rewritten(copied, built, reads, damage):
    name = "cl100k_base"
    path = copied(name)  # a good copy, taken as one
    good = path.read_bytes()
    damaged = damage(good)
    assert damaged != good
    path.write_bytes(damaged)
    encoding = _encodings.load(name)
    small = _encodings.restricted(name, ["hello world"])
    assert [data for data, _ in reads] == [good, damaged]  # the damaged copy was read
    assert built == [name]  # then tiktoken's loading, not the copy
    assert encoding.encode_ordinary("hello world") == _expected(name, "hello world")
    assert small.encode_ordinary("hello world") == _expected(name, "hello world")
    assert path.read_bytes() == good  # rewritten whole


def _sections(data: bytes) -> dict[str, tuple[int, int]]:
    end = data.index(b"\n", len(_encodings._MAGIC))
    header = json.loads(data[len(_encodings._MAGIC) : end])
    offset, found = end + 1, {}
    for name, size, _ in header["sections"]:
        found[name] = (offset, size)
        offset += size
    return found


@pytest.mark.parametrize(
    ("section", "use"), [("ranks", "load"), ("pairs", "restricted"), ("groups", "restricted")]
)
def test_a_damaged_section_is_found_when_read(copied, built, reads, section, use):
    name = "cl100k_base"
    path = copied(name)
    good = path.read_bytes()
    offset, size = _sections(good)[section]
    middle = offset + size // 2
    damaged = good[:middle] + bytes([good[middle] ^ 0x10]) + good[middle + 1 :]
    path.write_bytes(damaged)
    text = "a damaged copy is never read as a good one"
    if use == "load":
        ids = _encodings.load(name).encode_ordinary(text)
    else:
        ids = _encodings.restricted(name, [text]).encode_ordinary(text)
    assert ids == _expected(name, text)
    assert reads == [(good, True), (damaged, True)]  # its header passed
    assert built == [name]  # the section read was found damaged, the copy rebuilt
    assert path.read_bytes() == good


def test_an_unwritable_cache_folder_loads_without_a_copy(folders, built, monkeypatch, tmp_path):
    name = "cl100k_base"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(blocker))  # mkdir under a file fails
    first = _encodings.load(name)
    _encodings._TABLES.clear()
    second = _encodings.load(name)
    assert built == [name, name]
    assert first.encode_ordinary("hello world") == second.encode_ordinary("hello world")
    assert second.encode_ordinary("hello world") == _expected(name, "hello world")
    assert not (blocker.parent / "a-file" / "tiktoken").exists()
    assert list(tmp_path.glob(".*.ranks.*")) == []  # no temporary file left behind


def test_an_unknown_encoding_raises_as_tiktoken_does(folders):
    with pytest.raises(ValueError, match="Unknown encoding"):
        _encodings.load("no_such_encoding")


def test_get_encoding_explains_an_unknown_encoding():
    from cacheviz.errors import EncodingUnavailableError
    from cacheviz.request._tokens import get_encoding

    with pytest.raises(EncodingUnavailableError, match="unknown tiktoken encoding"):
        get_encoding("no_such_encoding")


@pytest.mark.parametrize("table", ["copy", "built"])
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_an_encoding_of_the_ranks_in_the_texts_gives_the_same_ids(
    copied, built, tokenizer_copies, name, table
):
    copied(name)
    if table == "built":  # the table tiktoken's constructor gave, as the process that built it
        assert not tokenizer_copies.tables[name].sections
        _encodings._TABLES[name] = tokenizer_copies.tables[name]
    reference = _reference(name)
    texts = [*TEXTS, *(_random_text(seed, 1500) for seed in range(4)), "user", "assistant"]
    small = _encodings.restricted(name, texts)
    assert len(small._mergeable_ranks) < len(reference._mergeable_ranks) // 10
    for text in texts:
        assert small.encode_ordinary(text) == _expected(name, text), text
    words = _encodings.restricted(name, ["hello world"])
    assert words.encode_ordinary("hello world") == _expected(name, "hello world")
    assert built == []  # from that table, not tiktoken's loading


def test_realdata_texts_give_the_same_ids(copied, built, realdata):
    import cacheviz
    from cacheviz.request._blocks import render_text

    copied("o200k_base")
    reference = _reference("o200k_base")
    checked = 0
    for path in sorted(realdata.rglob("*.json*"))[:12]:
        try:
            session = cacheviz.load(path)
        except Exception:
            continue
        texts = [render_text(content)[1] for content in session.contents.values()]
        texts = [t for t in texts if len(t) < 20_000][:60]
        small = _encodings.restricted("o200k_base", texts)
        for text in texts:
            assert small.encode_ordinary(text) == reference.encode_ordinary(text), path
        checked += len(texts)
    assert checked > 100
    assert built == []  # from the copy


def test_short_texts_use_the_small_encoding_until_the_limit(copied, monkeypatch):
    from cacheviz.request import _tokens as tokens

    copied("o200k_base")
    tokens.get_encoding.cache_clear()  # as a new process starts: nothing loaded yet
    monkeypatch.setattr(tokens, "_restricted_chars", {})
    monkeypatch.setattr(tokens, "_loaded", set())
    monkeypatch.setattr(tokens, "_RESTRICTED_CHARS", 100)
    try:
        first = tokens.encoding_for_texts("o200k_base", ["x" * 60])
        assert len(first._mergeable_ranks) < 1000
        whole = tokens.encoding_for_texts("o200k_base", ["y" * 60])  # 120 characters in all
        assert whole is tokens.get_encoding("o200k_base")
        monkeypatch.setattr(tokens, "_restricted_chars", {})
        assert tokens.encoding_for_texts("o200k_base", ["z"]) is whole  # loaded: used now on
    finally:
        tokens.get_encoding.cache_clear()
