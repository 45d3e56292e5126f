"""What the session cost, what each drift cost, and the misses the provider reported.

Run by :func:`cacheviz.analysis.analyze` once the prefix line and the drifts are known.

Billed cost
    Each call's reported usage at its model's dated prices (:mod:`cacheviz.money.pricing`):
    uncached input, cache reads, 5-minute and 1-hour writes priced apart, and the
    output count (the final one of a streamed response). A call without reported input
    and output has no billed cost (null). A call with usage whose model no price source
    knows, or whose provider cacheviz has no profile for, has none either, and its model
    is listed in ``Analysis.unpriced_models`` with a one-line reason
    (``Analysis.unpriced_reasons``): never a silent null. A self-hosted engine bills
    nothing and is not listed. Cache fields the provider did not report count as no
    cache activity.
    A log that reports usage only for the whole session, per model
    (``Session.session_usage``: GitHub Copilot CLI) is billed at the session's scope
    (:func:`session_billed`): ``Analysis.billed_usd`` is that figure, and a call's own
    ``billed_usd`` (a compaction's) is part of it, not added.
Simulated and ideal cost
    The session replayed under its own provider's rules (:func:`cacheviz.money._simulate.simulate`
    with the default rules). The ideal is a lower bound under those rules: every token
    the prefix line (or the rules) could serve read at the cache price, nothing written.
Drift cost (the what-if)
    A drift's ``cost_usd`` is this call's simulated cost as sent minus its cost had the
    prefix been kept: the same simulator replays the thread's previous call followed by
    this call rebuilt as that previous request plus this call's new blocks (same clock,
    breakpoints and model). ``material`` is false when keeping the prefix would not have
    let the call read one more token from the cache (the prefix is below the model's
    minimum, no breakpoint caches it, the TTL had run out anyway): such drifts cost
    nothing and are folded in the CLI, the widget and the report.
Misses
    With usage reported, the reported cache read is compared with what the prefix line
    offers (``expected_read_tokens``: the common prefix in the provider's tokens, through
    the session's token scale). A shortfall of at least 1,024 tokens and 25 % of the
    expected read is a miss — none for a model whose every call reports no cache read
    or write (it does not cache: no expected read) — with the first cause that applies:

    ``below_minimum``
        the offered prefix is shorter than the model's minimum cacheable length;
    ``provider_side``
        the provider's rules (the simulator) predicted the read, the provider did not
        serve it (routing, eviction, another organization or key);
    ``ttl_expired``
        the idle time since the call that left the prefix exceeds the provider's TTL;
    ``no_breakpoint``
        Anthropic: no ``cache_control`` breakpoint wrote an entry the call could read;
    else ``provider_side``, with the simulator's own explanation in ``detail``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cacheviz import _schema, providers
from cacheviz.errors import UnknownModelError
from cacheviz.model import OPAQUE, Content
from cacheviz.money._metrics import call_waste, waste_basis
from cacheviz.money._simulate import (
    Replay,
    extend_chain,
    make_simulator,
    material_shortfall,
    replay,
    result_cost,
    sim_calls_of,
)
from cacheviz.money.pricing import PriceBook, RateCache, Rates, unpriced_reason
from cacheviz.prefix._namespace import namespace_of
from cacheviz.prefix._ttl import call_ttl, idle_seconds
from cacheviz.providers._base import Breakpoint, CallResult, SimCall
from cacheviz.reported._verdict import (
    NOT_FOUND,
    Evidence,
    comparable,
    compare_verdict,
    layer_spans,
)

if TYPE_CHECKING:
    from cacheviz.analysis import PrefixLists
    from cacheviz.model import Call, SessionUsage

# drift causes that keep the number of blocks (an edit in place)
_IN_PLACE = frozenset(
    {
        "volatile_value",
        "content_edited",
        "env_details_stripped",
        "serialization_only",
        "params_changed",
        "model_switch",
        "reorder",
        "unknown",
    }
)


def provider_key(name: str | None) -> str | None:
    """The provider whose rules replay and whose prices bill a call of provider ``name``.

    Parameters
    ----------
    name
        A call's recorded provider (``Call.provider``).

    Returns
    -------
    str or None
        The provider's id (``gemini`` gives ``google``); ``None`` for an unknown provider
        and for a self-hosted engine (neither is priced nor replayed with the session).
    """
    found = providers.find(name)
    return None if found is None or found.self_hosted else found.id


def no_provider_reason(name: str | None) -> str:
    """Why a call of provider ``name`` (no profile) has no price, in one line."""
    known = ", ".join(providers.priced())
    if not name or name == "unknown":
        return (
            f"the log names no provider and the model name suggests none (cacheviz prices {known})"
        )
    return f"no caching rules or prices for provider {name!r} (cacheviz prices {known})"


def billed_cost(call: Call, rates: Rates) -> float | None:
    """USD the provider billed for ``call``'s reported usage (``None``: not reported)."""
    usage = call.usage
    if usage is None or usage.input_tokens is None or usage.output_tokens is None:
        return None
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    write_1h = min(usage.cache_write_1h_tokens or 0, write)
    return rates.cost(
        uncached=max(0, usage.input_tokens - read - write),
        cache_read=read,
        cache_write=write,
        cache_write_1h=write_1h,
        output=usage.output_tokens,
    )


def call_billed(
    call: Call,
    key: str | None,
    prices_of: dict[str, RateCache],
    unpriced: dict[str, str],
) -> float | None:
    """USD the provider billed for ``call``, at its dated prices (module docstring).

    Shared by :func:`cost_lists` and :mod:`cacheviz.live._costs`.

    Parameters
    ----------
    call
        The call, with its reported usage.
    key
        Its provider (:func:`provider_key`; ``None``: not priced).
    prices_of
        The rates of each provider.
    unpriced
        The models that have usage but no price, in order of first sight, each with the
        reason (:func:`cacheviz.money.pricing.unpriced_reason`, or no provider profile);
        the call's is added when it is one.

    Returns
    -------
    float or None
        ``None``: no usage reported, or no price.
    """
    if call.usage is None:
        return None
    if key is None:
        if providers.find(call.provider) is None:  # not a self-hosted engine: unknown
            unpriced.setdefault(call.model, no_provider_reason(call.provider))
        return None
    try:
        rates = prices_of[key](call.model, call.ts, call.usage.input_tokens or 0)
    except UnknownModelError:
        unpriced.setdefault(call.model, unpriced_reason(key, call.model))
        return None
    return billed_cost(call, rates)


def _what_if(previous: SimCall, call: SimCall, cause: str) -> tuple[SimCall, SimCall]:
    """The previous call (as this call's model) and this call had the prefix been kept."""
    known = set(previous.hashes)
    last_known = max((i for i, h in enumerate(call.hashes) if h in known), default=-1)
    start = last_known + 1
    if cause in _IN_PLACE:
        start = max(start, min(len(previous.hashes), len(call.hashes)))
    tail = call.hashes[start:]
    shift = previous.total - call.offsets[start]
    n = len(previous.hashes)
    kept = dataclasses.replace(
        call,
        hashes=previous.hashes + tail,
        chain=extend_chain(list(previous.chain), tail),
        offsets=previous.offsets + [o + shift for o in call.offsets[start + 1 :]],
        parts=previous.parts + call.parts[start:],
        roles=previous.roles + call.roles[start:],
        breakpoints=list(previous.breakpoints)
        + [
            Breakpoint(b.block - start + n, b.ttl_seconds)
            for b in call.breakpoints
            if b.block >= start
        ],
        params=previous.params,
        reported=None,
    )
    return dataclasses.replace(previous, model=call.model, reported=None), kept


def _cost(price: RateCache, call: SimCall, result: CallResult) -> float | None:
    try:
        rates = price(call.model, call.ts, call.total)
    except UnknownModelError:
        return None
    return result_cost(rates, call, result)


# the calls columns cost_lists fills (and live_costs.costs_from, call by call)
CALL_COSTS = (
    "billed_usd",
    "simulated_usd",
    "ideal_usd",
    "waste_usd",
    "expected_read_tokens",
    "miss_cause",
    "shortfall_tokens",
    "own_cause",
    "verdict_agrees",
    "verdict_detail",
    "drift_material",
)


@dataclasses.dataclass(slots=True)
class CostLists:
    """:func:`cost_lists`' result: the cost columns as plain lists, and the totals."""

    calls: dict[str, list[Any]]
    """The calls columns it fills (``billed_usd``, ..., ``drift_material``)."""
    drifts: dict[str, list[Any]]
    """``cost_usd`` and ``material`` of every drift row."""
    misses: dict[str, list[Any]]
    """Every column of :data:`cacheviz._schema.MISSES`."""
    billed_usd: float | None
    unpriced_models: list[str]
    unpriced_reasons: dict[str, str]
    """Why each of ``unpriced_models`` has no price (one line each)."""
    runs: dict[str, Replay]
    """The replay of each provider, the session's main provider first."""


def _rate_caches(
    book: PriceBook, keys: Sequence[str], rates: dict[str, RateCache] | None
) -> dict[str, RateCache]:
    """A :class:`~cacheviz.money.pricing.RateCache` per provider of ``keys``, from ``rates``.

    ``rates`` (kept by the caller, e.g. a scan's worker for the sessions of one batch)
    gets the caches it lacks, so that sessions priced one after another resolve each
    price period once; a cache of another book is not used.
    """
    out = {}
    for key in keys:
        found = None if rates is None else rates.get(key)
        if found is None or found.book is not book:
            found = RateCache(book, key)
            if rates is not None:
                rates[key] = found
        out[key] = found
    return out


def cost_lists(
    lists: PrefixLists, *, prices: Any = None, rates: dict[str, RateCache] | None = None
) -> CostLists:
    """The cost, drift-cost and miss columns of a session, as lists.

    ``lists`` holds the calls and drifts columns (the cost columns are not read), the
    token caches and the offsets. ``rates``: the rates resolved before with the same
    price book, per provider (filled in here; see :func:`_rate_caches`).
    """
    session = lists.session
    calls = session.calls
    cols = lists.call_cols
    book = prices if isinstance(prices, PriceBook) else PriceBook(prices)
    n = len(calls)
    billed: list[float | None] = [None] * n
    simulated: list[float | None] = [None] * n
    ideal: list[float | None] = [None] * n
    sim_read: list[int | None] = [None] * n
    sim_detail: list[str] = [""] * n
    unpriced: dict[str, str] = {}

    keys = [provider_key(call.provider) for call in calls]
    counts: dict[str, int] = {}
    for key in keys:
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    built = (
        sim_calls_of(calls, cols, lists.token_caches, lists.offsets, lists.local_offsets)
        if counts and n
        else []
    )
    runs: dict[str, Replay] = {}
    recorded, prefixes = cols["provider"], cols["prefix_tokens"]
    prices_of = _rate_caches(book, list(counts), rates)
    for key in sorted(counts, key=lambda k: -counts[k]):
        run = runs[key] = replay(
            make_simulator(key), built, recorded, prefixes, prices_of[key], unpriced="skip"
        )
        rows = run.cols
        cost, best, read, detail = (
            rows["cost_usd"],
            rows["ideal_usd"],
            rows["cache_read_tokens"],
            [_schema.clean(d) for d in rows["detail"]],
        )
        for i in range(n):
            if keys[i] == key:
                simulated[i], ideal[i], sim_read[i], sim_detail[i] = (
                    cost[i],
                    best[i],
                    read[i],
                    detail[i],
                )

    for i, call in enumerate(calls):
        billed[i] = call_billed(call, keys[i], prices_of, unpriced)

    drift_cost, material = _drift_costs(lists, built, runs, prices_of)
    found = _misses(lists, sim_read, sim_detail, billed, prices_of)
    drift_calls = lists.drift_cols["call"]
    priced = [b for b in billed if b is not None]
    on_billed = waste_basis(billed)  # waste is billed - ideal over the calls with usage
    total = float(sum(priced)) if priced else None
    if session.session_usage:  # billed at the session's scope (its calls' usage is in it)
        total = session_billed(session.session_usage, book, prices_of, rates, unpriced)
    return CostLists(
        calls={
            "billed_usd": billed,
            "simulated_usd": simulated,
            "ideal_usd": ideal,
            "waste_usd": [
                call_waste(b, s, i, billed_basis=on_billed)
                for b, s, i in zip(billed, simulated, ideal, strict=True)
            ],
            **found.calls,
            "drift_material": [material.get(i) if d else None for i, d in enumerate(cols["drift"])],
        },
        drifts={
            "cost_usd": [drift_cost.get(c) for c in drift_calls],
            "material": [material.get(c) for c in drift_calls],
        },
        misses=found.rows,
        billed_usd=total,
        unpriced_models=list(unpriced),
        unpriced_reasons=dict(unpriced),
        runs=runs,
    )


def session_billed(
    usages: Sequence[SessionUsage],
    book: PriceBook,
    prices_of: dict[str, RateCache],
    rates: dict[str, RateCache] | None,
    unpriced: dict[str, str],
) -> float | None:
    """USD of the usage a log reports for the whole session, per model (dated prices).

    The session's scope: GitHub Copilot CLI's ``modelMetrics`` (``inputTokens``
    inclusive of the cache reads and writes). A model without a price, or whose input or
    output is not reported, adds nothing (the model is listed in ``unpriced``); ``None``
    when no model is priced.
    """
    total: float | None = None
    for item in usages:
        usage = item.usage
        key = provider_key(item.provider)
        if usage.input_tokens is None or usage.output_tokens is None:
            unpriced.setdefault(item.model, "its input or output count is not reported")
            continue
        if key is None:
            if providers.find(item.provider) is None:
                unpriced.setdefault(item.model, no_provider_reason(item.provider))
            continue
        if key not in prices_of:
            prices_of.update(_rate_caches(book, [key], rates))
        try:
            found = prices_of[key](item.model, item.ts, usage.input_tokens)
        except UnknownModelError:
            unpriced.setdefault(item.model, unpriced_reason(key, item.model))
            continue
        read = usage.cache_read_tokens or 0
        write = usage.cache_write_tokens or 0
        cost = found.cost(
            uncached=max(0, usage.input_tokens - read - write),
            cache_read=read,
            cache_write=write,
            output=usage.output_tokens,
        )
        total = cost if total is None else total + cost
    return total


def _drift_costs(
    lists: PrefixLists,
    built: Sequence[SimCall],
    runs: dict[str, Replay],
    prices_of: dict[str, RateCache],
) -> tuple[dict[int, float | None], dict[int, bool | None]]:
    """Per drift call: the what-if cost and whether it was material."""
    costs: dict[int, float | None] = {}
    material: dict[int, bool | None] = {}
    calls = lists.session.calls
    drifts = lists.drift_cols
    for index, before, cause in zip(
        drifts["call"], drifts["prev_call"], drifts["cause"], strict=True
    ):
        key = provider_key(calls[index].provider)
        if key is None or key not in runs:
            costs[index], material[index] = None, None
            continue
        costs[index], material[index] = drift_cost(
            built[before], built[index], cause, runs[key].cols, prices_of[key]
        )
    return costs, material


def drift_cost(
    previous: SimCall,
    call: SimCall,
    cause: str,
    replayed: dict[str, list[Any]],
    price: RateCache,
) -> tuple[float | None, bool]:
    """One drift's what-if cost and whether it was material (module docstring).

    Shared by :func:`cost_lists` and :mod:`cacheviz.live._costs`.

    Parameters
    ----------
    previous, call
        The replay inputs of the thread's previous call and of the drifted call.
    cause
        The drift's cause (an edit in place keeps the number of blocks).
    replayed
        The session's replay under the call's provider (:attr:`Replay.cols
        <cacheviz.money._simulate.Replay.cols>`, rows by call index).
    price
        That provider's rates; its simulator (default rules) replays the what-if.

    Returns
    -------
    tuple
        The USD the drift cost (``None``: the call or its what-if has no price; 0 when
        not material) and whether keeping the prefix would have read more tokens.
    """
    index = call.index
    before, kept = _what_if(previous, call, cause)
    results = make_simulator(price.provider).run([before, kept])
    gained = results[1].cache_read_tokens - replayed["cache_read_tokens"][index]
    actual = replayed["cost_usd"][index]
    what_if = _cost(price, kept, results[1])
    if actual is None or what_if is None:
        return None, gained > 0
    return (max(0.0, actual - what_if) if gained > 0 else 0.0), gained > 0


# what the unlogged prefix of a conversation log holds, by agent (the format's name)
UNLOGGED_HOLDS = {
    "claude-code": (
        "Claude Code's tool definitions and system prompt: a static part every session "
        "shares, then a dynamic tail (date, git status, CLAUDE.md, memory)"
    ),
    "codex": "Codex's base instructions, its environment context and the tool schemas",
    "gemini-cli": "Gemini CLI's system instruction (with its memory files) and the tools",
    "cline": "Cline's system prompt (with its environment details and rules) and the tools",
}
_UNLOGGED_DEFAULT = "the agent's system prompt and tool definitions, which this log does not hold"


def unlogged_holds(agent: str) -> str:
    """What the unlogged prefix of an ``agent``'s log holds, for a miss's detail.

    Parameters
    ----------
    agent
        The session's format name (``Session.format``: ``claude-code``, ``codex``, ...).

    Returns
    -------
    str
        The agent's own description (:data:`UNLOGGED_HOLDS`), else a generic one.
    """
    return UNLOGGED_HOLDS.get(agent, _UNLOGGED_DEFAULT)


def partial_read(call: Call, read: int, hidden: int, head: int, holds: str) -> tuple[str, str]:
    """The cause of a read that stops inside a rebuilt request's unlogged prefix.

    Anthropic reads up to the longest breakpoint whose prefix is unchanged, and Claude
    Code puts one after the static part of its system prompt: such a read proves only
    that the change lies after it, not that the unlogged prefix changed. Which block,
    when the log says: a compaction (an expected rebuild: the caller drops the miss),
    the deferred tools changed (``deferred_tools_changed``: a ToolSearch
    ``tool_reference`` or a ``deferred_tools_delta`` since the previous call; Claude Code
    lists them in the tools or in its system prompt); else ``unknown``, "after token N".

    Parameters
    ----------
    call
        The call (its ``meta``: ``rebuild``, ``tools_delta``).
    read
        The provider's read, ``0 < read <= hidden``.
    hidden
        The unlogged prefix's size.
    head
        The thread's static head (0: unknown).
    holds
        What the unlogged prefix holds (:func:`unlogged_holds`).

    Returns
    -------
    tuple
        The cause and its detail.
    """
    where = f"the provider read {read:,} tokens: the change lies after token {read:,}"
    if head and read >= head:
        where += (
            f", past the {head:,}-token static head (tools and the static system prompt "
            "read): in the system prompt's dynamic tail or the messages"
        )
    else:
        where += f", inside the {hidden:,}-token unlogged prefix or after it"
    if call.meta.get("rebuild") is not None:
        return "unknown", f"{where}; the log announces a {call.meta['rebuild']}: a rebuild"
    delta = call.meta.get("tools_delta")
    if delta:
        return (
            "deferred_tools_changed",
            f"the log shows the deferred tools changed ({delta}); {where}",
        )
    return "unknown", f"{where}; nothing in the log says which block ({holds})"


def _miss_cost(call: Call, rates: Rates, billed: float, shortfall: int, reported: int) -> float:
    """Billed cost minus the billed cost had ``shortfall`` more tokens been read."""
    usage = call.usage
    assert usage is not None
    write = usage.cache_write_tokens or 0
    from_write = min(shortfall, write)
    uncached = max(0, (usage.input_tokens or 0) - reported - write)
    from_uncached = min(shortfall - from_write, uncached)
    kept = rates.cost(
        uncached=uncached - from_uncached,
        cache_read=reported + from_write + from_uncached,
        cache_write=write - from_write,
        cache_write_1h=min(usage.cache_write_1h_tokens or 0, write - from_write),
        output=usage.output_tokens,
    )
    return max(0.0, billed - kept)


@dataclasses.dataclass(slots=True)
class _Found:
    """:func:`_misses`' result: the calls columns it fills and the misses table's rows."""

    calls: dict[str, list[Any]]
    rows: dict[str, list[Any]]


# the calls columns a Miss fills, by its field
MISS_COLUMNS = {
    "expected_read_tokens": "expected",
    "miss_cause": "cause",
    "shortfall_tokens": "shortfall",
    "own_cause": "own",
    "verdict_agrees": "agrees",
    "verdict_detail": "verdict_detail",
}


def _misses(
    lists: PrefixLists,
    sim_read: list[int | None],
    sim_detail: list[str],
    billed: list[float | None],
    prices_of: dict[str, RateCache],
) -> _Found:
    """Misses on the calibrated line, for every provider (module docstring)."""
    session = lists.session
    calls = session.calls
    cols = lists.call_cols
    contents = session.contents
    out: dict[str, list[Any]] = {name: [] for name in MISS_COLUMNS}
    rows: dict[str, list[Any]] = {name: [] for name in _schema.MISSES}
    activity = CacheActivity()
    for call in calls:
        activity.add(call)
    state = MissState(uncached=activity.uncached())
    holds = unlogged_holds(session.format)
    d = lists.drift_cols
    drifts = {
        c: (p, k, t)
        for c, p, k, t in zip(d["call"], d["part"], d["cause"], d["detail"], strict=True)
    }
    for i, call in enumerate(calls):
        miss = next_miss(
            calls,
            cols,
            i,
            state,
            predicted=sim_read[i],
            sim_detail=sim_detail[i],
            paid=billed[i],
            prices_of=prices_of,
            holds=holds,
            offsets=lists.offsets[i],
            opaque=functools.partial(opaque_blocks, contents, call.hashes),
            drift=drifts.get(i),
        )
        for name, attribute in MISS_COLUMNS.items():
            out[name].append(getattr(miss, attribute))
        if miss.row is not None:
            for name, value in miss.row.items():
                rows[name].append(value)
    return _Found(out, rows)


@dataclasses.dataclass(frozen=True)
class Miss:
    """One call's miss columns, and its row of the misses table (``None``: no miss)."""

    expected: int | None
    own: str | None
    cause: str | None
    shortfall: int | None
    row: dict[str, Any] | None
    agrees: bool | None = None
    """Whether cacheviz's own reading agrees with the provider's comparable verdict."""
    verdict_detail: str | None = None
    """The comparison, one line (``None``: no comparable verdict)."""


@dataclasses.dataclass(slots=True)
class MissState:
    """What :func:`next_miss` carries from one call to the next (in request-time order).

    Kept by :func:`cost_lists` for one session and by :class:`cacheviz.live._incremental.LiveLog`
    across appends.
    """

    latest: dict[str, int] = dataclasses.field(default_factory=dict)
    """Each cache namespace's latest call."""
    heads: dict[str, int] = dataclasses.field(default_factory=dict)
    """Each thread's static head: the first read that stopped inside its unlogged prefix."""
    responses: dict[str, int] = dataclasses.field(default_factory=dict)
    """The call of each response id (``Call.meta["response_id"]``), for the log's links."""
    uncached: frozenset[str] = frozenset()
    """The namespaces whose calls show no caching at all (:class:`CacheActivity`)."""


class CacheActivity:
    """Which cache namespaces (provider/model) show caching: a reported read or write.

    A model whose every call reports a cache read of 0 and no write (a provider or a
    model that does not cache, a proxy that does not pass it on) offers no expected
    read: its calls are no misses. Fed call by call (:class:`cacheviz.live._incremental.LiveLog`
    keeps one across appends).
    """

    def __init__(self) -> None:
        self.reported: set[str] = set()
        self.active: set[str] = set()

    def add(self, call: Call) -> None:
        """Note ``call``'s reported cache fields."""
        usage = call.usage
        if usage is None or usage.cache_read_tokens is None:
            return
        namespace = namespace_of(call)
        self.reported.add(namespace)
        if usage.cache_read_tokens or usage.cache_write_tokens:
            self.active.add(namespace)

    def uncached(self) -> frozenset[str]:
        """The namespaces that report cache fields and never a read or a write."""
        return frozenset(self.reported - self.active)


def opaque_blocks(contents: Mapping[str, Content], hashes: Sequence[str]) -> list[bool]:
    """Per block: whether it is an unlogged prefix (its content opaque)."""
    return [contents[h].kind == OPAQUE for h in hashes]


def next_miss(
    calls: Sequence[Call],
    cols: dict[str, list[Any]],
    i: int,
    state: MissState,
    *,
    predicted: int | None,
    sim_detail: str,
    paid: float | None,
    prices_of: dict[str, RateCache],
    holds: str,
    offsets: Sequence[int],
    opaque: Callable[[], Sequence[bool]],
    drift: tuple[str, str, str] | None,
) -> Miss:
    """Call ``i``'s miss and verdict comparison, the calls before it seen (:func:`miss_at`).

    Shared by :func:`cost_lists` and :mod:`cacheviz.live._costs`.

    Parameters
    ----------
    calls
        The session's calls.
    cols
        The calls columns (provider tokens), at least call ``i``'s.
    i
        The call.
    state
        What the calls before ``i`` left (:class:`MissState`); call ``i`` is recorded in
        it. The call a miss reads from is the one this request continues by the log's
        links (Claude Code's ``parentUuid``), else the thread's previous call, when of
        the same namespace; else the namespace's latest.
    predicted, sim_detail
        The call's cache read and detail in its provider's replay (``None``, ``""``: not
        replayed).
    paid
        Its billed cost (``None``: not priced).
    prices_of
        The rates of each replayed provider.
    holds
        What the log's unlogged prefix holds (:func:`unlogged_holds`).
    offsets
        The call's block offsets in provider tokens (calibrated), then its total.
    opaque
        Per block: whether it is an unlogged prefix; called only when a comparable
        provider verdict needs where the layers lie (an O(blocks) list per call).
    drift
        The call's drift ``(part, cause, detail)``, ``None`` when its prefix held.

    Returns
    -------
    Miss
    """
    call = calls[i]
    namespace = cols["namespace"][i]
    thread = cols["thread"][i]
    prev = cols["prev_call"][i]
    linked = state.responses.get(call.meta.get("parent_response", ""))
    if call.meta.get("response_id") is not None:
        state.responses[call.meta["response_id"]] = i
    source = linked if linked is not None and cols["namespace"][linked] == namespace else prev
    if source is None or cols["namespace"][source] != namespace:
        source = state.latest.get(namespace)
    state.latest[namespace] = i
    # the request the provider compares with: the one this call continues
    compared = linked if linked is not None else (prev if prev is not None else source)
    hidden = cols["unlogged_tokens"][i]
    head = state.heads.get(thread, 0)
    read = call.usage.cache_read_tokens if call.usage is not None else None
    if (
        not head
        and call.reconstructed
        and _explicit(call.provider)
        and read
        and hidden
        and read <= hidden
    ):
        state.heads[thread] = read  # the static head other requests keep warm
    ttls = cols["ttl_seconds"]
    return miss_at(
        calls,
        i,
        source,
        line=cols["prefix_tokens"][i],
        # the TTL of the entries the earlier call left (per entry: cacheviz.prefix._ttl)
        ttl_evidence=ttls[source] if source is not None else ttls[i],
        compared_ttl=ttls[compared] if compared is not None else None,
        own_ttl=ttls[i],
        predicted=predicted,
        sim_detail=sim_detail,
        hidden=hidden,
        verdict=cols["provider_verdict"][i],
        missed=cols["provider_missed_tokens"][i],
        rebuild=cols["rebuild"][i],
        thread=thread,
        paid=paid,
        prices_of=prices_of,
        holds=holds,
        compared=compared,
        head=head,
        spans=(
            layer_spans([b.part for b in call.blocks], opaque(), offsets, head)
            if comparable(cols["provider_verdict"][i])
            else None  # only a comparable verdict reads where the layers lie
        ),
        drift=drift,
        uncached=namespace in state.uncached,
    )


def _explicit(provider: str | None) -> bool:
    """Whether ``provider`` caches at the request's breakpoints only (Anthropic)."""
    found = providers.find(provider)
    return found is not None and found.explicit_breakpoints


def evidence_of(
    calls: Sequence[Call],
    i: int,
    compared: int | None,
    *,
    offered: int,
    ttl_evidence: int | None,
    rebuild: Any,
    head: int,
    spans: dict[str, list[tuple[int, int]]],
    drift: tuple[str, str, str] | None,
) -> Evidence:
    """The evidence about call ``i`` against the request it continues (``compared``)."""
    call = calls[i]
    usage = call.usage
    before = calls[compared] if compared is not None else None
    cached = None
    if before is not None and before.usage is not None:
        got = before.usage.cache_read_tokens
        if got is not None:
            cached = got + (before.usage.cache_write_tokens or 0)
    part, cause, detail = drift if drift is not None else (None, None, "")
    return Evidence(
        offered=offered,
        read=usage.cache_read_tokens if usage is not None else None,
        total=usage.input_tokens if usage is not None and usage.input_tokens else offered,
        source=compared,
        source_cached=cached,
        gap=idle_seconds(call, before),
        ttl=_ttl(provider_key(call.provider), before, ttl_evidence),
        model_switched=before is not None and before.model != call.model,
        missed=usage is not None
        and usage.cache_read_tokens is not None
        and material_shortfall(offered, usage.cache_read_tokens),
        drift_part=part,
        drift_cause=cause,
        drift_detail=detail,
        rebuild=rebuild,
        tools_delta=call.meta.get("tools_delta"),
        agent_switch=(
            f"{before.meta['agent']} → {call.meta['agent']}"
            if before is not None and agent_switch(before, call)
            else None
        ),
        rewritten=call.meta.get("rewritten"),
        reconstructed=call.reconstructed,
        spans=spans,
        head=head,
    )


def agent_switch(before: Call, call: Call) -> bool:
    """Whether the client's agent (its mode: OpenCode's build, plan, ...) changed.

    A client that logs which of its agents made each call (``Call.meta["agent"]``)
    sends each agent's own system prompt (and tool permissions): a switch rewrites the
    request's head.
    """
    now, then = call.meta.get("agent"), before.meta.get("agent")
    return isinstance(now, str) and isinstance(then, str) and now != then


def miss_at(
    calls: Sequence[Call],
    i: int,
    source: int | None,
    *,
    line: int,
    ttl_evidence: int | None,
    predicted: int | None,
    sim_detail: str,
    hidden: int | None,
    verdict: str | None,
    missed: int | None,
    rebuild: Any,
    thread: str,
    paid: float | None,
    prices_of: dict[str, RateCache],
    holds: str,
    compared: int | None = None,
    compared_ttl: int | None = None,
    own_ttl: int | None = None,
    head: int = 0,
    spans: dict[str, list[tuple[int, int]]] | None = None,
    drift: tuple[str, str, str] | None = None,
    uncached: bool = False,
) -> Miss:
    """The miss of call ``i`` on the calibrated line, and its verdict comparison.

    ``source`` is the call it could read from (the previous call of its namespace),
    ``ttl_evidence`` the TTL of the entries it left, ``compared`` the request the call
    continues (the provider's "previous message") and ``compared_ttl`` its entries' TTL,
    ``own_ttl`` the tier this call writes at, ``line`` its calibrated prefix, the other
    values its columns; shared by :func:`cost_lists` and :mod:`cacheviz.live._costs`
    (module docstring). ``uncached``: the call's model shows no caching in the session
    (:class:`CacheActivity`): no expected read, no miss.
    """
    call = calls[i]
    key = provider_key(call.provider)
    usage = call.usage
    offered = line
    if usage is not None and usage.input_tokens is not None:
        offered = min(offered, usage.input_tokens)
    agrees, said = None, None
    if comparable(verdict):
        ev = evidence_of(
            calls,
            i,
            compared if compared is not None else source,
            offered=offered,
            ttl_evidence=compared_ttl if compared is not None else ttl_evidence,
            rebuild=rebuild,
            head=head,
            spans=spans or {},
            drift=drift,
        )
        agrees, said = compare_verdict(verdict, ev)
    if usage is None or usage.cache_read_tokens is None:
        return Miss(None, None, None, None, None, agrees, said)
    if uncached:
        return Miss(0, None, None, None, None, agrees, said)  # no caching: no expected read
    reported = usage.cache_read_tokens
    if not material_shortfall(offered, reported):
        return Miss(offered, None, None, None, None, agrees, said)
    previous = calls[source] if source is not None else None
    gap = idle_seconds(call, previous)
    ttl = _ttl(key, previous, ttl_evidence)
    profile = providers.profile(key) if key is not None else None
    hidden = hidden or 0
    if profile is not None and offered < profile.min_tokens(call.model):
        cause, detail = "below_minimum", f"the prefix ({offered:,} tokens) is below the minimum"
    elif gap is not None and ttl is not None and gap > ttl:
        cause = "ttl_expired"
        detail = f"{gap:,.0f} s idle since call {source}, beyond the {ttl:,.0f} s TTL"
    elif (
        source is not None
        and ttl_evidence is not None
        and own_ttl is not None
        and own_ttl != ttl_evidence
        and call_ttl(call) is not None
    ):
        cause = "ttl_tier_switch"
        detail = (
            f"call {source} left {_tier(ttl_evidence)} entries; this call writes "
            f"{_tier(own_ttl)} ones: an entry of the other tier was not read"
        )
    elif previous is not None and agent_switch(previous, call):
        cause = "agent_switch"
        detail = (
            f"the agent switched from {previous.meta['agent']} to {call.meta['agent']} since "
            f"call {source}: each agent sends its own system prompt, so the cache keeps "
            "only what precedes it"
        )
    elif (
        profile is not None
        and profile.explicit_breakpoints
        and call.reconstructed
        and 0 < reported <= hidden < offered
    ):
        cause, detail = partial_read(call, reported, hidden, head, holds)
    elif key is not None and predicted is not None and material_shortfall(predicted, reported):
        cause = "provider_side"
        detail = f"the {key} rules predict {predicted:,} read; the provider read {reported:,}"
    elif profile is not None and profile.explicit_breakpoints:
        cause = "no_breakpoint"
        detail = "no cache_control breakpoint wrote an entry this call could read"
    elif key is not None:
        cause = "provider_side"
        detail = f"the {key} rules predict {predicted or 0:,} read: {sim_detail}"
    else:
        cause = "unknown"
        detail = (
            f"the line offers {offered:,} tokens the call re-sent; the provider read "
            f"{reported:,} (no caching rules for {call.provider or 'this provider'})"
        )
    own = cause
    if verdict in _schema.PROVIDER_REASONS:
        said_tokens = f" ({missed:,} tokens missed)" if missed is not None else ""
        if agrees or call.reconstructed:
            # the provider's reason wins, unless the bytes sent prove otherwise
            detail = (
                f"the provider says {verdict}{said_tokens}; cacheviz's own reading: "
                f"{cause}: {detail}"
            )
            cause = verdict
        else:
            detail = f"{detail}; the provider says {verdict}{said_tokens}, but {said}"
    elif agrees is not None:
        word = "cacheviz agrees" if agrees else f"cacheviz disagrees: {said}"
        detail = f"{detail}; the provider says {verdict} ({word})"
        if verdict in NOT_FOUND and agrees and cause in ("unknown", "no_breakpoint"):
            cause = "provider_side"  # the entry the previous request left is gone: evicted
    if rebuild is not None and cause in ("provider_side", "no_breakpoint", "unknown"):
        return Miss(offered, own, None, None, None, agrees, said)  # an expected rebuild
    shortfall = offered - reported
    cost = None
    if paid is not None and key in prices_of:
        rates = prices_of[key](call.model, call.ts, usage.input_tokens or 0)
        cost = _miss_cost(call, rates, paid, shortfall, reported)
    row = {
        "call": call.index,
        "thread": thread,
        "cause": cause,
        "own_cause": own,
        "provider_verdict": verdict,
        "shortfall_tokens": shortfall,
        "expected_read_tokens": offered,
        "simulated_read_tokens": predicted,
        "reported_cache_read_tokens": reported,
        "gap_seconds": gap,
        "cost_usd": cost,
        "detail": detail,
    }
    return Miss(offered, own, cause, shortfall, row, agrees, said)


_HOUR = 60 * 60


def _tier(seconds: float) -> str:
    """A TTL tier in words: 300 s is ``5-minute``, an hour ``1-hour``."""
    return f"{seconds / _HOUR:g}-hour" if seconds >= _HOUR else f"{seconds / 60:g}-minute"


def _ttl(key: str | None, previous: Call | None, evidence: int | None) -> float | None:
    """The TTL behind ``ttl_expired``: the session's evidence, else the provider's."""
    if evidence is not None:
        return float(evidence)
    return None if key is None else providers.profile(key).entry_ttl(previous)


__all__ = ["CostLists", "billed_cost", "cost_lists"]
