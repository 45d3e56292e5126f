"""The cache TTL of each entry a session wrote, from its own evidence.

A provider's default TTL is an assumption; a session often shows which TTL it used, and
it may use both (Anthropic's 5-minute and 1-hour tiers). The TTL belongs to a cache
entry, so it is read per call — the tier of the entries the call writes:

* the request's ``cache_control.ttl`` (a breakpoint's TTL), when the request is logged,
  wins: it is what was asked for;
* else the call's reported writes: all of them 1-hour writes (``cache_write_1h_tokens``
  equal to the writes) is the 1-hour tier, 5-minute ones the 5-minute tier (Claude
  Code's main thread writes 1 h, its sub-agents 5 m, and a thread may switch);
* a call that writes nothing leaves the entries it read, of the tier its thread last
  wrote (before its thread's first write: that first write's tier);
* else nothing is known (``None``): the provider's default applies.

``calls.ttl_seconds`` holds it per call. The ``ttl_expired`` miss cause and ``check``'s
TTL rules compare an idle gap with the TTL of the entries the earlier call left; the
simulator of the session's own provider writes each call's entries with its tier; the
inspector takes its default TTL and idle marks from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from cacheviz import providers
from cacheviz.model import Call


def call_ttl(call: Call) -> int | None:
    """The TTL one call shows: its breakpoints' (when logged), else its reported writes.

    Only for providers whose requests name TTLs (their profile's ``ttls``): the shortest
    is the default a write without one gets, the longest the one 1-hour writes report.
    """
    found = providers.find(call.provider)
    if found is None or not found.ttls:
        return None
    short, long_ttl = min(found.ttls.values()), max(found.ttls.values())
    asked = [seconds for _, seconds in call.breakpoints]
    auto = call.params.get("cache_control")
    if isinstance(auto, dict):
        asked.append(found.ttl_seconds(str(auto.get("ttl"))) or short)
    if asked and not call.reconstructed:
        return max(asked)
    usage = call.usage
    if usage is None or not usage.cache_write_tokens:
        return None
    long = usage.cache_write_1h_tokens
    if long is None and usage.cache_write_5m_tokens is None:
        return None
    return long_ttl if (long or 0) >= usage.cache_write_tokens else short


def entry_ttls(calls: Sequence[Call], threads: Sequence[str]) -> list[int | None]:
    """Per call: the TTL of the cache entries it leaves (module docstring; ``None``: unknown)."""
    found = ThreadTTLs()
    for call, thread in zip(calls, threads, strict=True):
        found.add(call, thread)
    return [found.at(i) for i in range(len(calls))]


def thread_ttls(calls: Sequence[Call], threads: Sequence[str]) -> dict[str, int | None]:
    """Per thread: the tier of its first write (``None``: it shows none).

    What a call of the thread gets before any write of its own thread shows a tier.
    """
    found = ThreadTTLs()
    for call, thread in zip(calls, threads, strict=True):
        found.add(call, thread)
    return found.ttls()


class ThreadTTLs:
    """:func:`entry_ttls` of calls added one at a time.

    Shared by :func:`entry_ttls` and :class:`cacheviz.live._incremental.LiveLog`: a
    call's value depends on the calls before it, except before its thread's first
    write, whose tier it takes (:meth:`ttls` changes then, and a live log recomputes).
    """

    def __init__(self) -> None:
        self.first: dict[str, int] = {}
        """Per thread, the tier of its first write."""
        self.latest: dict[str, int] = {}
        """Per thread, the tier of its latest write."""
        self.forward: list[int | None] = []
        """Per call, its own tier, else its thread's latest before it (``None``: none yet)."""
        self.threads: list[str] = []
        self.order: dict[str, None] = {}
        """The threads, in order of first sight."""

    def add(self, call: Call, thread: str) -> None:
        """Add ``call``, of ``thread``."""
        ttl = call_ttl(call)
        if ttl is not None:
            self.latest[thread] = ttl
            self.first.setdefault(thread, ttl)
        self.forward.append(self.latest.get(thread))
        self.threads.append(thread)
        self.order[thread] = None

    def at(self, i: int) -> int | None:
        """The TTL of the entries call ``i`` leaves (``None``: no evidence)."""
        found = self.forward[i]
        return found if found is not None else self.first.get(self.threads[i])

    def ttls(self) -> dict[str, int | None]:
        """Per thread: the tier of its first write (``None``: none)."""
        return {thread: self.first.get(thread) for thread in self.order}


def idle_seconds(call: Call, source: Call | None) -> float | None:
    """Seconds between ``source``'s request and ``call``'s, at most (``None``: unknown).

    A call's ``ts`` is when its request was sent or, for a rebuilt one, the last record
    before it; when the log also gives the response's time (``meta["response_ts"]``),
    the request was sent by then, so the later of the two bounds the idle time from
    above: a TTL is certainly still running only when this bound is within it.
    """
    if source is None or source.ts is None or call.ts is None:
        return None
    end = call.meta.get("response_ts")
    until = max(call.ts, end) if end is not None and end.tzinfo is not None else call.ts
    return (until - source.ts).total_seconds()


__all__ = ["ThreadTTLs", "call_ttl", "entry_ttls", "idle_seconds", "thread_ttls"]
