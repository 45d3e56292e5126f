"""Alibaba Cloud Model Studio (Qwen / DashScope) context cache (providers.md §5.4 and §7).

``explicit`` (the default: what Qwen Code sends). Qwen Code's DashScope provider marks
``cache_control: {"type": "ephemeral"}`` on the system message, the last tool and the
latest message of every streamed request (header ``X-DashScope-CacheControl: enable``;
QwenLM/qwen-code ``provider/dashscope.ts``). §5.4's explicit cache: each marker looks
back up to ``lookback`` content blocks for an entry an earlier request wrote and reads
the longest (0.1x input); an entry lives ``ttl_seconds`` (5 minutes), reset on a hit;
a request whose marked prefix reaches ``min_tokens`` (1,024) writes it (1.25x input),
the part past what it read.

``implicit`` (``mode="implicit"``: a client that marks nothing). Automatic, cannot be
turned off, no write fee, a hit at 0.2x input: the rule of
:class:`~cacheviz.providers._implicit.ImplicitPrefixSimulator` (§7: "Qwen implicit:
automatic LCP against live entries"), token-exact above a 256-token minimum.

Approximations:

- The markers are placed as Qwen Code places them, whatever the request recorded: the
  end of the system part and of the whole request (the tools come first in a rebuilt
  request, before the system, so the request's end covers them) [U].
- Implicit: the minimum is 256 on the English page (2026-03-31), 1,024 in a newer
  Chinese copy [C]; granularity undocumented (token-exact) and the TTL "not
  guaranteed; periodically cleared" (5 minutes) [U].
- Qwen Code's logs carry the reads (``cachedContentTokenCount``) but not the writes,
  so a billed figure counts written tokens as uncached input (0.25x short on them) [U].

Prices: genai-prices has no Alibaba list; the overlay holds DashScope's prices, tiered
by prompt size (LiteLLM's ``dashscope/`` entries, from
alibabacloud.com/help/en/model-studio/models), and writes at 1.25x input. Qwen Code's
``coder-model`` (Qwen OAuth's free tier) has no per-token price: listed as unpriced,
with the overlay's reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._cache import Entry, EntryStore
from cacheviz.providers._implicit import ImplicitPrefixSimulator
from cacheviz.providers._profile import ProviderProfile

MODES = ("explicit", "implicit")


@dataclass
class QwenSimulator:
    """DashScope's context cache; every parameter defaults to the spec.

    Parameters
    ----------
    mode
        ``explicit`` (Qwen Code's markers) or ``implicit`` (no markers).
    min_tokens
        The smallest prefix cached: explicit 1,024; implicit 256 [C].
    ttl_seconds
        Explicit: an entry's lifetime, reset on a hit (5 minutes). Implicit: a cached
        prompt's lifetime after its last use [U].
    lookback
        Explicit: content blocks a marker looks back for an earlier entry.
    """

    mode: str = "explicit"
    min_tokens: int | None = None
    ttl_seconds: float = 300.0
    lookback: int = 20
    provider: str = "qwen"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            msg = f"mode={self.mode!r}; expected one of {', '.join(MODES)}"
            raise ValueError(msg)

    def minimum(self) -> int:
        """The smallest prefix the mode caches (``min_tokens`` when given)."""
        if self.min_tokens is not None:
            return self.min_tokens
        return EXPLICIT_MIN_TOKENS if self.mode == "explicit" else IMPLICIT_MIN_TOKENS

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the rules."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken."""
        if self.mode == "implicit":
            implicit = ImplicitPrefixSimulator(
                min_tokens=self.minimum(), ttl_seconds=self.ttl_seconds, provider=self.provider
            )
            yield from implicit.stream(calls)
            return
        stores: dict[str, EntryStore] = {}
        for call in calls:
            yield self._explicit(call, stores.setdefault(call.model, EntryStore()))

    def _explicit(self, call: SimCall, store: EntryStore) -> CallResult:
        now, n = call.clock, len(call.hashes)
        system = 0
        while system < n and call.parts[system] in ("tools", "system"):
            system += 1
        marks = sorted({m for m in (system, n) if m > 0})
        best: Entry | None = None
        for mark in marks:  # each marker reads the nearest entry within its lookback
            for j in range(mark, max(0, mark - self.lookback), -1):
                entry = store.get(call.chain[j - 1], now)
                if entry is not None:
                    if best is None or entry.tokens > best.tokens:
                        best = entry
                    break
        hit = 0 if best is None else best.tokens
        if best is not None:
            store.touch(best, now)
        minimum, written = self.minimum(), 0
        for mark in marks:
            size = call.offsets[mark]
            if size >= minimum and size > hit and store.get(call.chain[mark - 1], now) is None:
                store.put(call.chain[mark - 1], size, now, self.ttl_seconds, written_by=call.index)
                written = max(written, size - hit)
        parts = [] if best is None else [f"read the entry call #{best.written_by} wrote"]
        if written:
            parts.append(f"wrote {written} tokens at the markers")
        if not parts:
            parts.append(f"no entry, and the marked prefix is below the {minimum}-token minimum")
        return CallResult(
            input_tokens=call.total,
            cache_read_tokens=hit,
            cache_write_tokens=written,
            detail="explicit: " + "; ".join(parts),
        )


EXPLICIT_MIN_TOKENS = 1024
IMPLICIT_MIN_TOKENS = 256


def _min_tokens(model: str) -> int:
    return EXPLICIT_MIN_TOKENS


PROFILE = ProviderProfile(
    id="qwen",
    label="Alibaba Qwen (DashScope)",
    module="qwen",
    simulator="QwenSimulator",
    aliases=("dashscope", "alibaba", "qwencloud"),
    model_prefixes=("qwen",),
    default_ttl_seconds=QwenSimulator.ttl_seconds,
    min_tokens=_min_tokens,
    reference_model="qwen3-coder-plus",
    compared=False,
)
