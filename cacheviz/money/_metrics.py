"""One definition each of the session's headline numbers: waste and hit ratio.

The CLI, ``summary --json``, the inspector, the HTML report, ``scan`` and ``check`` all
take these from here, so the same session shows the same numbers everywhere.

Waste
    What the session cost beyond its ideal, summed per call, never negative. When any call
    has a billed cost (the provider's own usage, priced), waste is ``billed - ideal`` over
    the calls with a billed cost (and an ideal): billed and ideal are summed over those
    same calls, and the calls without reported usage are excluded (counted, and said).
    When no call has a billed cost, it is ``simulated - ideal`` over the calls that have
    both. :class:`Waste` holds the figure with the sums it is the difference of.
Hit ratio
    Over the calls whose provider reported cache fields: token-weighted (cache-read
    tokens ÷ inclusive input tokens) and request-weighted (the share of those calls that
    read anything). ``None`` (shown ``n/a``, never 0 %) when no call reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cacheviz._schema import hit_ratio as token_hit_ratio  # the per-call definition


def call_waste(
    billed: float | None,
    simulated: float | None,
    ideal: float | None,
    *,
    billed_basis: bool | None = None,
) -> float | None:
    """One call's waste, never negative (``None``: the call does not count).

    ``billed_basis`` says whether the session is on the billed basis (some call has a
    billed cost: :func:`waste_basis`); ``None`` takes this call's own (billed when it
    has a billed cost). On the billed basis, a call without a billed cost does not count.

    Examples
    --------
    >>> call_waste(0.30, 0.25, 0.10)
    0.2
    >>> call_waste(None, 0.25, 0.10)
    0.15
    >>> call_waste(None, 0.25, 0.10, billed_basis=True) is None
    True
    >>> call_waste(0.05, None, 0.10)
    0.0
    >>> call_waste(None, None, 0.10) is None
    True
    """
    on_billed = billed is not None if billed_basis is None else billed_basis
    spent = billed if on_billed else simulated
    if spent is None or ideal is None:
        return None
    return round(max(0.0, spent - ideal), 12)


def waste_basis(billed: Sequence[float | None]) -> bool:
    """Whether waste is on the billed basis: some call has a billed cost."""
    return any(b is not None for b in billed)


@dataclass(frozen=True, slots=True)
class Waste:
    """The session's waste and the sums it is the difference of.

    ``usd`` is the per-call waste summed (``None`` when no call counts); ``spent_usd`` and
    ``ideal_usd`` are the billed (``basis == "billed"``) or simulated cost and the ideal,
    summed over the same ``calls`` counted; ``excluded`` calls have no billed cost on the
    billed basis (no usage reported) or miss a cost to compare.
    """

    usd: float | None
    basis: str
    spent_usd: float | None
    ideal_usd: float | None
    calls: int
    excluded: int

    def to_dict(self) -> dict[str, float | int | str | None]:
        """``{"basis", "spent_usd", "ideal_usd", "calls", "excluded"}`` for JSON documents."""
        return {
            "basis": self.basis,
            "spent_usd": self.spent_usd,
            "ideal_usd": self.ideal_usd,
            "calls": self.calls,
            "excluded": self.excluded,
        }

    def text(self, usd: Callable[[float | None], str]) -> str:
        """``waste $X = billed $A - ideal $B of the N calls with ...`` (one line, a minus sign)."""
        if self.usd is None:
            return "waste n/a"
        what = "with reported usage" if self.basis == "billed" else "simulated"
        line = (
            f"waste {usd(self.usd)} = {self.basis} {usd(self.spent_usd)} − ideal "
            f"{usd(self.ideal_usd)} of the {self.calls} call(s) {what}"
        )
        if self.usd > (self.spent_usd or 0.0) - (self.ideal_usd or 0.0) + 5e-7:
            line += ", summed per call, none below 0"
        if self.excluded:
            why = "without a billed cost" if self.basis == "billed" else "without a cost"
            line += f" ({self.excluded} call(s) {why} excluded)"
        return line


def waste_usd(
    billed: Sequence[float | None],
    simulated: Sequence[float | None],
    ideal: Sequence[float | None],
) -> float | None:
    """The session's waste (:class:`Waste` ``usd``; ``None`` when no call counts)."""
    return waste_of(billed, simulated, ideal).usd


def waste_of(
    billed: Sequence[float | None],
    simulated: Sequence[float | None],
    ideal: Sequence[float | None],
) -> Waste:
    """The session's :class:`Waste`: its figure, basis and sums."""
    found = WasteSum()
    found.add(billed, simulated, ideal)
    return found.waste()


class WasteSum:
    """:func:`waste_of` of calls added a few at a time (the live inspector's header).

    Shared by :func:`waste_of`: the same calls give the same sums, whichever way added.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[float | None, float | None, float | None]] = []
        """Each call's billed, simulated and ideal cost, in call order."""

    def add(
        self,
        billed: Sequence[float | None],
        simulated: Sequence[float | None],
        ideal: Sequence[float | None],
    ) -> None:
        """Add the next calls: their billed, simulated and ideal costs."""
        self.calls += zip(billed, simulated, ideal, strict=True)

    def total(self) -> float | None:
        """The waste of the calls added (``None`` when no call counts)."""
        return self.waste().usd

    def waste(self) -> Waste:
        """The :class:`Waste` of the calls added."""
        on_billed = any(b is not None for b, _, _ in self.calls)
        values: list[float] = []
        spent = best = 0.0
        for b, s, i in self.calls:
            w = call_waste(b, s, i, billed_basis=on_billed)
            if w is None:
                continue
            values.append(w)
            spent += b if on_billed else s  # type: ignore[operator]
            best += i  # type: ignore[operator]
        counted = len(values)
        return Waste(
            usd=float(sum(values)) if values else None,
            basis="billed" if on_billed else "simulated",
            spent_usd=spent if counted else None,
            ideal_usd=best if counted else None,
            calls=counted,
            excluded=len(self.calls) - counted,
        )


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
    "Waste",
    "WasteSum",
    "call_waste",
    "hit_ratio",
    "percent",
    "waste_basis",
    "waste_of",
    "waste_usd",
]
