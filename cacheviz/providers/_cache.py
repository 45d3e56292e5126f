"""The cache-entry model every simulator shares.

Entries have a TTL, are refreshed on use, and can be bounded by a token capacity with
LRU eviction.

Times are seconds (floats, Unix epoch); calls without a time are given a synthetic clock
by the driver. An entry is keyed by whatever identifies a cached prefix for the provider
(a digest of the block chain, a token-block hash, ...).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

NEVER = math.inf


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
