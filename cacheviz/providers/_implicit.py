"""Automatic prefix caching with no write fee: the rule several vendors share (providers.md §7).

"xAI / Mistral / Moonshot (K2) / Qwen implicit: automatic LCP against live entries, no
write fee, read at the model's cached rate." A prompt below ``min_tokens`` gets no hit;
otherwise ``hit`` is the longest common prefix with the live prompts of the same model,
floored to a multiple of ``unit_tokens``. Every prompt is cached at its start and lives
``ttl_seconds`` after the last prompt that re-sent it. :mod:`cacheviz.providers.moonshot`
and :mod:`cacheviz.providers.xai` set its defaults; :mod:`cacheviz.providers.qwen` runs
it in its ``implicit`` mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._cache import LivePrompts


@dataclass
class ImplicitPrefixSimulator:
    """Automatic longest-common-prefix caching, per model, with a TTL.

    Parameters
    ----------
    unit_tokens
        Hits are floored to a multiple of it (1: token-exact).
    min_tokens
        A prompt shorter than this gets no hit.
    ttl_seconds
        Lifetime of a cached prompt after its last use.
    """

    unit_tokens: int = 1
    min_tokens: int = 0
    ttl_seconds: float = 300.0
    provider: str = ""

    def __post_init__(self) -> None:
        if self.unit_tokens <= 0 or self.min_tokens < 0 or self.ttl_seconds <= 0:
            msg = (
                f"unit_tokens={self.unit_tokens}, min_tokens={self.min_tokens}, "
                f"ttl_seconds={self.ttl_seconds}; expected unit and TTL above 0, minimum 0 or more"
            )
            raise ValueError(msg)

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the rule."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken."""
        prompts: dict[str, LivePrompts] = {}
        for call in calls:
            live = prompts.get(call.model)
            if live is None:
                live = prompts[call.model] = LivePrompts(self.ttl_seconds)
            now = call.clock
            if call.total < self.min_tokens:
                hit = 0
                detail = f"automatic: prompt {call.total} below the {self.min_tokens}-token minimum"
            else:
                shared = live.common(call, now)
                hit = shared // self.unit_tokens * self.unit_tokens
                detail = f"automatic: {shared} tokens shared with a live prompt"
                if hit != shared:
                    detail += f", {hit} in {self.unit_tokens}-token units"
            live.record(call, now, 0.0)
            yield CallResult(input_tokens=call.total, cache_read_tokens=hit, detail=detail)
