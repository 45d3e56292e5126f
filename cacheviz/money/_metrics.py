"""One definition each of the session's headline numbers: waste and hit ratio.

The CLI, ``summary --json``, the inspector, the HTML report, ``scan`` and ``check`` all
take these from here, so the same session shows the same numbers everywhere.

Waste
    What the session cost beyond its ideal: ``billed - ideal`` where a billed cost
    exists (the provider's own usage, priced), else ``simulated - ideal``; never
    negative (the ideal reads at least what the provider actually read, so ideal ≤
    billed call by call). Summed per call over the calls that have both numbers.
Hit ratio
    Over the calls whose provider reported cache fields: token-weighted (cache-read
    tokens ÷ inclusive input tokens) and request-weighted (the share of those calls that
    read anything). ``None`` (shown ``n/a``, never 0 %) when no call reports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cacheviz._schema import hit_ratio as token_hit_ratio  # the per-call definition


def call_waste(billed: float | None, simulated: float | None, ideal: float | None) -> float | None:
    """One call's waste: ``billed - ideal`` (else ``simulated - ideal``), never negative.

    Examples
    --------
    >>> call_waste(0.30, 0.25, 0.10)
    0.2
    >>> call_waste(None, 0.25, 0.10)
    0.15
    >>> call_waste(0.05, None, 0.10)
    0.0
    >>> call_waste(None, None, 0.10) is None
    True
    """
    spent = billed if billed is not None else simulated
    if spent is None or ideal is None:
        return None
    return round(max(0.0, spent - ideal), 12)


def waste_usd(
    billed: Sequence[float | None],
    simulated: Sequence[float | None],
    ideal: Sequence[float | None],
) -> float | None:
    """The session's waste: :func:`call_waste` summed (``None`` when no call has one)."""
    found = WasteSum()
    found.add(billed, simulated, ideal)
    return found.total()


class WasteSum:
    """:func:`waste_usd` of calls added a few at a time (the live inspector's header).

    Shared by :func:`waste_usd`: the same calls give the same sum, whichever way added.
    """

    def __init__(self) -> None:
        self.values: list[float] = []
        """The waste of each call that has one, in call order."""

    def add(
        self,
        billed: Sequence[float | None],
        simulated: Sequence[float | None],
        ideal: Sequence[float | None],
    ) -> None:
        """Add the next calls: their billed, simulated and ideal costs."""
        self.values += [
            w
            for w in map(call_waste, billed, simulated, ideal)
            if w is not None  # a call without either cost adds nothing
        ]

    def total(self) -> float | None:
        """The waste of the calls added (``None`` when no call has one)."""
        return float(sum(self.values)) if self.values else None


@dataclass(frozen=True, slots=True)
class HitRatio:
    """Token-weighted and request-weighted hit ratios (``None``: not reported)."""

    tokens: float | None
    requests: float | None
    calls: int  # calls whose provider reported cache fields

    def to_dict(self) -> dict[str, float | int | None]:
        """``{"tokens", "requests", "calls"}`` for JSON documents."""
        return {"tokens": self.tokens, "requests": self.requests, "calls": self.calls}


def hit_ratio(read: Sequence[int | None], input_tokens: Sequence[int | None]) -> HitRatio:
    """Hit ratios over the calls that report a cache read and an inclusive input.

    Examples
    --------
    >>> hit_ratio([900, 0, None], [1000, 1000, 500])
    HitRatio(tokens=0.45, requests=0.5, calls=2)
    >>> hit_ratio([None], [1000]).tokens is None
    True
    """
    sums = HitRatioSums()
    sums.add(read, input_tokens)
    return sums.ratio()


@dataclass(slots=True)
class HitRatioSums:
    """:func:`hit_ratio`'s sums, of calls added a few at a time (the live inspector's).

    Shared by :func:`hit_ratio`: the same calls give the same ratios, whichever way added.
    """

    read: int = 0
    """Cache-read tokens of the calls that report both counts."""
    total: int = 0
    """Their inclusive input tokens."""
    pairs: int = 0
    """How many calls report both."""
    hits: int = 0
    """How many of those read anything."""

    def add(self, read: Sequence[int | None], input_tokens: Sequence[int | None]) -> None:
        """Add the next calls: their reported cache reads and inclusive inputs."""
        for r, n in zip(read, input_tokens, strict=True):
            if r is not None and n is not None:
                self.read += r
                self.total += n
                self.pairs += 1
                self.hits += r > 0

    def ratio(self) -> HitRatio:
        """The hit ratios of the calls added."""
        if not self.pairs:
            return HitRatio(None, None, 0)
        return HitRatio(token_hit_ratio(self.read, self.total), self.hits / self.pairs, self.pairs)


def percent(value: float | None, digits: int = 0) -> str:
    """``"93 %"``-style text, ``"n/a"`` for ``None`` (never 0 % for "not reported")."""
    return "n/a" if value is None else f"{value:.{digits}%}"


__all__ = [
    "HitRatio",
    "HitRatioSums",
    "WasteSum",
    "call_waste",
    "hit_ratio",
    "percent",
    "waste_usd",
]
