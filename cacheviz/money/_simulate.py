"""Replay a session under a provider's caching rules, price it, reconcile with reports.

``simulate(analysis, provider, model=None, **rules)`` builds one :class:`SimCall` per
call, runs the provider's simulator (``cacheviz.providers.<name>``), prices every call
with :class:`~cacheviz.money.pricing.PriceBook`, and, when the session carries reported usage
of that provider, gives each call a verdict:

* ``match``: the simulated cache read (scaled to the provider's tokens by the token
  scale) and the reported one agree in amount: they differ by less than 1,024 tokens or
  less than 25 % of the larger (:func:`material_shortfall`);
* ``unexplained_miss``: the rules predict a materially larger read than the provider
  reported (eviction, routing, another workspace: provider-side);
* ``unexplained_hit``: the provider reported a materially larger read than the bytes of
  this session explain (a cache warmed by another session, or rules we don't see);
* ``not_reported``: no usage to compare with.

The session score is the share of ``match`` among reported calls, leaving out those
whose simulated unlogged prefix was sized from their own reported read
(``sized_from_usage``: a new version of it at that call, or a warm head its read set):
their match is circular. A per-session token
scale factor (least squares of reported inclusive input on cacheviz's own count) says
how far the tokenizer approximation is from the provider's (1.0 = exact).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz import _schema, providers
from cacheviz._util.seq import common_prefix
from cacheviz.errors import (
    CacheVizDeprecationWarning,
    CacheVizError,
    SimulationError,
    UnknownModelError,
)
from cacheviz.money.pricing import PriceBook, RateCache, Rates
from cacheviz.prefix._calibrate import next_version
from cacheviz.prefix._ttl import idle_seconds
from cacheviz.providers._base import Breakpoint, CallResult, SimCall, Simulator
from cacheviz.providers._prefill import PrefillModel
from cacheviz.providers._prefill import load as load_prefill
from cacheviz.providers.anthropic import automatic_ttl

if TYPE_CHECKING:
    from array import array

    from cacheviz.analysis import Analysis
    from cacheviz.model import Call
    from cacheviz.request._tokens import TokenCache


def provider_id(name: str) -> str:
    """Normalize a provider name (``gemini`` → ``google``); unknown names are an error."""
    return providers.profile(name).id


def make_simulator(provider: str, **rules: Any) -> Simulator:
    """The simulator of ``provider`` with ``rules`` overriding its defaults."""
    cls = providers.simulator_class(provider)
    try:
        simulator: Simulator = cls(**rules)
    except TypeError as exc:
        fields = ", ".join(f for f in cls.__dataclass_fields__ if f != "provider")
        msg = f"{provider}: {exc}; its rules are: {fields}"
        raise SimulationError(msg) from None
    return simulator


_SYNTHETIC_STEP = 1.0  # seconds between calls that have no time


# the calls columns :func:`sim_calls_of` reads
SIM_INPUTS = (
    "thread",
    "encoding",
    "provider",
    "prev_call",
    "prefix_tokens",
    "reported_input_tokens",
    "reported_cache_read_tokens",
    "unlogged_tokens",
    "reconstructed",
    "ttl_seconds",
)


def sim_calls(analysis: Analysis, *, local: bool = False) -> list[SimCall]:
    """One :class:`SimCall` per call of ``analysis``, in request-time order.

    Offsets are in provider tokens (the calibrated axis, :mod:`cacheviz.prefix._calibrate`);
    ``local=True`` keeps the local encoding's (self-hosted engines count the token
    arrays themselves). :func:`sim_calls_of` on the analysis's columns.
    """
    frame = analysis.calls
    return sim_calls_of(
        analysis.session.calls,
        {name: frame[name].to_list() for name in SIM_INPUTS},
        analysis.token_caches,
        analysis.offsets,
        analysis.local_offsets,
        local=local,
    )


def sim_calls_of(
    calls: Sequence[Call],
    cols: dict[str, list[Any]],
    caches: dict[str, TokenCache],
    offsets: list[list[int]],
    local_offsets: list[list[int]],
    *,
    local: bool = False,
) -> list[SimCall]:
    """:func:`sim_calls` from plain lists: ``cols`` holds the :data:`SIM_INPUTS` columns.

    ``offsets`` are the calls' token offsets in provider tokens, ``local_offsets`` in
    the local encoding's (empty: the same), ``caches`` the token caches by encoding.
    """
    own = local_offsets or offsets
    axis = own if local else offsets
    walk = SimCallWalk()
    return [
        walk.step(
            calls,
            cols,
            i,
            offsets=axis[i],
            cache=caches[encoding],
            local_offsets=None if axis is own else own[i],
        )
        for i, encoding in enumerate(cols["encoding"])
    ]


@dataclass
class SimCallWalk:
    """What :func:`sim_calls_of` carries from one call to the next.

    Each thread's unlogged-prefix version (:func:`cacheviz.prefix._calibrate.next_version`) and
    warm head (:func:`next_warm_head`), the replay's clock and its latest call;
    :class:`cacheviz.live._incremental.LiveLog` keeps one across appends.
    """

    versions: dict[str, int] = field(default_factory=dict)
    warm_first: dict[str, int] = field(default_factory=dict)
    clock: float = 0.0
    previous: SimCall | None = None
    shortest: float = field(default_factory=lambda: shortest_ttl())
    """:func:`shortest_ttl`, the TTL of a thread that shows none."""

    def step(
        self,
        calls: Sequence[Call],
        cols: dict[str, list[Any]],
        i: int,
        *,
        offsets: list[int],
        cache: TokenCache,
        local_offsets: list[int] | None,
    ) -> SimCall:
        """The :class:`SimCall` of call ``i``, which follows the calls stepped before.

        Parameters
        ----------
        calls
            The session's calls.
        cols
            The :data:`SIM_INPUTS` columns, at least call ``i``'s.
        i
            The call (the calls before it were stepped, in order).
        offsets
            Its token offsets on the replay's axis (provider tokens, or the local
            encoding's for a self-hosted engine).
        cache
            The token cache of its encoding.
        local_offsets
            Its offsets in the local encoding when ``offsets`` are not (the token scale
            reads them), else ``None``.

        Returns
        -------
        SimCall
        """
        thread = cols["thread"][i]
        explicit = _explicit(cols["provider"][i])
        before = self.versions.get(thread, 0)
        version = next_version(
            self.versions,
            thread,
            *version_evidence(calls, cols, i, explicit, self.shortest),
            material_shortfall,
        )
        current = next_sim_call(
            calls[i],
            self.previous,
            thread=thread,
            version=version,
            clock=self.clock,
            offsets=offsets,
            cache=cache,
            local_offsets=local_offsets,
            ttl_hint=cols["ttl_seconds"][i],
            warm_tokens=next_warm_head(self.warm_first, cols, i, explicit),
        )
        # sized from its own reported read: a new unlogged-prefix version at this call,
        # or a warm head the thread's first read set, or took away (a read of 0)
        warm = self.warm_first.get(thread, 0)
        current.sized_from_usage = version != before or (
            explicit
            and bool(warm)
            and (cols["prev_call"][i] is None or cols["reported_cache_read_tokens"][i] == 0)
        )
        self.clock, self.previous = current.clock, current
        return current


def next_sim_call(
    call: Call,
    previous: SimCall | None,
    *,
    thread: str,
    version: int,
    clock: float,
    offsets: list[int],
    cache: TokenCache,
    local_offsets: list[int] | None,
    ttl_hint: int | None,
    warm_tokens: int,
) -> SimCall:
    """The :class:`SimCall` of ``call``, which follows ``previous`` (``None``: the first).

    ``version`` is its unlogged prefix's version (:func:`version_evidence`), ``clock``
    the previous call's clock (a call without a time is one step later), ``offsets``
    its token offsets on the replay's axis (:class:`SimCallWalk`).
    """
    hashes = call.hashes
    if version and call.message_start > 0:
        # the evidence says the unlogged prefix changed: a new identity from here on
        hashes = [f"{hashes[0]}@v{version}", *hashes[1:]]
    shared = common_prefix(previous.hashes, hashes) if previous is not None else 0
    chain = extend_chain(previous.chain[:shared] if previous is not None else [], hashes[shared:])
    auto = call.params.get("cache_control")
    if call.ts is not None:
        clock = call.ts.timestamp()
    elif previous is not None:
        clock += _SYNTHETIC_STEP
    return SimCall(
        index=call.index,
        thread=thread,
        ts=call.ts,
        model=call.model,
        hashes=hashes,
        chain=chain,
        offsets=offsets,
        # the blocks shared with the previous request are the same (same bytes: same
        # part and role): only the new ones are looked at
        parts=(previous.parts[:shared] if previous is not None else [])
        + [b.part for b in call.blocks[shared:]],
        roles=(previous.roles[:shared] if previous is not None else [])
        + [_role(b.label) if b.part == "messages" else None for b in call.blocks[shared:]],
        # any call's lookup must resolve every hash a simulator compares with it: a
        # sibling's may carry a version suffix (another thread's, sharing its base)
        tokens=_unversioned(cache),
        breakpoints=[Breakpoint(block, ttl) for block, ttl in call.breakpoints],
        auto_breakpoint=automatic_ttl(auto) if isinstance(auto, dict) else None,
        params=call.params,
        output_tokens=call.usage.output_tokens if call.usage else None,
        reported=call.usage,
        reconstructed=call.reconstructed,
        provider=call.provider,
        clock=clock,
        answered=_answered(call),
        local_offsets=local_offsets,
        ttl_hint=ttl_hint,
        warm_tokens=warm_tokens,
    )


def _answered(call: Call) -> float | None:
    """The time of the call's response's first record, when the log has it (Claude Code)."""
    end = call.meta.get("response_ts")
    if end is None or getattr(end, "tzinfo", None) is None or call.ts is None:
        return None
    return float(end.timestamp())


def version_evidence(
    calls: Sequence[Call], cols: dict[str, list[Any]], i: int, explicit: bool, shortest: float
) -> tuple[int | None, int | None, int | None, float | None, float]:
    """Call ``i``'s evidence for :func:`cacheviz.prefix._calibrate.next_version`.

    ``(unlogged, offered, read, gap, ttl)``: its unlogged tokens (only where reads stop at
    breakpoints written before, ``explicit``: with an implicit longest-prefix cache a
    short read is as likely routing or eviction), the prefix it offered (at most its
    reported input), its reported read, the idle time since its thread's previous call,
    and the TTL of the entries that call left (``shortest`` when none is known). The
    version of a call's unlogged prefix is the one the reported reads show
    (:mod:`cacheviz.prefix._calibrate`, :func:`~cacheviz.prefix._calibrate.unlogged_versions`);
    :class:`SimCallWalk` reads it.
    """
    prev = cols["prev_call"][i]
    gap = None if prev is None else idle_seconds(calls[i], calls[prev])
    total = cols["reported_input_tokens"][i]
    offered = None if total is None else min(cols["prefix_tokens"][i], total)
    hidden = cols["unlogged_tokens"][i] if cols["reconstructed"][i] and explicit else None
    ttl = cols["ttl_seconds"][i if prev is None else prev]  # what the previous call left
    return (
        hidden,
        offered,
        cols["reported_cache_read_tokens"][i],
        gap,
        (ttl if ttl is not None else shortest),
    )


def next_warm_head(
    first: dict[str, int], cols: dict[str, list[Any]], i: int, explicit: bool
) -> int:
    """Call ``i``'s warm head: tokens of its unlogged head cached before the session.

    A thread's first call can only read entries written before the session began: when
    it reads part of its unlogged prefix (Claude Code's static system prompt and tools,
    shared by the user's sessions), that part is taken as warm for the whole thread.
    Explicit-breakpoint providers only (reads stop at breakpoints written before). A
    call whose reported read is 0 has none (nothing was warm for it: the head changed,
    or no other session kept it). ``cols`` holds the :data:`SIM_INPUTS` columns;
    ``first`` (per thread) is updated.
    """
    thread = cols["thread"][i]
    if cols["prev_call"][i] is None and thread not in first:
        first[thread] = warm_head(
            explicit,
            cols["reconstructed"][i],
            cols["unlogged_tokens"][i],
            cols["reported_cache_read_tokens"][i],
        )
    if cols["reported_cache_read_tokens"][i] == 0:
        return 0  # the provider read nothing: the head was not warm for this call
    return first.get(thread, 0)


def warm_head(explicit: bool, rebuilt: bool, hidden: int | None, read: int | None) -> int:
    """A thread's warm head (:func:`next_warm_head`) from its first call's columns."""
    usable = explicit and rebuilt and hidden and read
    return read if usable and read is not None and hidden is not None and read <= hidden else 0


def shortest_ttl() -> float:
    """The shortest entry lifetime any provider gives (0 when none does).

    Without evidence, a gap within it is no expiry (:func:`version_evidence`).
    """
    return min(
        (p.default_ttl_seconds for p in providers.profiles() if p.default_ttl_seconds),
        default=0.0,
    )


def _explicit(provider: str | None) -> bool:
    """Whether ``provider`` caches at the request's breakpoints only (Anthropic)."""
    found = providers.find(provider)
    return found is not None and found.explicit_breakpoints


def _unversioned(cache: TokenCache) -> Callable[[str], array[int]]:
    """``cache[h]`` for block hashes that may carry an ``@v<n>`` version suffix.

    A version suffix is :func:`next_sim_call`'s: a new identity of an unlogged prefix the
    evidence shows changed, whose tokens (its inferred size) are the unversioned block's.
    Every call resolves it, not only the versioned ones: a simulator compares a call's
    block with the blocks other calls left at the same point (another thread whose
    unlogged prefix has the same base digest and a version:
    :class:`cacheviz.providers._cache.LivePrompts`).
    """
    lookup = cache.__getitem__

    def tokens_of(digest: str) -> array[int]:
        at = digest.find("@v")
        return lookup(digest if at < 0 else digest[:at])

    return tokens_of


def extend_chain(chain: list[bytes], hashes: Sequence[str]) -> list[bytes]:
    """``chain`` (prefix identities) extended by blocks ``hashes``; mutates and returns it."""
    state = chain[-1] if chain else b""
    for digest in hashes:
        state = hashlib.sha1(state + digest.encode()).digest()[:12]
        chain.append(state)
    return chain


def _role(label: str) -> str:
    return label.rsplit("#", 1)[0]


@dataclass
class Simulation:
    """A session replayed under one provider's rules and prices.

    ``calls`` has one row per call (:data:`cacheviz._schema.SIMULATION`); the totals are
    in USD (``None`` for self-hosted engines, which report tokens and prefill saved).
    """

    provider: str
    model: str | None
    price_source: str | None
    calls: pl.DataFrame
    total_cost_usd: float | None
    ideal_usd: float | None
    token_scale: float | None  # reported inclusive input / the local count (least squares)
    score: float | None  # share of reported calls whose hit/miss the simulation matches
    rules: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every parameter the rules ran with, defaults included: ``{name: {value, source}}``
    (``source``: ``rule`` given, ``log`` the engine the log names, ``default``)."""
    agreement: float | None = None
    """Calls whose simulated read equals the reported one exactly, over the calls that
    report a read (``None``: none does); beside :attr:`score`'s tolerant verdict."""
    agreement_calls: tuple[int, int] = (0, 0)
    """``(equal, reported)``: the counts behind :attr:`agreement`."""
    token_exact: bool = False
    """Whether the rules ran on the engine's own token ids (else the agreement is approximate)."""
    prices: PriceBook | None = field(default=None, repr=False, compare=False)
    """The price book it was priced with (``None``: not known)."""
    unpriced: str = field(default="raise", repr=False, compare=False)
    """How calls of a model without a price were handled (``"raise"`` or ``"skip"``)."""

    @property
    def ideal_cost_usd(self) -> float | None:
        """Deprecated name of :attr:`ideal_usd` (one name per concept since 0.2)."""
        warnings.warn(
            "Simulation.ideal_cost_usd is now Simulation.ideal_usd",
            CacheVizDeprecationWarning,
            stacklevel=2,
        )
        return self.ideal_usd

    @property
    def prefill_factor(self) -> float | None:
        """The session's estimated prefill time over the same session's without drift.

        ``sum(prefill_ms) / sum(prefill_ms_stable)``: each drift point is counted as if
        its prefix had been kept (:func:`stable_read`), every other call as it is. A
        self-hosted engine's replay only (``None`` otherwise, or without prefill time).
        """
        return prefill_factor_of(self.calls)

    def __repr__(self) -> str:
        cost = "-" if self.total_cost_usd is None else f"${self.total_cost_usd:,.4f}"
        return f"<Simulation {self.provider} {self.model or 'recorded models'} {cost}>"

    def to_dict(self) -> dict[str, Any]:
        """The ``cacheviz simulate --json`` document."""
        rows = []
        for row in self.calls.iter_rows(named=True):
            reported = None
            if row["reported_input_tokens"] is not None:
                reported = {key: row[f"reported_{key}"] for key in _schema.SIMULATE_REPORTED}
            rows.append({key: row[key] for key in _schema.SIMULATE_CALL} | {"reported": reported})
        return {
            "provider": self.provider,
            "model": self.model,
            "price_source": self.price_source,
            "rules": self.rules,
            "calls": rows,
            "total_cost_usd": self.total_cost_usd,
            "ideal_usd": self.ideal_usd,
            "token_scale": self.token_scale,
            "score": self.score,
            "parameters": self.parameters,
            "prefill_factor": self.prefill_factor,
            "agreement": {
                "share": self.agreement,
                "equal_calls": self.agreement_calls[0],
                "reported_calls": self.agreement_calls[1],
                "basis": "engine token ids" if self.token_exact else "approximate",
            },
        }


# A simulated and a reported cache read agree when they differ by less than both of these
# (so a real shortfall - a miss - is at least 1,024 tokens and 25 % of the larger read).
MATERIAL_TOKENS = 1024
MATERIAL_SHARE = 0.25


def material_shortfall(expected: float, reported: float) -> bool:
    """Whether reading ``reported`` instead of ``expected`` tokens is a material miss."""
    return expected - reported >= max(MATERIAL_TOKENS, MATERIAL_SHARE * expected)


def _verdict(result: CallResult, reported: Any) -> str:
    """Compare amounts: the simulated read (in provider tokens) with the reported one."""
    if reported is None or reported.cache_read_tokens is None:
        return "not_reported"
    simulated = result.cache_read_tokens
    if material_shortfall(simulated, reported.cache_read_tokens):
        return "unexplained_miss"
    if material_shortfall(reported.cache_read_tokens, simulated):
        return "unexplained_hit"
    return "match"


def result_cost(rates: Rates, call: SimCall, result: CallResult) -> float:
    """USD of one simulated call: its reads, writes, uncached input, output and storage."""
    return rates.cost(
        uncached=result.uncached_tokens,
        cache_read=result.cache_read_tokens,
        cache_write=result.cache_write_tokens,
        cache_write_1h=result.cache_write_1h_tokens,
        output=call.output_tokens,
        storage_token_hours=result.extra.get("storage_token_hours", 0.0),
    )


def _token_scale(calls: Sequence[SimCall]) -> float | None:
    """Reported inclusive input per local token (least squares), for information.

    The simulated counts are already in provider tokens (calibrated per call); this says
    how far the local count of the rebuilt requests was from the provider's.
    """
    scale = TokenScale()
    for call in calls:
        scale.add(call)
    return scale.value()


@dataclass(slots=True)
class TokenScale:
    """:func:`_token_scale`'s sums, of replayed calls added one at a time.

    Shared by :class:`Replay` and :class:`cacheviz.live._sim_stream.SimulationStream`.
    """

    products: int = 0
    """Reported inclusive input times the local count, summed."""
    squares: int = 0
    """The local count squared, summed."""

    def add(self, call: SimCall) -> None:
        """Add ``call`` when it reports its inclusive input (and sent tokens)."""
        reported = call.reported
        if reported is not None and reported.input_tokens is not None and call.total:
            ours = call.local_offsets[-1] if call.local_offsets else call.total
            self.products += reported.input_tokens * ours
            self.squares += ours * ours

    def value(self) -> float | None:
        """Reported input per local token (``None``: no call reports it)."""
        return self.products / self.squares if self.squares else None


def simulate(
    analysis: Analysis,
    provider: str,
    model: str | None = None,
    *,
    prices: str | PriceBook | None = None,
    unpriced: str = "raise",
    calls: list[SimCall] | None = None,
    **rules: Any,
) -> Simulation:
    """Replay ``analysis`` under ``provider``'s caching rules and price every call.

    Parameters
    ----------
    analysis
        An analysed session.
    provider
        ``anthropic``, ``openai``, ``deepseek``, ``google`` (``gemini``), ``vllm`` or
        ``sglang``.
    model
        Price and simulate every call as this model; default: each call's recorded model
        (which must then belong to ``provider``).
    prices
        A :class:`~cacheviz.money.pricing.PriceBook` or a user price file.
    unpriced
        ``"raise"`` (default): a model no price source knows is an error; ``"skip"``:
        its calls get no cost (tokens and verdicts are still computed).
    calls
        ``sim_calls(analysis)``, when already built (they are not modified: another
        ``model`` replays copies of them).
    **rules
        The simulator's parameters (e.g. ``breakpoints="auto"``, ``ttl="1h"``).

    Returns
    -------
    Simulation
    """
    provider = provider_id(provider)
    self_hosted = providers.profile(provider).self_hosted
    logged = engine_rules(analysis.session.calls, provider, rules) if self_hosted else {}
    simulator = make_simulator(provider, **logged, **rules)
    exact = False
    if calls is None or self_hosted:
        calls = sim_calls(analysis, local=self_hosted)
        if self_hosted:
            ids = [call.prompt_token_ids for call in analysis.session.calls]
            exact = all(found is not None for found in ids)
            if exact:
                calls = on_engine_tokens(calls, ids)
    elif model is not None:
        calls = [copy.copy(call) for call in calls]  # the caller's stay as they are
    if model is not None:
        for call in calls:
            if call.model != model:
                call.warm_tokens = 0  # another model's cache: nothing is warm for it
            call.model = model
    frame = analysis.calls
    return replay(
        simulator,
        calls,
        frame["provider"].to_list(),
        frame["prefix_tokens"].to_list(),
        RateCache(prices if isinstance(prices, PriceBook) else PriceBook(prices), provider),
        model=model,
        unpriced=unpriced,
        self_hosted=self_hosted,
        rules=rules,
        parameters=used_parameters(simulator, rules, logged),
        token_exact=exact,
        drifts=drifted_from(frame["drift"].to_list(), frame["prev_call"].to_list()),
    ).simulation()


def engine_rules(calls: Sequence[Call], provider: str, rules: dict[str, Any]) -> dict[str, Any]:
    """The rules a log gives for its engine: ``meta.engine`` of its calls.

    A recorded engine (``cacheviz replay``) says what it is and, when it can, how it is
    set up (``{"name": "vllm", "block_size": 128}``). Only an engine of ``provider``
    counts, only parameters its simulator takes, and a rule given wins.
    """
    names = _rule_names(provider)
    found: dict[str, Any] = {}
    for call in calls:
        engine = call.meta.get("engine")
        if not isinstance(engine, dict) or providers.known(engine.get("name")) != provider:
            continue
        for name, value in engine.items():
            if name in names and name not in rules and name not in found:
                found[name] = value
    return found


def used_parameters(
    simulator: Simulator, rules: dict[str, Any], logged: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Every parameter of ``simulator`` with its value and where it came from."""
    names = getattr(simulator, "__dataclass_fields__", {})
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        if name == "provider":
            continue
        source = "rule" if name in rules else "log" if name in logged else "default"
        out[name] = {"value": getattr(simulator, name), "source": source}
    # a parameter that only picks another's default is not used once that one is given
    for name, given in getattr(simulator, "DEFAULT_OF", {}).items():
        if out.get(given, {}).get("source", "default") != "default":
            out.pop(name, None)
    return out


def on_engine_tokens(calls: list[SimCall], ids: Sequence[list[int] | None]) -> list[SimCall]:
    """``calls`` rebuilt on the engine's token ids of each prompt (``ids`` by call index).

    Each prompt is one block of the engine's tokens: a self-hosted simulator then counts
    exactly what the engine counts (its chat template and tokenizer included).
    """
    from array import array

    tokens: dict[str, array[int]] = {}
    out = []
    for call in calls:
        own = ids[call.index]
        assert own is not None  # the caller checked every call has them
        run = array("i", own)
        digest = hashlib.sha1(run.tobytes()).hexdigest()
        tokens[digest] = run
        out.append(
            dataclasses.replace(
                call,
                hashes=[digest],
                chain=extend_chain([], [digest]),
                offsets=[0, len(run)],
                parts=["messages"],
                roles=[None],
                tokens=tokens.__getitem__,
                breakpoints=[],
                local_offsets=None,
            )
        )
    return out


@dataclass(slots=True)
class Replay:
    """A session replayed and priced (:func:`replay`), its rows as lists.

    ``cols`` holds one list per column of :data:`cacheviz._schema.SIMULATION`;
    :meth:`simulation` builds the :class:`Simulation` (one polars frame).
    """

    provider: str
    model: str | None
    calls: Sequence[SimCall]
    cols: dict[str, list[Any]]
    sources: list[str]
    """The price sources of the priced calls, in order of first use."""
    self_hosted: bool
    rules: dict[str, Any]
    book: PriceBook
    unpriced: str
    parameters: dict[str, dict[str, Any]] = field(default_factory=dict)
    token_exact: bool = False

    def simulation(self) -> Simulation:
        """The :class:`Simulation` of this replay.

        Its score leaves out the calls whose simulated unlogged prefix was sized from
        their own reported read (``sized_from_usage``): their match is circular.
        """
        verdicts = [
            v
            for v, sized in zip(self.cols["verdict"], self.cols["sized_from_usage"], strict=True)
            if v != "not_reported" and not sized
        ]
        return simulation_of(
            self.provider,
            self.model,
            _schema.frame(_schema.SIMULATION, self.cols),
            self.sources,
            self_hosted=self.self_hosted,
            token_scale=_token_scale(self.calls),
            score=sum(v == "match" for v in verdicts) / len(verdicts) if verdicts else None,
            rules=self.rules,
            prices=self.book,
            unpriced=self.unpriced,
            parameters=self.parameters,
            token_exact=self.token_exact,
        )


def simulation_of(
    provider: str,
    model: str | None,
    frame: pl.DataFrame,
    sources: list[str],
    *,
    self_hosted: bool,
    token_scale: float | None,
    score: float | None,
    rules: dict[str, Any],
    prices: PriceBook | None = None,
    unpriced: str = "raise",
    parameters: dict[str, dict[str, Any]] | None = None,
    token_exact: bool = False,
) -> Simulation:
    """The :class:`Simulation` of a replay's rows ``frame`` (:data:`~cacheviz._schema.SIMULATION`).

    ``sources`` are the price sources of its priced calls; the totals are the frame's
    sums, ``None`` for a self-hosted engine or when no call was priced.
    """
    priced = not self_hosted and bool(sources)
    equal, reported = exact_agreement(frame)
    return Simulation(
        provider=provider,
        model=model,
        price_source="; ".join(sources) or None,
        calls=frame,
        total_cost_usd=float(frame["cost_usd"].sum()) if priced else None,
        ideal_usd=float(frame["ideal_usd"].sum()) if priced else None,
        token_scale=token_scale,
        score=score,
        rules=dict(rules),
        prices=prices,
        unpriced=unpriced,
        parameters=dict(parameters or {}),
        agreement=equal / reported if reported else None,
        agreement_calls=(equal, reported),
        token_exact=token_exact,
    )


def exact_agreement(frame: pl.DataFrame) -> tuple[int, int]:
    """``(equal, reported)``: calls whose simulated read is exactly the reported one."""
    read = frame["reported_cache_read_tokens"]
    shown = frame.filter(read.is_not_null())
    equal = int((shown["cache_read_tokens"] == shown["reported_cache_read_tokens"]).sum())
    return equal, shown.height


def replay(
    simulator: Simulator,
    calls: list[SimCall],
    recorded: Sequence[str],
    prefixes: Sequence[int],
    price: RateCache,
    *,
    model: str | None = None,
    unpriced: str = "raise",
    self_hosted: bool = False,
    rules: dict[str, Any] | None = None,
    parameters: dict[str, dict[str, Any]] | None = None,
    token_exact: bool = False,
    drifts: Sequence[int | None] | None = None,
) -> Replay:
    """Replay ``calls`` with ``simulator`` and price each call (:func:`simulate`'s rows).

    ``recorded`` and ``prefixes`` are each call's provider and common-prefix line (by
    call index), ``price`` the rates of the simulator's provider; ``model``,
    ``unpriced`` and ``rules`` as for :func:`simulate` (``calls`` already carry
    ``model``); a ``self_hosted`` engine's calls are not priced. ``drifts`` (by call
    index, :func:`drifted_from`): the call a drift point broke from, for its
    ``prefill_ms_stable``.
    """
    provider = price.provider
    results = simulator.run(calls)
    prefills: dict[str, PrefillModel] = {}
    stable = StableReads(read_unit(simulator), drifts)
    cols: dict[str, list[Any]] = {name: [] for name in _schema.SIMULATION}
    appends = [(cols[name].append, name) for name in _schema.SIMULATION]
    sources: list[str] = []
    for call, result in zip(calls, results, strict=True):
        origin = recorded[call.index]
        rates = None
        if not self_hosted:
            rates = call_rates(
                price, call, provider=provider, model=model, origin=origin, unpriced=unpriced
            )
            if rates is not None and rates.source not in sources:
                sources.append(rates.source)
        values = replay_row(
            call,
            result,
            rates,
            prefixes[call.index],
            origin=origin,
            provider=provider,
            model=model,
            self_hosted=self_hosted,
            prefills=prefills,
            stable=stable,
        )
        for append, name in appends:
            append(values[name])
    return Replay(
        provider,
        model,
        calls,
        cols,
        sources,
        self_hosted,
        dict(rules or {}),
        price.book,
        unpriced,
        dict(parameters or {}),
        token_exact,
    )


def drifted_from(drift: Sequence[bool | None], prev_call: Sequence[int | None]) -> list[int | None]:
    """Per call, the call its drift broke from (its thread's previous one), else ``None``.

    ``drift`` and ``prev_call`` are the calls frame's columns (by call index).
    """
    return [p if d else None for d, p in zip(drift, prev_call, strict=True)]


def read_unit(simulator: Any) -> int:
    """The tokens a self-hosted rule reads in multiples of: vLLM's block, SGLang's page, else 1."""
    for name in ("block_size", "page_size"):
        value = getattr(simulator, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 1


def stable_read(read: int, total: int, previous: int, unit: int = 1) -> int:
    """What a drift point would have read had its prefix been kept.

    Without the drift the call would start with the whole previous call of its thread
    (``previous`` tokens, in the replay's tokens), and the cache is taken to still hold
    it: the rules' read of it, at most ``total - 1`` (the last token is always computed)
    and floored to the rule's ``unit`` (:func:`read_unit`), and never less than the call
    did ``read``.
    """
    whole = max(0, min(previous, total - 1))
    return max(read, whole - whole % unit)


@dataclass(slots=True)
class StableReads:
    """:func:`stable_read` of each drift point of a replay, its calls given in order.

    ``drifts`` by call index (:func:`drifted_from`; ``None``: no drift point known).
    """

    unit: int
    drifts: Sequence[int | None] | None
    inputs: dict[int, int] = field(default_factory=dict)
    """Each replayed call's input tokens (a later drift point's ``previous``)."""

    def step(self, index: int, result: CallResult) -> int | None:
        """Call ``index``'s stable read (``None``: not a drift point); remembers its size."""
        self.inputs[index] = result.input_tokens
        if self.drifts is None or index >= len(self.drifts):
            return None
        source = self.drifts[index]
        previous = None if source is None else self.inputs.get(source)
        if previous is None:
            return None
        return stable_read(result.cache_read_tokens, result.input_tokens, previous, self.unit)


def prefill_factor_of(frame: pl.DataFrame) -> float | None:
    """:attr:`Simulation.prefill_factor` of a replay's rows (``None``: no prefill time)."""
    if "prefill_ms" not in frame.columns or frame["prefill_ms"].null_count() == frame.height:
        return None
    stable = float(frame["prefill_ms_stable"].sum())
    return float(frame["prefill_ms"].sum()) / stable if stable > 0 else None


def prefill_model(provider: str, model: str, kept: dict[str, PrefillModel]) -> PrefillModel:
    """The prefill-time model of ``provider``'s engine running ``model`` (``kept``: by model)."""
    found = kept.get(model)
    if found is None:
        found = kept[model] = load_prefill(provider, model)
    return found


def call_rates(
    price: RateCache,
    call: SimCall,
    *,
    provider: str,
    model: str | None,
    origin: str,
    unpriced: str,
) -> Rates | None:
    """The rates of one replayed call (``None``: an unknown model, ``unpriced="skip"``).

    Raises
    ------
    SimulationError
        The call's model is another provider's (``origin``) and no ``model`` was named.
    UnknownModelError
        No price for the model.
    """
    try:
        return price(call.model, call.ts, call.total)
    except UnknownModelError:
        if unpriced == "skip":
            return None
        if model is None and origin != provider:
            msg = (
                f"call {call.index} used {call.model!r} ({origin}); to replay the "
                f"session on {provider}, name one of its models with --model / model="
            )
            raise SimulationError(msg) from None
        raise


def replay_row(
    call: SimCall,
    result: CallResult,
    rates: Rates | None,
    line: int,
    *,
    origin: str,
    provider: str,
    model: str | None,
    self_hosted: bool,
    prefills: dict[str, PrefillModel],
    stable: StableReads,
) -> dict[str, Any]:
    """:func:`sim_row` of one replayed call, as a whole replay and a live one build it.

    The call's reported usage is compared only when it was recorded at the simulated
    ``provider`` (``origin``) with the simulated ``model`` (``None``: its own); a
    self-hosted engine's prefill model is fitted per model in ``prefills``.
    """
    same = model is None or model == call.model
    reported = call.reported if origin == provider and same else None
    prefill = prefill_model(provider, call.model, prefills) if self_hosted else None
    return sim_row(
        call,
        result,
        rates,
        line,
        reported,
        self_hosted,
        prefill,
        stable.step(call.index, result),
    )


def sim_row(
    call: SimCall,
    result: CallResult,
    rates: Rates | None,
    line: int,
    reported: Any,
    self_hosted: bool,
    prefill: PrefillModel | None = None,
    stable: int | None = None,
) -> dict[str, Any]:
    """One row of :data:`cacheviz._schema.SIMULATION`: the call's replay, priced.

    ``line`` is the call's common-prefix line, ``reported`` its reported usage when it
    is comparable (same provider and model), else ``None``; ``prefill`` the engine's
    prefill-time model (self-hosted engines); ``stable`` a drift point's
    :func:`stable_read` (``None``: not a drift point).

    The **prefill factor** (``prefill_factor``, defined here once): the call's estimated
    prefill time over the same call's had its prefix been kept (``prefill_ms /
    prefill_ms_stable``); 1 at a call that is not a drift point.
    """
    cost = ideal = None
    if rates is not None:
        cost = result_cost(rates, call, result)
        # a true lower bound: whatever the line or the rules let this call read, read
        # at the cache price, and nothing written
        # (and at least what the provider itself read)
        served = call.reported.cache_read_tokens if call.reported is not None else None
        prefix = min(call.total, max(line, result.cache_read_tokens, served or 0))
        ideal = rates.cost(
            uncached=call.total - prefix, cache_read=prefix, output=call.output_tokens
        )
    return {
        "call": call.index,
        "thread": call.thread,
        "model": call.model,
        "ts": call.ts,
        "input_tokens": result.input_tokens,
        "cache_read_tokens": result.cache_read_tokens,
        "cache_write_tokens": result.cache_write_tokens,
        "cache_write_1h_tokens": result.cache_write_1h_tokens,
        "uncached_tokens": result.uncached_tokens,
        "output_tokens": call.output_tokens,
        "cost_usd": cost,
        "ideal_usd": ideal,
        "prefill_tokens_saved": int(result.extra.get("prefill_tokens_saved", 0))
        if self_hosted
        else None,
        **prefill_columns(result, prefill, stable),
        "reported_input_tokens": reported.input_tokens if reported else None,
        "reported_cache_read_tokens": reported.cache_read_tokens if reported else None,
        "reported_cache_write_tokens": reported.cache_write_tokens if reported else None,
        "reported_output_tokens": reported.output_tokens if reported else None,
        "verdict": _verdict(result, reported),
        "sized_from_usage": reported is not None and call.sized_from_usage,
        "detail": result.detail,
    }


def prefill_columns(
    result: CallResult, prefill: PrefillModel | None, stable: int | None
) -> dict[str, float | None]:
    """A call's ``prefill_ms``, ``prefill_ms_stable`` and ``prefill_factor`` (:func:`sim_row`)."""
    if prefill is None:
        return {"prefill_ms": None, "prefill_ms_stable": None, "prefill_factor": None}
    ms = round(prefill.estimate(result.uncached_tokens, result.cache_read_tokens), 3)
    kept = ms
    if stable is not None:
        kept = round(prefill.estimate(result.input_tokens - stable, stable), 3)
    return {
        "prefill_ms": ms,
        "prefill_ms_stable": kept,
        "prefill_factor": ms / kept if kept > 0 else None,
    }


def compare(
    analysis: Analysis,
    targets: Sequence[str],
    *,
    prices: str | PriceBook | None = None,
    errors: str = "row",
    **rules: Any,
) -> pl.DataFrame:
    """The session's cost under several ``provider:model`` targets, one row each.

    ``rules`` go to every simulator that accepts them (e.g. ``ttl``). The ideal bound is
    in ``ideal_usd``.

    Parameters
    ----------
    analysis
        An analysed session.
    targets
        ``provider:model`` pairs (``provider`` alone: each call's recorded model).
    prices
        A :class:`~cacheviz.money.pricing.PriceBook` or a user price file.
    errors
        ``"row"`` (default): a target that fails is that row's ``error`` (one line: what
        failed and why, no numbers) and the other targets are computed; a model without
        a price leaves its row's tokens, a null ``cost_usd`` and ``ideal_usd`` (not 0)
        and ``error`` "no price ...". ``"raise"``: the first failure is raised (a model
        without a price is :class:`~cacheviz.errors.UnknownModelError`).
    **rules
        Simulator parameters, given to the targets whose simulator takes them.

    Returns
    -------
    polars.DataFrame
        :data:`cacheviz._schema.COMPARE`, one row per target, in order.

    Raises
    ------
    SimulationError
        A target names no known provider (before anything is replayed), or ``errors`` is
        neither ``"row"`` nor ``"raise"``.
    """
    if errors not in ("row", "raise"):
        msg = f"errors={errors!r}: expected 'row' (a failed target is its row's error) or 'raise'"
        raise SimulationError(msg)
    parsed: list[tuple[str, str, str | None]] = []
    for target in targets:  # a misspelt provider is the caller's error, not a row's
        name, _, named = target.partition(":")
        parsed.append((target, provider_id(name), named or None))
    book = prices if isinstance(prices, PriceBook) else PriceBook(prices)
    unpriced = "skip" if errors == "row" else "raise"
    rows = []
    built: list[SimCall] | None = None  # one replay input for every target (not copied twice)
    for target, provider, model in parsed:
        try:
            accepted = {k: v for k, v in rules.items() if k in _rule_names(provider)}
            result = own_replay(analysis, provider, model, book, accepted)
            if result is None:
                if built is None and not providers.profile(provider).self_hosted:
                    built = sim_calls(analysis)
                result = simulate(
                    analysis,
                    provider,
                    model,
                    prices=book,
                    unpriced=unpriced,
                    calls=built,
                    **accepted,
                )
            row = compare_row(target, result)
        except Exception as exc:  # one target's failure is its row's, not the table's
            if errors == "raise":
                raise
            row = failed_row(target, provider, model, exc)
        rows.append(row)
    return pl.DataFrame(rows, schema=_schema.COMPARE)


def own_replay(
    analysis: Analysis,
    provider: str,
    model: str | None,
    book: PriceBook,
    rules: dict[str, Any],
) -> Simulation | None:
    """The analysis's own replay when it is ``simulate(analysis, provider, model, ...)``.

    :func:`cacheviz.analysis.analyze` replays the session under its provider's default
    rules (``analysis.own_simulation``). A comparison target of that provider is the same
    replay when no rule is set, ``model`` is every call's recorded model (or ``None``),
    the prices are the same (the same book, or both the bundled prices with no user
    file) and every call was priced (the own replay skips a model without a price where
    :func:`simulate` raises). Else ``None``: the target is replayed.
    """
    own: Simulation | None = getattr(analysis, "own_simulation", None)
    if own is None or rules or own.rules or own.model is not None or own.prices is None:
        return None
    name = providers.known(provider)
    if name is None or own.provider != name or providers.profile(name).self_hosted:
        return None
    same_book = own.prices is book or (own.prices.user_file is None and book.user_file is None)
    if not same_book or own.total_cost_usd is None or own.calls["cost_usd"].null_count():
        return None
    if model is not None and any(call.model != model for call in analysis.session.calls):
        return None
    return dataclasses.replace(own, model=model, unpriced="raise")


def compare_row(target: str, result: Simulation) -> dict[str, Any]:
    """One row of :func:`compare`: ``target``'s replay summed.

    A replay with calls of a model no price source knows (``unpriced="skip"``) has no
    cost: ``cost_usd`` and ``ideal_usd`` are null (a sum over the priced calls only is not
    the session's cost) and ``error`` names the models (:func:`unpriced_note`).
    """
    frame = result.calls
    note = unpriced_note(result)
    return {
        "target": target,
        "provider": result.provider,
        "model": result.model,
        "input_tokens": int(frame["input_tokens"].sum()),
        "cache_read_tokens": int(frame["cache_read_tokens"].sum()),
        "cache_write_tokens": int(frame["cache_write_tokens"].sum()),
        "uncached_tokens": int(frame["uncached_tokens"].sum()),
        "output_tokens": int(frame["output_tokens"].fill_null(0).sum()),
        "cost_usd": None if note else result.total_cost_usd,
        "ideal_usd": None if note else result.ideal_usd,
        "price_source": result.price_source,
        "prefill_factor": result.prefill_factor,
        "error": note,
    }


def unpriced_note(result: Simulation) -> str | None:
    """``no price for 'M' on P (n of N calls)...``: the replay's unpriced models, else ``None``.

    A self-hosted engine has no prices and needs none (``None``).
    """
    if providers.profile(result.provider).self_hosted:
        return None
    frame = result.calls
    missing = frame.filter(pl.col("cost_usd").is_null() & pl.col("model").is_not_null())
    if not missing.height:
        return None
    models = ", ".join(repr(m) for m in sorted(set(missing["model"].to_list())))
    share = "" if missing.height == frame.height else f" ({missing.height} of {frame.height} calls)"
    fix = "pass a price file (--prices FILE, prices= in Python)"
    if result.model is None:  # the recorded models, maybe another vendor's: name one
        fix = f"name a model of {result.provider} ({result.provider}:MODEL) or {fix}"
    return f"no price for {models} on {result.provider}{share}: {fix}"


def failed_row(target: str, provider: str, model: str | None, exc: Exception) -> dict[str, Any]:
    """The :func:`compare` row of a target whose replay raised ``exc``: no numbers, its error."""
    row: dict[str, Any] = dict.fromkeys(_schema.COMPARE)
    row.update(target=target, provider=provider, model=model)
    row["error"] = f"replay failed: {failure_line(exc)}"
    return row


def failure_line(exc: BaseException) -> str:
    """Why ``exc`` was raised, in one line (for a comparison row or a status line).

    An exception cacheviz raises on purpose is its message; any other is a fault in
    cacheviz, named as such so that it can be reported.
    """
    text = " ".join(str(exc).split())
    if isinstance(exc, CacheVizError):
        return text
    return (
        f"internal error {type(exc).__name__}: {text} "
        "(a cacheviz bug: please report it with the transcript's format)"
    )


def _rule_names(provider: str) -> set[str]:
    return set(providers.simulator_class(provider).__dataclass_fields__) - {"provider"}


__all__ = [
    "Simulation",
    "SimulationError",
    "compare",
    "compare_row",
    "failed_row",
    "failure_line",
    "make_simulator",
    "own_replay",
    "simulate",
    "unpriced_note",
]
