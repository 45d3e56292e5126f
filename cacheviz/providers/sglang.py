"""SGLang RadixAttention (providers.md §5.8 and §7).

A radix tree over token ids holds every finished request's prompt. A request's hit is
its longest match in the tree, capped at ``len - 1`` (the last token is recomputed for
its logits) and floored to ``page_size``: ``floor(min(LCP, len - 1) / page) * page``.
There is no TTL and no write fee; the hit is reported as read tokens and as
``extra["prefill_tokens_saved"]``. Matching and inserting touch the nodes on the path
(their last access becomes this request).

With ``capacity_tokens`` set, the request needs room for what the tree does not hold
(``len - hit + output`` tokens) while its matched path is locked: least recently used
unlocked leaves are evicted, whole, one at a time (a parent left childless becomes a
leaf in turn) until it fits. On finish the page-aligned part of the prompt is inserted
(SGLang caches whole pages only) and the rest of the request's memory is freed.

Approximations: output token ids are not in a :class:`SimCall`, so only the prompt is
inserted (SGLang inserts prompt + output): an answer is cached only once the next
request sends it back. Requests run one at a time. ``extra_key`` (LoRA, ``cache_salt``)
is modelled as one tree per model and ``cache_salt``, sharing the capacity. A request
larger than the pool is served anyway; the tree is then trimmed back to the capacity.
"""

from __future__ import annotations

import heapq
import itertools
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from cacheviz._util.seq import common_prefix
from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._profile import ProviderProfile
from cacheviz.providers.vllm import prompt_tokens


class _Node:
    __slots__ = ("children", "key", "last_access", "parent")

    def __init__(self, key: array[int], parent: _Node | None, last_access: int) -> None:
        self.key = key  # the edge's tokens, from the parent to this node
        self.parent = parent
        self.children: dict[int | tuple[int, ...], _Node] = {}
        self.last_access = last_access


class _RadixTree:
    """Token-id radix trees (one per namespace) over a shared token capacity."""

    def __init__(self, page_size: int, capacity: int | None) -> None:
        self.page = page_size
        self.capacity = capacity
        self.size = 0  # tokens held
        self.roots: dict[tuple[str, str], _Node] = {}
        self._serial = itertools.count()

    def _first(self, tokens: array[int], at: int) -> int | tuple[int, ...]:
        if self.page == 1:
            return tokens[at]
        return tuple(tokens[at : at + self.page])

    def _split(self, node: _Node, at: int) -> _Node:
        """Cut ``node``'s edge after ``at`` tokens; return the new upper node."""
        parent = node.parent
        assert parent is not None  # the root has no edge
        upper = _Node(node.key[:at], parent, node.last_access)
        parent.children[self._first(node.key, 0)] = upper
        node.key = node.key[at:]
        node.parent = upper
        upper.children[self._first(node.key, 0)] = node
        return upper

    def match(
        self, root: _Node, tokens: array[int], limit: int, now: int
    ) -> tuple[int, list[_Node]]:
        """Match at most ``limit`` tokens (page-aligned); split where the match ends."""
        node, depth, path = root, 0, [root]
        while depth + self.page <= limit:
            child = node.children.get(self._first(tokens, depth))
            if child is None:
                break
            run = common_prefix(child.key, tokens, 0, depth, limit - depth)
            run -= run % self.page
            if run == 0:
                break
            if run < len(child.key):
                child = self._split(child, run)
            child.last_access = now
            path.append(child)
            node, depth = child, depth + run
        root.last_access = now
        return depth, path

    def insert(self, root: _Node, tokens: array[int], now: int) -> None:
        """Insert ``tokens`` (page-aligned length), touching the path."""
        node, depth, end = root, 0, len(tokens)
        while depth < end:
            first = self._first(tokens, depth)
            child = node.children.get(first)
            if child is None:
                node.children[first] = _Node(tokens[depth:], node, now)
                self.size += end - depth
                return
            run = common_prefix(child.key, tokens, 0, depth)
            run -= run % self.page
            if run < len(child.key):
                child = self._split(child, run)
            child.last_access = now
            node, depth = child, depth + run

    def evict(self, room: int, locked: set[int]) -> int:
        """Evict LRU unlocked leaves until ``room`` more tokens fit; tokens evicted."""
        if self.capacity is None or self.size + room <= self.capacity:
            return 0
        heap = []
        stack = list(self.roots.values())
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            if not node.children and node.parent is not None and id(node) not in locked:
                heap.append((node.last_access, next(self._serial), node))
        heapq.heapify(heap)
        evicted = 0
        while heap and self.size + room > self.capacity:
            _, _, node = heapq.heappop(heap)
            parent = node.parent
            assert parent is not None
            del parent.children[self._first(node.key, 0)]
            self.size -= len(node.key)
            evicted += len(node.key)
            if not parent.children and parent.parent is not None and id(parent) not in locked:
                heapq.heappush(heap, (parent.last_access, next(self._serial), parent))
        return evicted


@dataclass
class SGLangSimulator:
    """SGLang's radix cache; every parameter defaults to SGLang's defaults.

    Parameters
    ----------
    page_size
        Tokens per KV page (``--page-size``; 1 = token granularity).
    capacity_tokens
        KV pool size in tokens; ``None``: unbounded, never evicts.
    """

    page_size: int = 1
    capacity_tokens: int | None = None
    provider: str = "sglang"

    def __post_init__(self) -> None:
        if self.page_size < 1:
            raise ValueError("page_size must be at least 1")
        if self.capacity_tokens is not None and self.capacity_tokens < 1:
            raise ValueError("capacity_tokens must be at least 1 (or None)")

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the algorithm."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken.

        The live inspector feeds the calls as they are logged (:mod:`cacheviz.live._incremental`).
        """
        tree = _RadixTree(self.page_size, self.capacity_tokens)
        for tick, call in enumerate(calls, 1):
            yield self._one(call, tree, tick)

    def _one(self, call: SimCall, tree: _RadixTree, now: int) -> CallResult:
        page, total = self.page_size, call.total
        tokens = prompt_tokens(call)
        salt = call.params.get("cache_salt")
        root = tree.roots.setdefault(
            (call.model, "" if salt is None else str(salt)), _Node(array("i"), None, now)
        )
        limit = max(0, (total - 1) // page * page)
        hit, path = tree.match(root, tokens, limit, now)
        evicted = tree.evict(total - hit + (call.output_tokens or 0), {id(n) for n in path})
        tree.insert(root, tokens[: len(tokens) // page * page], now)
        evicted += tree.evict(0, set())
        detail = f"{hit} of {total} tokens matched"
        if evicted:
            detail += f", {evicted} evicted"
        return CallResult(
            total,
            cache_read_tokens=hit,
            detail=detail,
            extra={"prefill_tokens_saved": float(hit), "evicted_tokens": float(evicted)},
        )


PROFILE = ProviderProfile(
    id="sglang",
    label="SGLang",
    module="sglang",
    simulator="SGLangSimulator",
    self_hosted=True,
)
