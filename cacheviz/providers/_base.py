"""What every provider simulator sees and returns (the spec: providers.md §7).

A simulator replays a session's calls, in request-time order, against one provider's
caching rules, and returns per call how many input tokens were read from the cache,
written to it, and processed uncached. Pricing is applied afterwards
(:mod:`cacheviz.simulate`), so simulators deal in tokens only.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from cacheviz.model import Usage


@dataclass(slots=True, frozen=True)
class Breakpoint:
    """A cache breakpoint the request set: after block ``block`` (0-based), with a TTL."""

    block: int
    ttl_seconds: int


@dataclass(slots=True)
class SimCall:
    """One request as a simulator sees it.

    ``offsets[i]`` tokens precede block ``i``; ``offsets[-1]`` is the request's total.
    ``tokens(hash)`` gives a block's token array, for token-exact common prefixes.
    """

    index: int
    lineage: str
    ts: datetime | None
    model: str
    hashes: list[str]
    chain: list[bytes]  # chain[i]: digest of blocks 0..i (a prefix's identity)
    offsets: list[int]
    parts: list[str]  # "tools" | "system" | "messages", per block
    roles: list[str | None]  # message role per block (None for tools/system)
    tokens: Callable[[str], array]
    breakpoints: list[Breakpoint]  # as recorded in the request (cache_control, ...)
    auto_breakpoint: int | None  # seconds of TTL when top-level automatic caching is on
    params: dict[str, Any]
    output_tokens: int | None  # reported, else None
    reported: Usage | None
    reconstructed: bool = False  # rebuilt from a log: recorded breakpoints are unknown
    provider: str = ""  # the provider the call was recorded with
    clock: float = 0.0  # request start in seconds (ts, or a synthetic clock without one)

    @property
    def total(self) -> int:
        """Input tokens of the whole request."""
        return self.offsets[-1]


@dataclass(slots=True)
class CallResult:
    """A simulator's verdict on one call, in tokens.

    ``input_tokens = uncached_tokens + cache_read_tokens + cache_write_tokens``;
    ``cache_write_1h_tokens`` is the part of the writes with a one-hour TTL.
    ``detail`` says, in a few words, why (which entry hit, what was too short, ...).
    """

    input_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    detail: str = ""
    extra: dict[str, float] = field(default_factory=dict)  # e.g. storage token-hours

    @property
    def uncached_tokens(self) -> int:
        """Input tokens neither read from nor written to the cache."""
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens


class Simulator(Protocol):
    """A provider's caching rules."""

    provider: str

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay ``calls`` (in request-time order); one result per call, same order."""
        ...
