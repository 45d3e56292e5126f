"""The common-prefix line: how far each request matches what its namespace sent before.

A :class:`PrefixIndex` (one per cache namespace) holds a compressed radix trie over
block-hash chains. Walking a request down the trie finds the longest run of leading
blocks that some earlier request of the namespace sent; inside the first differing block
the token arrays are compared with those of the earlier blocks at that point, so the
line lands on the exact token where the match ends. Edges are slices of the requests'
own hash lists and are compared at C speed, so a request costs time in proportion to its
branch points and new blocks, not to its length.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice

from cacheviz._util.seq import common_prefix, differing_block_common

_MAX_SIBLINGS = 32  # earlier variants compared token by token at a branching node


@dataclass(slots=True, frozen=True)
class Match:
    """Where a request stops matching: after ``blocks`` whole blocks, at ``tokens``."""

    blocks: int
    tokens: int


def match_pair(
    before: Sequence[str],
    before_total: int,
    keys: Sequence[str],
    offsets: Sequence[int],
    tokens_of: Callable[[str], array[int]],
    before_tokens_of: Callable[[str], array[int]] | None = None,
) -> Match:
    """Where ``keys`` stops matching one earlier request ``before`` (blocks and tokens)."""
    depth = common_prefix(before, keys)
    tokens = offsets[depth]
    if depth < min(len(keys), len(before)):
        old = (before_tokens_of or tokens_of)(before[depth])
        tokens += differing_block_common(tokens_of(keys[depth]), old)
    return Match(depth, min(tokens, before_total))


class _Node:
    __slots__ = ("edges",)

    def __init__(self) -> None:
        self.edges: dict[str, _Edge] = {}


class _Edge:
    """``keys[start:end]`` of the request that created it, leading to ``child``."""

    __slots__ = ("child", "end", "keys", "start")

    def __init__(self, keys: list[str], start: int, end: int, child: _Node) -> None:
        self.keys, self.start, self.end, self.child = keys, start, end, child


class PrefixIndex:
    """Everything one namespace has sent so far: a radix trie plus its latest request.

    The latest request's path through the trie is kept, so the next request - usually
    the same bytes plus a few new blocks - resumes the walk where it leaves that path
    instead of walking from the root.
    """

    def __init__(self) -> None:
        self._root = _Node()
        self._previous: tuple[list[str], list[int]] | None = None
        self._path: list[tuple[int, _Node]] = [(0, self._root)]  # (depth, node) of the latest

    def add(
        self,
        keys: list[str],
        offsets: Sequence[int],
        tokens_of: Callable[[str], array[int]],
    ) -> tuple[Match, Match | None]:
        """Match a request against the namespace, then record it.

        Parameters
        ----------
        keys
            The request's block hashes in cache order (kept by the index: don't mutate).
        offsets
            Cumulative token offsets, ``len(keys) + 1`` long (``offsets[-1]`` = total).
        tokens_of
            Token array of a block hash.

        Returns
        -------
        tuple of Match
            The longest prefix shared with any earlier request of the namespace, and the
            prefix shared with the previous request (``None`` for the first).
        """
        previous = None
        start = 0
        if self._previous is not None:
            prev_keys, prev_offsets = self._previous
            depth = common_prefix(prev_keys, keys)
            tokens = offsets[depth]
            if depth < min(len(keys), len(prev_keys)):
                tokens += differing_block_common(
                    tokens_of(keys[depth]), tokens_of(prev_keys[depth])
                )
            previous = Match(depth, min(tokens, prev_offsets[-1]))
            start = bisect.bisect_right(self._path, depth, key=_depth) - 1
        best = self._walk_and_insert(keys, offsets, tokens_of, self._path[: start + 1])
        self._previous = (keys, list(offsets))
        return best, previous

    def _walk_and_insert(
        self,
        keys: list[str],
        offsets: Sequence[int],
        tokens_of: Callable[[str], array[int]],
        path: list[tuple[int, _Node]],
    ) -> Match:
        depth, node = path[-1]
        total = len(keys)
        siblings: list[str] = []
        while depth < total:
            edge = node.edges.get(keys[depth])
            if edge is None:
                siblings = list(islice(reversed(node.edges), _MAX_SIBLINGS))
                leaf = _Node()
                node.edges[keys[depth]] = _Edge(keys, depth, total, leaf)
                path.append((total, leaf))
                break
            length = edge.end - edge.start
            run = common_prefix(edge.keys, keys, edge.start, depth, length)
            if run == length:
                node = edge.child
                depth += length
                path.append((depth, node))
                continue
            depth += run
            if depth == total:  # this request is a prefix of an earlier one
                break
            siblings = [edge.keys[edge.start + run]]
            middle, leaf = _Node(), _Node()
            middle.edges[edge.keys[edge.start + run]] = _Edge(
                edge.keys, edge.start + run, edge.end, edge.child
            )
            middle.edges[keys[depth]] = _Edge(keys, depth, total, leaf)
            edge.end = edge.start + run
            edge.child = middle
            path += [(depth, middle), (total, leaf)]
            break
        self._path = path
        matched = offsets[depth]
        if siblings:
            current = tokens_of(keys[depth])
            matched += max(differing_block_common(current, tokens_of(h)) for h in siblings)
        return Match(depth, matched)


def _depth(step: tuple[int, _Node]) -> int:
    return step[0]
