"""Longest common prefix of two sequences, and of two token blocks that differ in bytes."""

from __future__ import annotations

from array import array
from collections.abc import Sequence

_CHUNK = 4096
_TEXT_CHUNK = 65536  # chars; compared in place with str.startswith (one small copy)


def common_prefix(
    a: Sequence, b: Sequence, a0: int = 0, b0: int = 0, limit: int | None = None
) -> int:
    """Length of the common prefix of ``a[a0:]`` and ``b[b0:]`` (at most ``limit``).

    Works on anything that slices and compares (str, list, array): equal chunks are
    skipped whole; a differing chunk is narrowed down 16-fold at a time.

    Examples
    --------
    >>> common_prefix("cache hit", "cache miss")
    6
    >>> common_prefix([1, 2, 3], [9, 1, 2, 4], 0, 1)
    2
    """
    n = min(len(a) - a0, len(b) - b0)
    if limit is not None:
        n = min(n, limit)
    i = 0
    text = isinstance(a, str) and isinstance(b, str)
    step = _TEXT_CHUNK if text else _CHUNK
    while i < n:
        j = min(i + step, n)
        same = (
            a.startswith(b[b0 + i : b0 + j], a0 + i)  # type: ignore[attr-defined]  # text: str
            if text
            else a[a0 + i : a0 + j] == b[b0 + i : b0 + j]
        )
        if same:
            i = j
        elif step == 1:
            break
        else:
            step = max(1, step // 16)
    return i


def differing_block_common(a: array, b: array) -> int:
    """Common tokens of two blocks known to differ in bytes.

    When their tokens are identical (a change the tokenizer does not see, such as a
    field we do not render), the match is taken to end before the last token, so a
    byte change is never hidden.
    """
    n = common_prefix(a, b)
    if n == len(a) == len(b):
        n = max(0, n - 1)
    return n
