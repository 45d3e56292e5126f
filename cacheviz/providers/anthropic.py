"""Anthropic prompt caching (Claude API; providers.md §1 and §7).

Breakpoints come from the request (``recorded``: ``cache_control`` on blocks, top-level
automatic caching) or from a what-if strategy: ``auto`` (end of tools, end of system,
the last two messages), ``kilocode`` (the first two system blocks and the last two
messages, as KiloCode's ``applyCaching`` does) or ``none``. At most 4 are used.

For each breakpoint, from the last: the lookup checks the prefix ending at that block,
then walks back one block at a time (20 positions in all) for an entry an earlier request
*wrote* there. The hit entry's TTL restarts at this request's start. Each breakpoint past
the hit whose prefix reaches the model's minimum writes an entry. Billing positions
(A = hit, B = last 1h write, C = last write): read ``T(A)``, 1h write ``T(B) - T(A)``,
5m write ``T(C) - T(B)``, the rest uncached.

Approximations: a breakpoint on a content part inside a message is taken at the end of
that message (cacheviz's blocks are whole messages), and the 20-position lookback
counts blocks (tool definitions, system blocks, messages) [§8 open point 1]. Only the
hit entry is refreshed. Requests rebuilt from conversation logs, and requests recorded
with another provider, have no Anthropic breakpoints: ``recorded`` falls back to
``auto`` for them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cacheviz.providers._base import Breakpoint, CallResult, SimCall
from cacheviz.providers._cache import EntryStore
from cacheviz.providers._profile import HistoryFix, LongerTTL, ProviderProfile

STRATEGIES = ("recorded", "auto", "kilocode", "none")
TTLS = {"5m": 300, "1h": 3600}
MAX_BREAKPOINTS = 4
LOOKBACK = 20
# Minimum cacheable prompt by model (prompt-caching.md, 2026-08-21); first match wins.
MIN_TOKENS = (
    ("mythos-preview", 2048),
    ("opus-5", 512),
    ("fable-5", 512),
    ("mythos-5", 512),
    ("opus-4-7", 2048),
    ("opus-4-6", 4096),
    ("opus-4-5", 4096),
    ("haiku-4-5", 4096),
    ("haiku-3-5", 2048),
    ("haiku", 2048),
)
DEFAULT_MIN_TOKENS = 1024  # Opus 4.8, Sonnet 5 / 4.6 / 4.5 / 4, Opus 4.1 / 4


def automatic_ttl(directive: dict[str, Any]) -> int:
    """Seconds of TTL of top-level automatic caching (``cache_control: {"ttl": ...}``).

    >>> automatic_ttl({"type": "ephemeral"}), automatic_ttl({"ttl": "1h"})
    (300, 3600)
    """
    return TTLS.get(str(directive.get("ttl", "5m")), TTLS["5m"])


def min_tokens_for(model: str) -> int:
    """The minimum cacheable prefix for a Claude model.

    Examples
    --------
    >>> min_tokens_for("claude-haiku-4-5-20251001"), min_tokens_for("claude-sonnet-4-5")
    (4096, 1024)
    """
    name = model.lower().replace(".", "-")
    return next((n for needle, n in MIN_TOKENS if needle in name), DEFAULT_MIN_TOKENS)


def _salt(call: SimCall) -> bytes:
    """Render parameters that change the messages-level cache (tool_choice, thinking, ...)."""
    keys = ("tool_choice", "thinking", "disable_parallel_tool_use", "output_config")
    params = {k: call.params[k] for k in keys if k in call.params}
    if not params:
        return b""
    return hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).digest()[:8]


def _first(parts: list[str], part: str, k: int) -> list[int]:
    """The indexes of the first ``k`` blocks of ``part`` (``list.index``: C speed)."""
    found: list[int] = []
    start = 0
    while len(found) < k:
        try:
            start = parts.index(part, start)
        except ValueError:
            break
        found.append(start)
        start += 1
    return found


def _last(parts: list[str], part: str, k: int) -> list[int]:
    """The indexes of the last ``k`` blocks of ``part``, ascending (a reversed copy's index)."""
    n = len(parts)
    return sorted(n - 1 - i for i in _first(parts[::-1], part, k))


@dataclass
class AnthropicSimulator:
    """Anthropic's caching rules; every parameter defaults to the spec.

    Parameters
    ----------
    breakpoints
        ``recorded``, ``auto``, ``kilocode`` or ``none``.
    ttl
        ``None`` keeps the recorded TTLs (strategies use 5m); ``"5m"`` or ``"1h"``
        overrides every breakpoint's TTL.
    min_tokens
        Override the model's minimum cacheable prefix.
    lookback
        Positions checked per breakpoint (the breakpoint counts as the first).
    """

    breakpoints: str = "recorded"
    ttl: str | None = None
    min_tokens: int | None = None
    lookback: int = LOOKBACK
    provider: str = "anthropic"

    def __post_init__(self) -> None:
        if self.breakpoints not in STRATEGIES:
            msg = f"breakpoints={self.breakpoints!r}; expected one of {', '.join(STRATEGIES)}"
            raise ValueError(msg)
        if self.ttl is not None and self.ttl not in TTLS:
            msg = f"ttl={self.ttl!r}; expected one of {', '.join(TTLS)} or None"
            raise ValueError(msg)

    def _breakpoints(self, call: SimCall) -> tuple[list[Breakpoint], str]:
        n = len(call.hashes)
        strategy = self.breakpoints
        if strategy == "recorded" and (
            call.reconstructed or call.provider not in ("", self.provider)
        ):
            strategy = "auto"  # no breakpoints were recorded (a rebuilt or non-Anthropic call)
        default = TTLS[self.ttl] if self.ttl else (call.ttl_hint or TTLS["5m"])
        if strategy == "none" or n == 0:
            return [], strategy
        if strategy == "recorded":
            found = list(call.breakpoints)
            if call.auto_breakpoint is not None:
                found.append(Breakpoint(n - 1, call.auto_breakpoint))
        else:
            parts = list(call.parts)
            if strategy == "auto":
                chosen = [_last(parts, "tools", 1), _last(parts, "system", 1)]
            else:  # kilocode
                chosen = [_first(parts, "system", 2)]
            chosen.append(_last(parts, "messages", 2))
            found = [Breakpoint(i, default) for group in chosen for i in group]
        unique = sorted({b.block: b for b in found}.values(), key=lambda b: b.block)
        if self.ttl is not None:
            unique = [Breakpoint(b.block, default) for b in unique]
        return unique[:MAX_BREAKPOINTS], strategy

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the algorithm."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken.

        The live inspector feeds the calls as they are logged (:mod:`cacheviz.live._incremental`).
        """
        store = EntryStore()
        for call in calls:
            yield self._one(call, store)

    def _one(self, call: SimCall, store: EntryStore) -> CallResult:
        points, strategy = self._breakpoints(call)
        salt = _salt(call)

        def key(i: int) -> tuple[bytes, bytes, str]:
            # a cache is per model: another model never reads this entry
            return (call.chain[i], salt if call.parts[i] == "messages" else b"", call.model)

        now, used = call.clock, call.refreshed
        hit = -1
        for point in reversed(points):
            for i in range(point.block, max(-1, point.block - self.lookback), -1):
                entry = store.get(key(i), now)
                if entry is not None:
                    hit = i
                    store.touch(entry, used)
                    break
            if hit >= 0:
                break
        minimum = self.min_tokens if self.min_tokens is not None else min_tokens_for(call.model)
        read = call.offsets[hit + 1] if hit >= 0 else 0
        warm = call.warm_tokens if points and call.warm_tokens <= call.total else 0
        if read < warm:
            read = warm  # the shared static head, warm before the session (its first read)
        written: list[Breakpoint] = []
        for point in points:
            length = call.offsets[point.block + 1]
            if length > read and length >= minimum:
                store.put(key(point.block), length, used, point.ttl_seconds, written_by=call.index)
                written.append(point)
        b_tokens = read
        long_ones = [p for p in written if p.ttl_seconds >= TTLS["1h"]]
        if long_ones:
            b_tokens = call.offsets[long_ones[-1].block + 1]
        c_tokens = call.offsets[written[-1].block + 1] if written else read
        detail = f"{strategy}: {len(points)} breakpoint(s)"
        if hit >= 0 and read > warm:
            detail += f", hit at block {hit}"
        elif warm and read == warm:
            detail += f", {warm:,} tokens warm before the session (its first reported read)"
        if points and not written and call.offsets[points[-1].block + 1] < minimum:
            detail += f", below the {minimum}-token minimum"
        return CallResult(
            input_tokens=call.total,
            cache_read_tokens=read,
            cache_write_tokens=c_tokens - read,
            cache_write_1h_tokens=b_tokens - read,
            detail=detail,
        )


PROFILE = ProviderProfile(
    id="anthropic",
    label="Anthropic",
    module="anthropic",
    simulator="AnthropicSimulator",
    aliases=("claude",),
    model_prefixes=("claude",),
    ttls=TTLS,
    default_ttl_seconds=TTLS["5m"],
    longer_ttl=LongerTTL({"ttl": "1h"}, "cache_control ttl '1h'"),
    explicit_breakpoints=True,
    # speed changes the system prompt's cache; the rest invalidate from the messages on
    keyed_params=(
        ("system", ("speed",)),
        ("messages", ("tool_choice", "disable_parallel_tool_use", "thinking", "output_config")),
    ),
    min_tokens=min_tokens_for,
    reference_model="claude-sonnet-4-5",
    api="messages",
    rule_choices={"ttl": tuple(TTLS), "breakpoints": STRATEGIES},
    # "cache writes happen only at your breakpoint" (providers.md §1.1)
    only_at_breakpoints=lambda call: True,
    history_fix=HistoryFix({"breakpoints": "auto"}, "breakpoints on the last messages"),
)
