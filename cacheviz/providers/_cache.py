"""The cache-entry model every simulator shares.

Entries have a TTL, are refreshed on use, and can be bounded by a token capacity with
LRU eviction.

Times are seconds (floats, Unix epoch); calls without a time are given a synthetic clock
by the driver. An entry is keyed by whatever identifies a cached prefix for the provider
(a digest of the block chain, a token-block hash, ...).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from itertools import islice

from cacheviz.prefix import differing_block_common
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

    Parameters
    ----------
    ttl
        Seconds an edge lives after the last prompt through it.
    """

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self.store = EntryStore()
        self._children: dict[bytes, dict[str, Entry]] = {}

    def _usable(self, kids: dict[str, Entry], h: str, now: float, *, visible: bool) -> bool:
        entry = kids[h]
        if entry.expires_at <= now:
            self.store.get(entry.key, now)  # drops it
            del kids[h]
            return False
        return not visible or entry.visible_at <= now

    def common(self, call: SimCall, now: float, *, visible: bool = True) -> int:
        """Tokens ``call`` shares with the live prompts (``visible``: already usable)."""
        parent = b""
        for j, h in enumerate(call.hashes):
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
                    best = max(best, differing_block_common(block, call.tokens(other)))
            return call.offsets[j] + best
        return call.total

    def record(self, call: SimCall, now: float, build: float) -> None:
        """Cache ``call``'s prompt: refresh its live edges, write the rest (usable later)."""
        parent = b""
        for j, h in enumerate(call.hashes):
            kids = self._children.setdefault(parent, {})
            entry = kids.get(h)
            if entry is not None and entry.expires_at > now:
                self.store.touch(entry, now)
            else:
                size = call.offsets[j + 1] - call.offsets[j]
                entry = self.store.put((parent, h), size, now, self.ttl, written_by=call.index)
                entry.visible_at = now + build
                kids[h] = entry
            parent = call.chain[j]
