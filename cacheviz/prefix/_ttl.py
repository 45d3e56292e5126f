"""The cache TTL a session used, from its own evidence, per thread.

A provider's default TTL is an assumption; a session often shows which TTL it used:

* the request's ``cache_control.ttl`` (a breakpoint's TTL), when the request is logged,
  wins: it is what was asked for;
* else the reported writes: a thread whose every reported write is a 1-hour write
  (``cache_write_1h_tokens`` equal to the writes) used a 1-hour TTL; one that reports
  5-minute writes used 5 minutes (Claude Code's main thread writes 1 h, its sub-agents
  5 m);
* else nothing is known (``None``): the provider's default applies.

Used by the ``ttl_expired`` miss cause, ``check``'s TTL rules and advice, the simulator
of the session's own provider and the inspector's default TTL and idle marks.
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


def thread_ttls(calls: Sequence[Call], threads: Sequence[str]) -> dict[str, int | None]:
    """Per thread: the TTL its calls show (``None``: no evidence, the default applies).

    A thread whose calls show both (a 1-hour write and a 5-minute one) is taken at the
    shorter TTL: the entries that expire first decide when a gap costs a rewrite.
    """
    found = ThreadTTLs()
    for call, thread in zip(calls, threads, strict=True):
        found.add(call, thread)
    return found.ttls()


class ThreadTTLs:
    """:func:`thread_ttls` of calls added one at a time.

    Shared by :func:`thread_ttls` and :class:`cacheviz.live._incremental.LiveLog`.
    """

    def __init__(self) -> None:
        self.seen: dict[str, set[int]] = {}
        """Per thread, the TTLs its calls show."""

    def add(self, call: Call, thread: str) -> None:
        """Add ``call``, of ``thread``."""
        ttl = call_ttl(call)
        bucket = self.seen.setdefault(thread, set())
        if ttl is not None:
            bucket.add(ttl)

    def ttls(self) -> dict[str, int | None]:
        """Per thread: the TTL the calls added show (``None``: no evidence)."""
        return {thread: (min(values) if values else None) for thread, values in self.seen.items()}


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


__all__ = ["ThreadTTLs", "call_ttl", "idle_seconds", "thread_ttls"]
