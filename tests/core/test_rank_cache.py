"""The binary copy of tiktoken's ranks (cacheviz._encodings): same ids, or tiktoken's loading.

Each test runs against a private copy of tiktoken's cache folder and a private cacheviz
cache folder, so that touching, corrupting or locking them affects nothing else.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from cacheviz import _encodings

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


@pytest.fixture
def folders(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A private copy of tiktoken's cache folder and a private cacheviz cache folder."""
    source = os.environ.get("TIKTOKEN_CACHE_DIR")
    if not source or not Path(source).is_dir():
        pytest.skip("TIKTOKEN_CACHE_DIR with tiktoken's files is not set")
    tiktoken_dir = tmp_path / "tiktoken"
    shutil.copytree(source, tiktoken_dir)
    cache = tmp_path / "cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_dir))
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(cache))
    return tiktoken_dir, cache


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The encodings built by tiktoken's constructor (not from the copy), in order."""
    calls: list[str] = []
    original = _encodings._constructor

    def counting(name: str):
        calls.append(name)
        return original(name)

    monkeypatch.setattr(_encodings, "_constructor", counting)
    return calls


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_copy_gives_tiktokens_ids(folders, built, name):
    import tiktoken

    first = _encodings.load(name)  # built by tiktoken's constructor, copy written
    assert built == [name]
    assert _encodings.cache_file(name).is_file()
    second = _encodings.load(name)  # from the copy
    assert built == [name]
    reference = tiktoken.get_encoding(name)
    texts = [*TEXTS, *(_random_text(seed) for seed in range(3))]
    for text in texts:
        expected = reference.encode_ordinary(text)
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


def test_a_changed_tiktoken_file_rebuilds_the_copy(folders, built):
    tiktoken_dir, _ = folders
    _encodings.load("o200k_base")
    before = _encodings.cache_file("o200k_base").read_bytes()
    for path in tiktoken_dir.iterdir():  # a re-download: same name, new mtime
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    encoding = _encodings.load("o200k_base")
    assert built == ["o200k_base", "o200k_base"]
    after = _encodings.cache_file("o200k_base").read_bytes()
    assert after != before  # the new key recorded
    assert encoding.encode_ordinary("hello world") == [24912, 2375]
    _encodings.load("o200k_base")
    assert len(built) == 2  # and used again


def test_another_tiktoken_version_rebuilds_the_copy(folders, built, monkeypatch):
    import tiktoken

    _encodings.load("o200k_base")
    monkeypatch.setattr(tiktoken, "__version__", "0.0.0-other")
    _encodings.load("o200k_base")
    assert built == ["o200k_base", "o200k_base"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-100] + bytes(100),  # zeroed tail
        lambda data: data[:-5000] + bytes([data[-5000] ^ 1]) + data[-4999:],  # one bit
        lambda data: b"not a cache file at all",
        lambda data: data.replace(b'"ranks":199998', b'"ranks":12'),  # a header lie
        lambda data: b"",
    ],
    ids=["truncated", "zeroed", "bit-flip", "garbage", "header", "empty"],
)
def test_a_corrupt_copy_falls_back_and_is_rewritten(folders, built, damage):
    _encodings.load("o200k_base")
    path = _encodings.cache_file("o200k_base")
    good = path.read_bytes()
    path.write_bytes(damage(good))
    encoding = _encodings.load("o200k_base")
    assert built == ["o200k_base", "o200k_base"]  # tiktoken's loading, not the copy
    assert encoding.encode_ordinary("hello world") == [24912, 2375]
    assert path.read_bytes() == good  # rewritten whole


def test_an_unwritable_cache_folder_loads_without_a_copy(folders, built, monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(blocker))  # mkdir under a file fails
    first = _encodings.load("o200k_base")
    second = _encodings.load("o200k_base")
    assert built == ["o200k_base", "o200k_base"]
    assert first.encode_ordinary("hello world") == second.encode_ordinary("hello world")
    assert not (blocker.parent / "a-file" / "tiktoken").exists()
    assert list(tmp_path.glob(".*.ranks.*")) == []  # no temporary file left behind


def test_an_unknown_encoding_raises_as_tiktoken_does(folders):
    with pytest.raises(ValueError, match="Unknown encoding"):
        _encodings.load("no_such_encoding")


def test_get_encoding_explains_an_unknown_encoding():
    from cacheviz.errors import EncodingUnavailableError
    from cacheviz.tokens import get_encoding

    with pytest.raises(EncodingUnavailableError, match="unknown tiktoken encoding"):
        get_encoding("no_such_encoding")
