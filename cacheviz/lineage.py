"""Group calls into lineages: chains of requests that build on each other's cache.

A drift is judged only against earlier calls of the same lineage, so side calls (title
generation, quota probes) and sub-agents must not be mixed with the main thread.

Modes
-----
``auto`` (default)
    The transcript's own lineage (``meta.lineage``, or ``meta.session``/``meta.agent``)
    when it gives one. Otherwise a call joins the lineage of the same model whose latest
    call shares the most of its tokens (by block hash, order ignored), provided the
    shared part is at least half of the smaller request; else it starts a new lineage.
    Unlike a strict hash of tools+system, this keeps a main thread together when its
    system prompt carries a timestamp or its tools are shuffled - exactly the drifts
    cacheviz exists to show.
``model+prefix``
    Model plus the hash of tools+system (the strict rule: any change starts a lineage).
``model``
    One lineage per model.
``single``
    Every call in one lineage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from cacheviz.model import Call

LINEAGE_MODES = ("auto", "model+prefix", "model", "single")
JOIN_SHARE = 0.5  # share of the smaller request's tokens two calls must have in common


def prefix_hash(call: Call) -> str:
    """Whale's prefix hash: over the hashes of the tools and system segments."""
    hashes = "".join(b.hash for b in call.blocks if b.part != "messages")
    return hashlib.sha256(hashes.encode()).hexdigest()[:16]


def assign_lineages(
    calls: Sequence[Call],
    tokens_of: Callable[[Call, str], int],
    *,
    mode: str = "auto",
) -> list[str]:
    """Return the lineage name of every call.

    Parameters
    ----------
    calls
        The session's calls in request-time order.
    tokens_of
        ``tokens_of(call, hash)``: token count of one of the call's blocks.
    mode
        One of :data:`LINEAGE_MODES`.

    Returns
    -------
    list of str
    """
    if mode not in LINEAGE_MODES:
        msg = f"lineage={mode!r}; expected one of {', '.join(LINEAGE_MODES)}"
        raise ValueError(msg)
    if mode == "single":
        return ["main"] * len(calls)
    if mode == "model":
        return [call.model for call in calls]
    if mode == "model+prefix":
        return [f"{call.model}:{prefix_hash(call)[:6]}" for call in calls]

    names: list[str] = []
    latest: dict[str, tuple[dict[str, int], int]] = {}  # lineage -> (hash->tokens, total)
    by_model: dict[str, list[str]] = {}
    for call in calls:
        weights = {b.hash: tokens_of(call, b.hash) for b in call.blocks}
        total = sum(weights.values())
        if call.lineage_hint is not None:
            name = call.lineage_hint
        else:
            name = _best_lineage(weights, total, by_model.get(call.model, []), latest)
            if name is None:
                existing = by_model.setdefault(call.model, [])
                name = call.model if not existing else f"{call.model}#{len(existing) + 1}"
                existing.append(name)
        latest[name] = (weights, total)
        names.append(name)
    return names


def _best_lineage(
    weights: dict[str, int],
    total: int,
    candidates: list[str],
    latest: dict[str, tuple[dict[str, int], int]],
) -> str | None:
    best, best_share = None, 0.0
    for name in candidates:
        other, other_total = latest[name]
        shared = sum(n for h, n in weights.items() if h in other)
        share = shared / max(1, min(total, other_total))
        if share > best_share:
            best, best_share = name, share
    return best if best_share >= JOIN_SHARE else None
