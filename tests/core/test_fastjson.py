"""The C JSON path gives the standard library's values and bytes (cacheviz._util.fastjson)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheviz._util import fastjson

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF))
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


def _std(value: object) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_compact_bytes_are_the_standard_librarys(value: object) -> None:
    assert fastjson.compact_bytes(value) == _std(value)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_loads_gives_the_standard_librarys_value(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    got, want = fastjson.loads(text), json.loads(text)
    assert json.dumps(got) == json.dumps(want)  # NaN != NaN: compared by their JSON
    raw = text.encode("utf-8", "surrogatepass")
    assert json.dumps(fastjson.loads(raw)) == json.dumps(want)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"x": 1e-05}, "a float orjson writes as 0.00001"),
        ({"x": 1e16}, "a float orjson writes as 1e16"),
        ({"x": math.nan}, "NaN, which orjson writes as null"),
        ({"x": "\ud800"}, "a lone surrogate orjson refuses"),
        ({"x": 2**64}, "an integer past 64 bits"),
        ({1: "x"}, "a key that is not a string"),
    ],
)
def test_each_difference_takes_the_standard_path(value: object, why: str) -> None:
    assert fastjson.compact_bytes(value) == _std(value), why


def test_an_invalid_line_fails_with_the_standard_librarys_error() -> None:
    with pytest.raises(json.JSONDecodeError) as fast:
        fastjson.loads('{"a": }')
    with pytest.raises(json.JSONDecodeError) as std:
        json.loads('{"a": }')
    assert str(fast.value) == str(std.value)


def _outcome(parse: object, arg: object) -> tuple[str, str]:
    """What a parse gives: its value's JSON, or its error's type and message."""
    try:
        return ("value", json.dumps(parse(arg)))  # type: ignore[operator]
    except (ValueError, RecursionError) as exc:
        return (type(exc).__name__, str(exc))


def _as_line_filter_then_loads(line: bytes) -> tuple[str, str]:
    """The old path: the line decoded (strict UTF-8), then :func:`fastjson.loads`."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (type(exc).__name__, str(exc))
    return _outcome(fastjson.loads, text)


_LINES = (
    st.binary(max_size=40)
    | st.builds(
        lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass"), _VALUES
    )
    | st.builds(
        lambda v, cut, junk: (
            json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")[:cut] + junk
        ),
        _VALUES,
        st.integers(0, 60),
        st.binary(max_size=4),
    )
)


@settings(max_examples=600, deadline=None)
@given(_LINES)
def test_loads_utf8_is_decode_then_loads(line: bytes) -> None:
    """Bytes parsed straight: the value, or the very error, of decoding and then parsing."""
    assert _outcome(fastjson.loads_utf8, line) == _as_line_filter_then_loads(line)


@pytest.mark.parametrize(
    "line",
    [
        b'"\xed\xa0\x80"',  # a surrogate encoded in UTF-8 (CESU-8)
        b'"\xc0\xaf"',  # an overlong encoding
        b'"\xf4\x90\x80\x80"',  # past U+10FFFF
        b'{"a":"\xff"}',
        b'{"a": 12345678901234567890, "b": "\xe9"}',  # the 19-digit path, then not UTF-8
        b"\xef\xbb\xbf{}",  # a byte order mark: orjson refuses it, the standard library too
    ],
)
def test_loads_utf8_refuses_what_the_decode_refuses(line: bytes) -> None:
    assert _outcome(fastjson.loads_utf8, line) == _as_line_filter_then_loads(line)
