"""JSON in C (orjson) where it gives exactly what the standard library gives.

The read path parses every line of a transcript and serializes every rebuilt message to
the compact JSON whose bytes are hashed and tokenized. Bytes are truth: a fast path is
taken only where its result is the standard library's, and anything else goes to
:mod:`json` as before (same value, same bytes, same error):

* :func:`loads`: orjson rejects what :func:`json.loads` accepts beyond strict JSON
  (``NaN``, ``Infinity``, lone surrogate escapes), and reads an integer past 64 bits as
  a float; such a text (any run of 19 digits) is parsed by :func:`json.loads` instead.
  Everything else orjson parses to the same value.
* :func:`compact_bytes`: orjson writes strings, integers, booleans and objects exactly as
  ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` does, but floats in
  another notation (``1e-5`` as ``0.00001``) and ``NaN`` as ``null``; its output is kept
  only when it holds no number with a fraction or exponent and no ``null`` (a text that
  merely looks like one, inside a string, just takes the slow path). Types JSON does not
  have raise in orjson too (no pass-through serialisers), then in :func:`json.dumps`.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

import orjson

# after a structural character of compact JSON: a float (fraction or exponent) or null;
# one pattern per character, each led by a literal that the regex engine scans for in a
# tight loop (a leading class, ``[:\[,]``, is tested byte by byte: ~3x the time)
_NOT_IDENTICAL = tuple(
    re.compile(lead + rb"(?:-?[0-9]+[.eE]|null)").search for lead in (rb":", rb",", rb"\[")
)
# a run of 19 digits (maybe an integer past 64 bits), found as 19 zeros once every digit
# is a zero (bytes.translate and find: C speed, unlike a regex of [0-9]{19})
_DIGITS = bytes.maketrans(b"0123456789", b"0000000000")
_LONG = b"0" * 19
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_OPTIONS |= orjson.OPT_PASSTHROUGH_SUBCLASS


def loads(text: str | bytes | bytearray | memoryview) -> Any:
    """:func:`json.loads`, parsed in C where the text is strict JSON.

    Examples
    --------
    >>> loads('{"a": [1, 2.5, null]}')
    {'a': [1, 2.5, None]}
    >>> loads('[NaN]')  # beyond strict JSON: the standard library's answer
    [nan]
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if raw.translate(_DIGITS).find(_LONG) < 0:
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(raw)
    if not isinstance(text, str):
        text = raw.decode("utf-8", "surrogatepass")
    return json.loads(text)


def loads_utf8(line: bytes) -> Any:
    """``json.loads(line.decode("utf-8"))``: :func:`loads` of a line's bytes.

    Parsed as :func:`loads` parses the text they decode to (the same bytes reach
    orjson), and decoded only when orjson does not take them: orjson accepts no bytes
    that are not UTF-8, so a line that is not raises :class:`UnicodeDecodeError` (a
    ``ValueError``) before any JSON error, as its decode would have.

    Examples
    --------
    >>> loads_utf8('{"a": [1, 2.5, "é"]}'.encode())
    {'a': [1, 2.5, 'é']}
    >>> loads_utf8(bytes([34, 255, 34]))
    Traceback (most recent call last):
    ...
    UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 1: invalid start byte
    """
    if line.translate(_DIGITS).find(_LONG) < 0:
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
    return json.loads(line.decode("utf-8"))


def same_json(first: Any, second: Any) -> bool:
    """Whether two parsed JSON values are the same JSON: equal, and of the same types.

    ``==`` alone takes ``1``, ``1.0`` and ``True`` for one another (and ignores the
    order of an object's members); their compact JSON tells them apart. A value orjson
    cannot write (a big integer, a lone surrogate) is never called the same.

    Examples
    --------
    >>> same_json({"n": 1, "m": [2]}, {"n": 1, "m": [2]})
    True
    >>> same_json({"n": 1}, {"n": 1.0}), same_json({"n": 1}, {"n": True})
    (False, False)
    """
    if first != second:
        return False
    try:
        return orjson.dumps(first) == orjson.dumps(second)
    except TypeError:  # orjson.JSONEncodeError is one
        return False


def _std(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


def compact_bytes(value: Any) -> bytes:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` as UTF-8 bytes.

    Lone surrogates are kept (``surrogatepass``), as the rebuilt requests' bytes keep them.

    Examples
    --------
    >>> compact_bytes({"role": "user", "content": "héllo"}).decode()
    '{"role":"user","content":"héllo"}'
    >>> compact_bytes({"x": 1e-05})  # a float: the standard library's notation
    b'{"x":1e-05}'
    """
    if type(value) is not dict and type(value) is not list:
        return _std(value)
    try:
        out = orjson.dumps(value, option=_OPTIONS)
    except TypeError:  # a surrogate, a non-str key, a big integer, a type JSON lacks
        return _std(value)
    for search in _NOT_IDENTICAL:
        if search(out) is not None:
            return _std(value)
    # a copy of its exact size: orjson's own buffer was over-allocated as it grew, and
    # kept (a rebuilt message's bytes live as long as the session) it cost ~1.7 bytes of
    # resident memory per byte of transcript
    return bytes(memoryview(out))


__all__ = ["compact_bytes", "loads", "loads_utf8", "same_json"]
