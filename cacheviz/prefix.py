"""The common-prefix line: how far each request matches what its lineage sent before.

A :class:`PrefixIndex` is a radix trie over block-key chains (``(part, hash)`` per
block). Walking a request down the trie finds the longest run of leading blocks that
some earlier request of the lineage sent; inside the first differing block the token
arrays are compared with those of every earlier block at that node, so the line lands
on the exact token where the match ends.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cacheviz.tokens import common_prefix_tokens

BlockKey = tuple[str, str]  # (part, hash)
_MAX_SIBLINGS = 32  # earlier variants compared token by token at a branching node


def differing_block_common(a: array, b: array) -> int:
    """Common tokens of two blocks known to differ in bytes.

    When their tokens are identical (a change the tokenizer does not see, such as a
    field we do not render), the match is taken to end before the last token, so a
    byte change is never hidden.
    """
    n = common_prefix_tokens(a, b)
    if n == len(a) == len(b):
        n = max(0, n - 1)
    return n


@dataclass(slots=True)
class _Node:
    children: dict[BlockKey, _Node] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class Match:
    """Where a request stops matching: ``blocks`` whole blocks, then ``tokens`` in all."""

    blocks: int
    tokens: int


class PrefixIndex:
    """Radix trie of the block-key chains sent so far by one lineage."""

    def __init__(self) -> None:
        self._root = _Node()

    def match_and_insert(
        self,
        keys: Sequence[BlockKey],
        offsets: Sequence[int],
        tokens_of: Callable[[str], array],
    ) -> Match:
        """Match ``keys`` against earlier chains, then add them to the index.

        Parameters
        ----------
        keys
            The request's block keys in cache order.
        offsets
            Cumulative token offsets: ``offsets[i]`` tokens precede block ``i`` and
            ``offsets[-1]`` is the request's total (``len(offsets) == len(keys) + 1``).
        tokens_of
            Token array of a block hash.

        Returns
        -------
        Match
            The longest prefix any earlier chain shares with this one.
        """
        node = self._root
        depth = 0
        for key in keys:
            child = node.children.get(key)
            if child is None:
                break
            node = child
            depth += 1
        matched = offsets[depth]
        if depth < len(keys) and node.children:
            current = tokens_of(keys[depth][1])
            siblings = list(node.children)[-_MAX_SIBLINGS:]
            matched += max(differing_block_common(current, tokens_of(h)) for _, h in siblings)
        result = Match(depth, matched)
        for key in keys[depth:]:
            child = _Node()
            node.children[key] = child
            node = child
        return result


def match_previous(
    previous: Sequence[BlockKey],
    prev_offsets: Sequence[int],
    keys: Sequence[BlockKey],
    offsets: Sequence[int],
    tokens_of: Callable[[str], array],
) -> Match:
    """Common prefix of a request with one earlier request, in blocks and tokens."""
    depth = 0
    limit = min(len(previous), len(keys))
    while depth < limit and previous[depth] == keys[depth]:
        depth += 1
    matched = offsets[depth]
    if depth < limit:
        matched += differing_block_common(
            tokens_of(keys[depth][1]), tokens_of(previous[depth][1])
        )
    return Match(depth, min(matched, prev_offsets[-1]))
