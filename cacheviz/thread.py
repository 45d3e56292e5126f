"""Group calls into threads: chains of requests that build on each other's cache.

A drift is judged only against earlier calls of the same thread, so side calls (title
generation, quota probes) and sub-agents must not be mixed with the main thread.

Modes
-----
``auto`` (default)
    The transcript's own thread (``meta.thread``, or ``meta.session``/``meta.agent``)
    when it gives one. Otherwise a call joins the thread of the same model whose latest
    call shares the most of its tokens (by block hash, order ignored), provided the
    shared part is at least half of the smaller request; else it starts a new thread.
    Unlike a strict hash of tools+system, this keeps a main thread together when its
    system prompt carries a timestamp or its tools are shuffled - exactly the drifts
    cacheviz exists to show.
``model+prefix``
    Model plus the hash of tools+system (the strict rule: any change starts a thread).
``model``
    One thread per model.
``single``
    Every call in one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cacheviz._seq import common_prefix
from cacheviz.model import Call
from cacheviz.shape import prefix_hash

THREAD_MODES = ("auto", "model+prefix", "model", "single")
JOIN_SHARE = 0.5  # share of the smaller request's tokens two calls must have in common


def assign_threads(
    calls: Sequence[Call],
    keys: Sequence[list[str]],
    offsets: Sequence[Sequence[int]],
    token_count: Callable[[int, str], int],
    *,
    mode: str = "auto",
) -> list[str]:
    """Return the thread name of every call.

    Parameters
    ----------
    calls
        The session's calls in request-time order.
    keys
        Each call's block hashes in cache order.
    offsets
        Each call's cumulative token offsets (``offsets[i][-1]`` is its total).
    token_count
        ``token_count(call index, hash)``: tokens of one block of that call.
    mode
        One of :data:`THREAD_MODES`.

    Returns
    -------
    list of str
    """
    if mode not in THREAD_MODES:
        msg = f"thread={mode!r}; expected one of {', '.join(THREAD_MODES)}"
        raise ValueError(msg)
    if mode == "single":
        return ["main"] * len(calls)
    if mode == "model":
        return [call.model for call in calls]
    if mode == "model+prefix":
        return [f"{call.model}:{prefix_hash(call)[:6]}" for call in calls]

    names: list[str] = []
    latest: dict[str, int] = {}  # thread -> index of its latest call
    hash_sets: dict[int, set[str]] = {}
    by_model: dict[str, list[str]] = {}

    def share(i: int, j: int, candidates: int) -> float:
        denominator = max(1, min(offsets[i][-1], offsets[j][-1]))
        in_prefix = offsets[i][common_prefix(keys[i], keys[j])] / denominator
        if in_prefix >= JOIN_SHARE and candidates == 1:
            return in_prefix  # enough, and nothing to choose between
        other = hash_sets.get(j)
        if other is None:
            other = hash_sets[j] = set(keys[j])
        shared = sum(token_count(i, h) for h in set(keys[i]) & other)
        return shared / denominator

    for i, call in enumerate(calls):
        if call.thread_hint is not None:
            name = call.thread_hint
        else:
            candidates = by_model.setdefault(call.model, [])
            scored = [(share(i, latest[c], len(candidates)), c) for c in candidates]
            best = max(scored, default=(0.0, ""), key=lambda pair: pair[0])
            if best[0] >= JOIN_SHARE:
                name = best[1]
            else:
                name = call.model if not candidates else f"{call.model}#{len(candidates) + 1}"
                candidates.append(name)
        previous = latest.get(name)
        if previous is not None:
            hash_sets.pop(previous, None)
        latest[name] = i
        names.append(name)
    return names
