"""TokenCache / prefix_lists ``sizes="bytes"``: block sizes from byte lengths, no tokenizer.

What the option gives (pseudo-tokens of 4 bytes, arrays consistent with them, the
reported inputs kept) and where it does not apply (a call without usage: BPE as before).
Whether a figure moves with it is measured by ``bench/same_sizes.py``, not asserted here.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest

import cacheviz
from cacheviz._util.seq import common_prefix
from cacheviz.analysis import prefix_lists
from cacheviz.errors import CacheVizWarning
from cacheviz.model import OPAQUE, Content
from cacheviz.request._tokens import TokenCache

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def _load(name: str) -> cacheviz.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        return cacheviz.load(SAMPLES / name)


def test_a_block_is_one_pseudo_token_per_four_bytes() -> None:
    session = _load("reported_usage.jsonl")
    cache = TokenCache("o200k_base", session.contents, sizes="bytes")
    cache.ensure(session.contents)
    for digest, content in session.contents.items():
        expected = 0 if content.kind == OPAQUE else math.ceil(len(content.raw) / 4)
        assert cache.length(digest) == expected
        tokens = cache[digest]
        assert len(tokens) == expected
        assert min(tokens, default=0) >= 0  # never a marker's (negative) id


def test_the_first_difference_is_found_to_four_bytes() -> None:
    a = Content(b'{"role":"user","content":"abcdefgh"}', None, "message:messages")
    b = Content(b'{"role":"user","content":"abcdXfgh"}', None, "message:messages")
    cache = TokenCache("o200k_base", {"a": a, "b": b}, sizes="bytes")
    changed = next(i for i, (x, y) in enumerate(zip(a.raw, b.raw, strict=True)) if x != y)
    assert common_prefix(cache["a"], cache["b"]) == changed // 4
    chunk = cache["a"][0].to_bytes(4, "little")
    assert chunk == a.raw[:4]


def test_non_ascii_bytes_above_the_sign_bit_stay_distinct() -> None:
    text = "\u00e9t\u00e9 \u2014 \U0001f600"
    one = Content(text.encode(), None, "system")
    two = Content((text + "!").encode(), None, "system")
    cache = TokenCache("o200k_base", {"1": one, "2": two}, sizes="bytes")
    assert common_prefix(cache["1"], cache["2"]) == len(one.raw) // 4
    assert all(t >= 0 for t in cache["1"])


def test_pseudo_tokens_decode_to_their_bytes() -> None:
    content = Content(b'{"type":"text","text":"hello"}', None, "system")
    cache = TokenCache("o200k_base", {"h": content}, sizes="bytes")
    assert "".join(cache.decode(cache["h"])) == content.raw.decode()


def test_an_unknown_sizes_value_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^sizes='chars' is not one of tokens, bytes$"):
        TokenCache("o200k_base", {}, sizes="chars")


def test_bytes_keep_every_reported_input_and_size_the_local_axis_by_bytes() -> None:
    tokens = prefix_lists(_load("reported_usage.jsonl"))
    session = _load("reported_usage.jsonl")
    own = prefix_lists(session, sizes="bytes")
    assert {c.sizes for c in own.token_caches.values()} == {"bytes"}
    reported = own.call_cols["reported_input_tokens"]
    assert None not in reported
    assert own.call_cols["input_tokens"] == reported == tokens.call_cols["input_tokens"]
    for call, local in zip(session.calls, own.call_cols["local_tokens"], strict=True):
        sizes = [session.contents[h] for h in call.hashes]
        assert local == sum(math.ceil(len(c.raw) / 4) for c in sizes if c.kind != OPAQUE)
    assert own.call_cols["local_tokens"] != tokens.call_cols["local_tokens"]


def test_a_session_with_a_call_without_usage_is_tokenized() -> None:
    tokens = prefix_lists(_load("append_only.jsonl"))
    own = prefix_lists(_load("append_only.jsonl"), sizes="bytes")
    assert {c.sizes for c in own.token_caches.values()} == {"tokens"}
    assert own.call_cols == tokens.call_cols
    assert own.drift_cols == tokens.drift_cols
