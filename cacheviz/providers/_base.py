"""What every provider simulator sees and returns (the spec: providers.md §7).

A simulator replays a session's calls, in request-time order, against one provider's
caching rules, and returns per call how many input tokens were read from the cache,
written to it, and processed uncached. Pricing is applied afterwards
(:mod:`cacheviz.money._simulate`), so simulators deal in tokens only.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import accumulate
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
    thread: str
    ts: datetime | None
    model: str
    hashes: list[str]
    chain: list[bytes]  # chain[i]: digest of blocks 0..i (a prefix's identity)
    offsets: list[int]
    parts: list[str]  # "tools" | "system" | "messages", per block
    roles: list[str | None]  # message role per block (None for tools/system)
    tokens: Callable[[str], array[int]]
    breakpoints: list[Breakpoint]  # as recorded in the request (cache_control, ...)
    auto_breakpoint: int | None  # seconds of TTL when top-level automatic caching is on
    params: dict[str, Any]
    output_tokens: int | None  # reported, else None
    reported: Usage | None
    reconstructed: bool = False  # rebuilt from a log: recorded breakpoints are unknown
    provider: str = ""  # the provider the call was recorded with
    clock: float = 0.0  # request start in seconds (ts, or a synthetic clock without one)
    # the latest time the provider can have processed the request: its response's first
    # record (Claude Code), else ``clock``. The entries it reads or writes are refreshed
    # somewhere in [clock, answered]; a TTL runs from the last use, so they certainly
    # live until ``answered`` + TTL (see :attr:`refreshed`)
    answered: float | None = None
    # the local encoding's offsets when ``offsets`` are calibrated provider tokens
    local_offsets: list[int] | None = None
    # the TTL (seconds) of the entries this call writes, from the session's evidence
    # (cacheviz.prefix._ttl)
    ttl_hint: int | None = None
    # leading tokens already cached before the session (its thread's first reported read,
    # inside the unlogged prefix: the agent's static system prompt other sessions warm)
    warm_tokens: int = 0
    # the replay of this call was shaped by its own reported read (an unlogged-prefix
    # version, a warm head taken from it): its match with the provider is not evidence
    sized_from_usage: bool = False

    @property
    def total(self) -> int:
        """Input tokens of the whole request."""
        return self.offsets[-1]

    @property
    def refreshed(self) -> float:
        """When the entries this call reads or writes start their TTL, at the latest.

        The request is looked up at ``clock`` (its earliest time) and its entries are
        stamped at its latest (:attr:`answered`): the log bounds the moment the provider
        used them from both sides, and a provider's TTL is a minimum lifetime from the
        last use, so an entry is let expire only when it certainly did.
        """
        return self.clock if self.answered is None else max(self.clock, self.answered)

    def partial(self, block: int, tokens: int) -> int:
        """``tokens`` leading tokens of ``block`` (counted in its token array), on ``offsets``.

        The token arrays are the local encoding's; when the offsets are calibrated, a run
        inside a block is scaled by that block's calibrated size.
        """
        local = self.local_offsets
        if local is None or block + 1 >= len(local):
            return tokens
        size_local = local[block + 1] - local[block]
        size = self.offsets[block + 1] - self.offsets[block]
        if tokens >= size_local or size_local <= 0:
            return size
        return min(size, round(tokens * size / size_local))


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


class HandBuilt:
    """Requests built by hand from token blocks, to teach a simulator or test it.

    Examples
    --------
    >>> from cacheviz.providers.vllm import VLLMSimulator
    >>> build = HandBuilt()
    >>> shared = list(range(40))
    >>> calls = [build.call(0, [shared, [900] * 8]), build.call(1, [shared, [901] * 10])]
    >>> [r.cache_read_tokens for r in VLLMSimulator().run(calls)]
    [0, 32]
    """

    def __init__(self) -> None:
        self._tokens: dict[str, array[int]] = {}

    def call(
        self,
        index: int,
        blocks: Sequence[Sequence[int]],
        *,
        clock: float | None = None,
        model: str = "model",
        parts: Sequence[str] | None = None,
        roles: Sequence[str | None] | None = None,
        breakpoints: Sequence[Breakpoint] = (),
        output_tokens: int | None = None,
        thread: str = "main",
        **params: Any,
    ) -> SimCall:
        """One request whose blocks are the given token-id runs (identical runs share a hash).

        ``clock`` defaults to ``index`` seconds; ``params`` become the request's params.
        """
        arrays = [array("i", block) for block in blocks]
        hashes = [hashlib.sha1(a.tobytes()).hexdigest() for a in arrays]
        self._tokens.update(zip(hashes, arrays, strict=True))
        chain, state = [], b""
        for digest in hashes:
            state = hashlib.sha256(state + digest.encode()).digest()
            chain.append(state)
        return SimCall(
            index=index,
            thread=thread,
            ts=None,
            model=model,
            hashes=hashes,
            chain=chain,
            offsets=[0, *accumulate(len(a) for a in arrays)],
            parts=list(parts) if parts else ["messages"] * len(arrays),
            roles=list(roles) if roles else ["user"] * len(arrays),
            tokens=self._tokens.__getitem__,
            breakpoints=list(breakpoints),
            auto_breakpoint=None,
            params=params,
            output_tokens=output_tokens,
            reported=None,
            clock=float(index) if clock is None else clock,
        )


class Simulator(Protocol):
    """A provider's caching rules."""

    provider: str

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay ``calls`` (in request-time order); one result per call, same order."""
        ...
