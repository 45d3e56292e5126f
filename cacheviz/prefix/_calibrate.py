"""Calibration: map each call's rebuilt (local-tokenizer) token axis onto the provider's.

cacheviz counts a request with a local encoding (``o200k_base`` where the model's own
tokenizer is not public) over what the log holds. The provider counts its own tokens over
what it was sent, which includes parts a log leaves out (a system prompt's dynamic tail,
tool schemas, injected reminders and attachments). Wherever a call reports usage, its
inclusive input is the true size of the request; calibration maps every position of the
rebuilt request onto that axis, so that every token figure (input, prefix line, expected
read, simulated reads and writes, drift tokens lost, miss tokens) is in provider tokens.

Anchors, per thread (docs/analysis.md, "Calibration"):

* the first call of a thread: its unlogged prefix was already sized as the reported
  input minus the visible blocks, so its axis is the local one; without an unlogged
  prefix, the local count is scaled uniformly onto the reported input;
* every later call: the part it shares with the thread's previous call (at least the
  head - unlogged prefix, tools, system - when it is the same) keeps that call's
  calibrated positions (the same tokens are at the same place); what it adds beyond it
  is mapped linearly onto the growth in provider tokens, its reported input minus the
  calibrated position where the shared part ends. What the provider counted and the log
  does not show (a reminder, an attachment) is attributed to the blocks it rides on;
* a call whose reported input is smaller than the part it shares (old tool results
  cleared, history the log still shows but that was not sent) keeps its head (unlogged
  prefix, tools, system) where it was and scales its messages onto the rest of its
  reported input (uniformly when even the head does not fit), marked ``rescaled``;
* a call without reported usage keeps the shared part and scales its new part by the
  thread's latest growth rate (else the session's median, else 1): ``estimated``.

The functions here work on plain lists, so they are tested against an independent
computation (tests/test_calibrate.py).
"""

from __future__ import annotations

import statistics
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# how each call's token figures were obtained (the ``token_basis`` column)
CALIBRATED = "calibrated"  # the reported input anchors the call; positions mapped onto it
RESCALED = "rescaled"  # reported input below the shared part: scaled uniformly onto it
EXACT = "exact"  # no usage reported, the model's own tokenizer over the bytes sent
ESTIMATED = "estimated"  # no usage reported: the local count at the thread's rate
BASES = (CALIBRATED, RESCALED, EXACT, ESTIMATED)


@dataclass(slots=True)
class Calibration:
    """Per call: provider-token offsets (same shape as the local ones) and their basis."""

    offsets: list[list[int]]
    basis: list[str]
    rates: list[float | None]  # provider tokens per local token of the call's new part

    def at(self, call: int, local_offsets: Sequence[int], position: int) -> int:
        """The provider-token position of local ``position`` in ``call``."""
        return map_position(local_offsets, self.offsets[call], position)


def map_position(local: Sequence[int], mapped: Sequence[int], position: int) -> int:
    """Piecewise-linear map of a local position through block offsets ``local → mapped``.

    Examples
    --------
    >>> map_position([0, 10, 20], [0, 30, 40], 5)
    15
    >>> map_position([0, 10, 20], [0, 30, 40], 20)
    40
    """
    if position <= 0:
        return 0
    if position >= local[-1]:
        return mapped[-1]
    j = bisect_right(local, position) - 1
    while j > 0 and local[j] == local[j - 1]:
        j -= 1
    start, end = local[j], local[j + 1] if j + 1 < len(local) else local[j]
    if end <= start:
        return mapped[j]
    low, high = mapped[j], mapped[min(j + 1, len(mapped) - 1)]
    return round(low + (high - low) * (position - start) / (end - start))


def _mapped(
    own: Sequence[int],
    upto: int,
    prev_local: Sequence[int] | None,
    prev_mapped: Sequence[int] | None,
    base: int,
    rate: float,
    total: int,
) -> list[int]:
    """``own``'s offsets mapped: up to ``upto`` through the previous call's map, then linearly.

    Offsets past ``upto`` go to ``base + (o - upto) * rate``; the result is rounded,
    non-decreasing and ends at ``total``. The leading blocks a call shares with the
    previous one have the same local offsets, so their mapped offsets are copied.
    """
    k = bisect_right(own, upto) if prev_mapped is not None else 0
    if k and prev_local is not None and prev_mapped is not None:
        if prev_local[:k] == own[:k]:
            head = list(prev_mapped[:k])
            if head[-1] > total:
                head = [min(v, total) for v in head]
        else:
            head = [min(map_position(prev_local, prev_mapped, o), total) for o in own[:k]]
    else:
        head = []
    last = head[-1] if head else 0
    out = head
    for o in own[k:]:
        last = max(last, min(round(base + (o - upto) * rate), total))
        out.append(last)
    if out:
        out[-1] = total
    return out


def _monotone(values: list[float], total: int) -> list[int]:
    """Rounded, non-decreasing, ending exactly at ``total``."""
    out: list[int] = []
    last = 0
    for value in values:
        last = max(last, min(round(value), total))
        out.append(last)
    if out:
        out[-1] = total
    return out


def calibrate(
    local: Sequence[Sequence[int]],
    reported: Sequence[int | None],
    previous: Sequence[int | None],
    common: Sequence[int | None],
    exact: Sequence[bool] | None = None,
    threads: Sequence[str] | None = None,
    heads: Sequence[int] | None = None,
) -> Calibration:
    """Map every call's local block offsets onto the provider's token axis.

    Parameters
    ----------
    local
        Per call, the cumulative local token counts before each block, then the total.
    reported
        Per call, the reported inclusive input (``None``: not reported).
    previous
        Per call, the index of the thread's previous call (``None``: first of its thread).
        Calls must come after their predecessor.
    common
        Per call, the local tokens it shares with that previous call.
    exact
        Per call, whether the local count is the model's own tokenizer over the bytes
        sent (calls without usage are then ``exact``, not ``estimated``).
    threads
        Per call, its thread (for the growth rate of calls without usage).
    heads
        Per call, the local offset where its messages start (the unlogged prefix, tools
        and system before it): kept in place when a request shrinks.

    Returns
    -------
    Calibration
    """
    n = len(local)
    offsets: list[list[int]] = []
    basis: list[str] = []
    rates: list[float | None] = []
    seen_rates = [
        rate
        for rate in (reported_rate(r, local[i][-1]) for i, r in enumerate(reported))
        if rate is not None
    ]
    default_rate = median_rate(seen_rates)
    thread_rate: dict[str, float] = {}
    for i in range(n):
        before = previous[i]
        head = heads[i] if heads is not None else None
        mapped, kind, rate_used, _ = calibrate_call(
            local,
            offsets,
            i,
            before,
            common[i],
            reported[i],
            bool(exact[i]) if exact is not None else False,
            head,
            heads[before] if heads is not None and before is not None else None,
            thread_rate,
            threads[i] if threads is not None else "",
            default_rate,
        )
        offsets.append(mapped)
        basis.append(kind)
        rates.append(rate_used)
    return Calibration(offsets, basis, rates)


# A call's reported input above this many times its local count, by at least MIN_GAP
# tokens: a log missing most of the request, or a corrupt report. On real sessions the
# ratio stays within 0.78-2.6 (docs/analysis.md, "Calibration"). A report far below the
# local count is the documented ``rescaled`` case (history the log shows, not sent).
MAX_FACTOR = 10.0
MIN_GAP = 1000


def disagreements(
    local_totals: Sequence[int], reported: Sequence[int | None]
) -> list[tuple[int, float]]:
    """The calls whose reported input is more than :data:`MAX_FACTOR` times their local count.

    Calibration scales such a call's positions by that factor all the same (the reported
    input is what was billed); the caller warns, naming them.

    Returns
    -------
    list of (call, factor)
        ``factor`` is reported / local (``inf`` when the log holds no token of it).

    Examples
    --------
    >>> disagreements([100, 12, 3000, 50_000], [16500, 60, 3100, 900])
    [(0, 165.0)]
    """
    out = []
    for i, (local, got) in enumerate(zip(local_totals, reported, strict=True)):
        if got is None or got - local < MIN_GAP:
            continue
        if local <= 0 or got / local > MAX_FACTOR:
            out.append((i, got / local if local > 0 else float("inf")))
    return out


def reported_rate(reported: int | None, local_total: int) -> float | None:
    """A call's reported inclusive input per local token (``None``: nothing to divide).

    Shared by :func:`calibrate` and :class:`cacheviz.live._incremental.LiveLog`.
    """
    return reported / local_total if reported is not None and local_total else None


def median_rate(rates: Sequence[float]) -> float:
    """The session's rate for a call without usage: the median of its calls' rates.

    ``rates`` are the :func:`reported_rate` of the calls that have one (1.0 when none
    does). Shared by :func:`calibrate` and :class:`cacheviz.live._incremental.LiveLog`.

    Examples
    --------
    >>> median_rate([1.0, 1.25, 1.5, 2.0])
    1.375
    >>> median_rate([])
    1.0
    """
    return statistics.median(rates) if rates else 1.0


def calibrate_call(
    local: Sequence[Sequence[int]],
    offsets: Sequence[list[int]],
    i: int,
    before: int | None,
    common: int | None,
    reported: int | None,
    is_exact: bool,
    head: int | None,
    head_before: int | None,
    thread_rate: dict[str, float],
    key: str,
    default_rate: float,
) -> tuple[list[int], str, float | None, bool]:
    """One call of :func:`calibrate`: its provider-token offsets, basis and rate.

    ``offsets`` holds the calibrated offsets of the calls before ``i``; ``head`` and
    ``head_before`` are where the messages of call ``i`` and of ``before`` start (``None``:
    not known); ``thread_rate`` (thread ``key``'s latest reported rate) is updated.
    The last value returned says whether ``default_rate`` was used.

    Returns
    -------
    tuple
        Offsets, basis, rate (``None``: nothing grew), whether the default rate was used.
    """
    own = list(local[i])
    total_local = own[-1]
    shared = 0 if before is None else max(0, min(common or 0, total_local))
    if before is not None and head is not None and shared < head == head_before:
        shared = head  # the same head (a model switch shares no cache, not its size)
    anchor = 0
    if before is not None and shared:
        anchor = map_position(local[before], offsets[before], shared)
    grown = total_local - shared
    target = reported
    used_default = False
    if target is None:
        used_default = not is_exact and key not in thread_rate
        rate = 1.0 if is_exact else thread_rate.get(key, default_rate)
        target = anchor + round(grown * rate)
        kind = EXACT if is_exact else ESTIMATED
    else:
        kind = CALIBRATED
    rate_used: float | None
    prev_local = local[before] if before is not None else None
    prev_mapped = offsets[before] if before is not None else None
    if grown > 0 and target >= anchor:
        rate_used = (target - anchor) / grown
        mapped = _mapped(own, shared, prev_local, prev_mapped, anchor, rate_used, target)
    elif grown == 0 and target == anchor:
        rate_used = None
        mapped = _mapped(own, shared, prev_local, prev_mapped, anchor, 0.0, target)
    else:
        # the request is smaller than the part it shares: keep the head (the unlogged
        # prefix, system and tools) where it was when it fits, scale the rest onto it
        keep = min(shared, head if head is not None else 0)
        kept = 0
        if prev_local is not None and prev_mapped:
            kept = map_position(prev_local, prev_mapped, keep)
        if keep and kept <= target and total_local > keep:
            rate_used = (target - kept) / (total_local - keep)
            mapped = _mapped(own, keep, prev_local, prev_mapped, kept, rate_used, target)
        else:
            rate_used = target / total_local if total_local else None
            mapped = _monotone([o * (rate_used or 0.0) for o in own], target)
        if kind == CALIBRATED:
            kind = RESCALED
    if rate_used is not None and grown > 0 and reported is not None:
        thread_rate[key] = rate_used
    return mapped, kind, rate_used, used_default


def unlogged_versions(
    threads: Sequence[str],
    unlogged: Sequence[int | None],
    offered: Sequence[int | None],
    read: Sequence[int | None],
    gaps: Sequence[float | None],
    ttls: Sequence[float | None],
    material: Callable[[int, int], bool],
) -> list[int]:
    """Per call: which version of its thread's unlogged prefix it sent (0, 1, 2, ...).

    The log does not hold the unlogged prefix, so whether it changed is read from the
    provider's answer: a call whose reported read stops inside it (``0 <= read <=
    unlogged < offered``: a read of 0 says even its head changed; a ``material(offered,
    read)`` shortfall) within the TTL (the
    gap since the thread's previous call is at most ``ttls[i]``: the thread's TTL, or the
    shortest any provider keeps an entry) sent a new version of it, and so does every
    later call of the thread.
    """
    version: dict[str, int] = {}
    return [
        next_version(version, thread, unlogged[i], offered[i], read[i], gaps[i], ttls[i], material)
        for i, thread in enumerate(threads)
    ]


def next_version(
    version: dict[str, int],
    thread: str,
    hidden: int | None,
    line: int | None,
    got: int | None,
    gap: float | None,
    ttl: float | None,
    material: Callable[[int, int], bool],
) -> int:
    """One call of :func:`unlogged_versions`: ``version`` (per thread) is updated."""
    if hidden and line is not None and got is not None and 0 <= got <= hidden < line:
        fresh = gap is not None and gap <= (ttl or 0)
        if fresh and material(line, got):
            version[thread] = version.get(thread, 0) + 1
    return version.get(thread, 0)


__all__ = [
    "BASES",
    "Calibration",
    "calibrate",
    "calibrate_call",
    "disagreements",
    "map_position",
    "median_rate",
    "next_version",
    "reported_rate",
    "unlogged_versions",
]
