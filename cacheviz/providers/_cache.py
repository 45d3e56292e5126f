"""The cache-entry model every simulator shares.

Entries have a TTL, are refreshed on use, and can be bounded by a token capacity with
LRU eviction.

Times are seconds (floats, Unix epoch); calls without a time are given a synthetic clock
by the driver. An entry is keyed by whatever identifies a cached prefix for the provider
(a digest of the block chain, a token-block hash, ...).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from itertools import islice

from cacheviz._util.seq import common_prefix, differing_block_common
from cacheviz.providers._base import SimCall

MAX_SIBLINGS = 32  # earlier variants compared token by token at a branch point


@dataclass(slots=True)
class Entry:
    """One cached prefix."""

    key: Hashable
    tokens: int
    expires_at: float
    ttl: float
    written_by: int  # index of the call that wrote it
    visible_at: float  # written entries are usable only once the response has begun


class EntryStore:
    """Live cache entries with TTL and optional LRU capacity (in tokens).

    Parameters
    ----------
    capacity_tokens
        Evict least-recently-used entries when the sum of their tokens would exceed it
        (``None``: unbounded).
    """

    def __init__(self, capacity_tokens: int | None = None) -> None:
        self.capacity = capacity_tokens
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._size = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        """Whether ``key`` is stored (live or not yet visible; expired ones until dropped)."""
        return key in self._entries

    def get(self, key: Hashable, now: float) -> Entry | None:
        """The live, visible entry for ``key`` at ``now`` (expired ones are dropped)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= now:
            self._drop(key)
            return None
        if entry.visible_at > now:
            return None
        return entry

    def peek(self, key: Hashable) -> Entry | None:
        """The entry stored for ``key``, live or not (nothing is dropped)."""
        return self._entries.get(key)

    def recent(self) -> Iterator[Entry]:
        """Every stored entry, most recently used first (expired ones until dropped)."""
        return reversed(self._entries.values())

    def touch(self, entry: Entry, now: float, ttl: float | None = None) -> None:
        """Refresh an entry on use: the TTL restarts at ``now``; it becomes most recent."""
        if ttl is not None:
            entry.ttl = max(entry.ttl, ttl)
        entry.expires_at = now + entry.ttl
        self._entries.move_to_end(entry.key)

    def put(self, key: Hashable, tokens: int, now: float, ttl: float, *, written_by: int) -> Entry:
        """Write (or rewrite) an entry; evict LRU entries beyond the capacity."""
        if key in self._entries:
            self._drop(key)
        entry = Entry(key, tokens, now + ttl, ttl, written_by, now)
        self._entries[key] = entry
        self._size += tokens
        if self.capacity is not None:
            while self._size > self.capacity and len(self._entries) > 1:
                oldest = next(iter(self._entries))
                if oldest == key:
                    break
                self._drop(oldest)
        return entry

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key)
        self._size -= entry.tokens

    def live(self, now: float) -> list[Entry]:
        """Every live entry at ``now``, most recently used last."""
        return [e for e in self._entries.values() if e.expires_at > now]


class LivePrompts:
    """Earlier prompts as a trie of ``(prefix chain, next block)`` edges with a TTL.

    Every prompt recorded refreshes (or writes) the edges along its path, so an edge is
    live while some prompt through it was seen within the TTL. :meth:`common` gives the
    token-exact longest common prefix with the live prompts.

    The work per prompt grows with its new blocks, not its length: the path of the last
    prompt recorded is refreshed lazily. Its edges count as refreshed at its time, and
    are written out only where a later prompt leaves that path (in a growing thread,
    never), so a thread of *n* calls costs O(n) block steps, not O(n²).

    An edge is a number: its expiry and the time it becomes usable are two float arrays
    indexed by it, and a node's children map block hashes to edge numbers. Nothing the
    trie holds is then tracked by Python's garbage collector, whose collections over a
    session's edges (kept past their expiry until a search visits them) were a third of
    the replay of a 10,000-call sliding window.

    Parameters
    ----------
    ttl
        Seconds an edge lives after the last prompt through it.
    """

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._children: dict[bytes, dict[str, int]] = {}
        self._expires = array("d")  # per edge: when it expires
        self._shown = array("d")  # per edge: when it becomes usable (visible)
        # the last prompt recorded: its edges are refreshed at ``_last_time`` (lazily)
        self._last: SimCall | None = None
        self._last_time = 0.0
        self._visible_upto: list[float] = []  # latest visible time of its edges 0..j

    def _edge(self, call: SimCall, j: int) -> int | None:
        kids = self._children.get(call.chain[j - 1] if j else b"")
        return None if kids is None else kids.get(call.hashes[j])

    def _shared_live(self, call: SimCall, now: float, *, visible: bool) -> int:
        """Blocks ``call`` shares with the last path while that path is live (else 0)."""
        last = self._last
        if last is None or now >= self._last_time + self.ttl:
            return 0
        shared = common_prefix(last.hashes, call.hashes)
        if visible:  # only as far as every edge is already usable
            shared = min(shared, bisect_right(self._visible_upto, now))
        return shared

    def _leave_last_path(self, shared: int) -> None:
        """Before reading edges off the last path (from block ``shared``), write them out."""
        last = self._last
        if last is not None and shared < len(last.hashes):
            expires = self._last_time + self.ttl
            times = self._expires
            for j in range(shared, len(last.hashes)):
                edge = self._edge(last, j)
                if edge is not None and times[edge] < expires:
                    times[edge] = expires

    def _usable(self, kids: dict[str, int], h: str, now: float, *, visible: bool) -> bool:
        edge = kids[h]
        if self._expires[edge] <= now:
            del kids[h]  # expired: dropped
            return False
        return not visible or self._shown[edge] <= now

    def common(self, call: SimCall, now: float, *, visible: bool = True) -> int:
        """Tokens ``call`` shares with the live prompts (``visible``: already usable)."""
        skip = self._shared_live(call, now, visible=visible)
        self._leave_last_path(skip if skip else 0)
        if skip == len(call.hashes):
            return call.total
        parent = call.chain[skip - 1] if skip else b""
        for j in range(skip, len(call.hashes)):
            h = call.hashes[j]
            kids = self._children.get(parent)
            if not kids:
                return call.offsets[j]
            if h in kids and self._usable(kids, h, now, visible=visible):
                parent = call.chain[j]
                continue
            block = call.tokens(h)
            best = 0
            for other in list(islice(reversed(kids), MAX_SIBLINGS)):
                if self._usable(kids, other, now, visible=visible):
                    tokens = call.tokens(other)
                    # one comparison tells a sibling that cannot share more than ``best``
                    if best and tokens[: best + 1] != block[: best + 1]:
                        continue
                    best = max(best, differing_block_common(block, tokens))
            return call.offsets[j] + call.partial(j, best)
        return call.total

    def record(self, call: SimCall, now: float, build: float) -> None:
        """Cache ``call``'s prompt: refresh its live edges, write the rest (usable later)."""
        skip = self._shared_live(call, now, visible=False)
        self._leave_last_path(skip)
        upto = self._visible_upto[:skip]
        seen = upto[-1] if upto else float("-inf")
        parent = call.chain[skip - 1] if skip else b""
        times, shown, expires = self._expires, self._shown, now + self.ttl
        for j in range(skip, len(call.hashes)):
            h = call.hashes[j]
            kids = self._children.get(parent)
            if kids is None:
                kids = self._children[parent] = {}
            edge = kids.get(h)
            if edge is not None and times[edge] > now:
                times[edge] = expires
            else:
                edge = kids[h] = len(times)
                times.append(expires)
                shown.append(now + build)
            if shown[edge] > seen:
                seen = shown[edge]
            upto.append(seen)
            parent = call.chain[j]
        self._last, self._last_time, self._visible_upto = call, now, upto
