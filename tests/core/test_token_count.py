"""``token_count``: the number of ids ``encode_ordinary`` gives, counted from tiktoken's buffer.

A block's size is counted without building its list of ids (:func:`cacheviz.request.
_tokens.token_count`); the ids themselves still come from ``encode_ordinary`` where they
are compared or shown. The two must agree on every text, including text spelling a
special token (ordinary text in both) and lone surrogates (replaced in both).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheviz.request._tokens import encoding_for_texts, get_encoding, token_count

ENCODINGS = ["o200k_base", "cl100k_base"]


def _special_texts(name: str) -> list[str]:
    specials = sorted(get_encoding(name).special_tokens_set)
    joined = "".join(specials)
    return [
        *specials,
        joined,
        f"before {joined} after",
        " ".join(specials),
        "<|endoftext",  # cut short: not one
        "<|endoftext|><|endoftext|>x<|fim_prefix|>\n<|endofprompt|> ",
    ]


TEXTS = [
    "",
    "hello world",
    "a lone surrogate \ud800 in the middle, and \udfff at the end \ud83d",
    "\ud800",
    "emoji 👩‍👩‍👧‍👦 🎉 flags 🇫🇷 combining e\u0301 a\u0308 日本語 한국어",
    "   spaces   \n\n\n\t\r\n  ",
    "1234567890123456789 0.000001 -42 3e10",
    'Edit\n{"file_path":"/tmp/x.py","old_string":"a","new_string":"b"}',
]


@pytest.mark.parametrize("name", ENCODINGS)
def test_counts_equal_encode_ordinary(name: str) -> None:
    enc = get_encoding(name)
    texts = [*TEXTS, *_special_texts(name)]
    rng = random.Random(7)
    alphabet = "ab <|>endoftext\n\t日🙂\u0301\ud800"
    texts += ["".join(rng.choice(alphabet) for _ in range(300)) for _ in range(50)]
    for text in texts:
        assert token_count(enc, text) == len(enc.encode_ordinary(text)), repr(text)
    assert any(token_count(enc, t) > 1 for t in _special_texts(name))


def test_the_restricted_encoding_counts_the_same() -> None:
    texts = [*TEXTS, *_special_texts("o200k_base")]
    small = encoding_for_texts("o200k_base", texts)
    full = get_encoding("o200k_base")
    for text in texts:
        assert token_count(small, text) == len(full.encode_ordinary(text)), repr(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=200))
def test_any_text_counts_as_encode_ordinary(text: str) -> None:
    enc = get_encoding("o200k_base")
    assert token_count(enc, text) == len(enc.encode_ordinary(text))


def test_realdata_blocks_count_the_same(realdata) -> None:
    import warnings

    import cacheviz
    from cacheviz.errors import CacheVizWarning
    from cacheviz.model import OPAQUE
    from cacheviz.request._blocks import render_text

    enc = get_encoding("o200k_base")
    checked = 0
    for path in sorted(realdata.rglob("*.json*"))[:20]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheVizWarning)
                session = cacheviz.load(path)
        except Exception:  # not every file there reads: the others are checked
            continue
        for content in session.contents.values():
            if content.kind == OPAQUE:
                continue
            text = render_text(content)[1]
            assert token_count(enc, text) == len(enc.encode_ordinary(text)), path
            checked += 1
    assert checked > 200
