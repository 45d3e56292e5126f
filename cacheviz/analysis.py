"""Analysis: tokenize and compare every call of a session, into polars frames."""

from __future__ import annotations

import warnings
from array import array
from dataclasses import dataclass
from dataclasses import field as _field
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz import _schema
from cacheviz._util.seq import common_prefix
from cacheviz.errors import CacheVizWarning
from cacheviz.model import OPAQUE, Call, Session
from cacheviz.money._costs import CostLists, cost_lists
from cacheviz.money._metrics import hit_ratio, waste_of
from cacheviz.prefix._calibrate import MAX_FACTOR, Calibration, calibrate, disagreements
from cacheviz.prefix._compaction import mark_compactions
from cacheviz.prefix._diagnose import Diagnosis, diagnose
from cacheviz.prefix._index import Match, PrefixIndex, match_pair
from cacheviz.prefix._namespace import KeyedParams, keyed_params, level_start, namespace_of
from cacheviz.prefix._segments import log_hashes, prefix_hash, segments_frame
from cacheviz.prefix._thread import assign_threads
from cacheviz.prefix._ttl import entry_ttls
from cacheviz.reported._totals import reported_totals
from cacheviz.reported._verdict import verdict_counts
from cacheviz.request._tokens import TokenCache, encoding_for_model

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from cacheviz.money._simulate import Simulation
    from cacheviz.money.pricing import RateCache

_MAX_UNLOGGED = 10_000_000  # the largest context windows; beyond that the report is suspect
_USAGE_FIELDS = {
    "reported_input_tokens": "input_tokens",
    "reported_cache_read_tokens": "cache_read_tokens",
    "reported_cache_write_tokens": "cache_write_tokens",
    "reported_cache_write_5m_tokens": "cache_write_5m_tokens",
    "reported_cache_write_1h_tokens": "cache_write_1h_tokens",
    "reported_output_tokens": "output_tokens",
    "reported_reasoning_tokens": "reasoning_tokens",
}


@dataclass
class Analysis:
    """The analysed session: ``calls``, ``segments`` and ``drifts`` polars frames.

    Columns and dtypes are listed in :mod:`cacheviz._schema`. ``segments`` (one row per
    call and segment, millions for long sessions) is built on first access.
    """

    session: Session
    calls: pl.DataFrame
    drifts: pl.DataFrame
    token_caches: dict[str, TokenCache]
    offsets: list[list[int]]  # per call: provider tokens before each block, then the total
    local_offsets: list[list[int]] = _field(default_factory=list)  # the same, local encoding
    calibration: Calibration | None = None
    _segments: pl.DataFrame | None = None
    misses: pl.DataFrame = _field(default_factory=lambda: _schema.frame(_schema.MISSES, {}))
    billed_usd: float | None = None  # sum of billed_usd over the calls that have one
    unpriced_models: list[str] = _field(default_factory=list)  # reported, but no price
    unpriced_reasons: dict[str, str] = _field(default_factory=dict)  # why, per model: one line
    own_simulation: Simulation | None = None  # the session under its own provider's rules

    @property
    def segments(self) -> pl.DataFrame:
        """One row per (call, segment): the CacheShape of every request."""
        if self._segments is None:
            lengths = {name: cache.lengths() for name, cache in self.token_caches.items()}
            self._segments = segments_frame(self.session, self.calls, lengths, self.offsets)
        return self._segments

    def __repr__(self) -> str:
        return (
            f"<Analysis {self.session.format} calls={self.calls.height} "
            f"drifts={self.drifts.height}>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """Shown in a notebook cell, an analysis is the inspector widget."""
        from cacheviz.ui.widget import inspect

        return inspect(self)._repr_mimebundle_(**kwargs)

    def _display_(self) -> Any:
        """Shown in a marimo cell, an analysis is the inspector (an anywidget marimo shows)."""
        from cacheviz.ui.widget import inspect

        return inspect(self)

    def simulate(
        self, provider: str, model: str | None = None, *, prices: Any = None, **rules: Any
    ) -> Simulation:
        """Replay the session under ``provider``'s caching rules and price it.

        See :func:`cacheviz.money._simulate.simulate`.
        """
        from cacheviz.money._simulate import simulate

        return simulate(self, provider, model, prices=prices, **rules)

    def compare(self, targets: list[str], *, prices: Any = None, **rules: Any) -> pl.DataFrame:
        """Cost of the session under several ``provider:model`` targets, side by side.

        See :func:`cacheviz.money._simulate.compare`.
        """
        from cacheviz.money._simulate import compare

        return compare(self, targets, prices=prices, **rules)

    def summary(self) -> dict[str, Any]:
        """The ``cacheviz summary --json`` document (see docs/format.md)."""
        drifts = {row["call"]: row for row in self.drifts.iter_rows(named=True)}
        misses = {row["call"]: row for row in self.misses.iter_rows(named=True)}
        calls = []
        for row in self.calls.iter_rows(named=True):
            drift = drifts.get(row["call"])
            miss = misses.get(row["call"])
            reported = None
            if row["usage_provenance"] is not None:
                reported = {key: row[f"reported_{key}"] for key in _schema.SUMMARY_REPORTED}
                reported["provenance"] = row["usage_provenance"]
            doc = {key: row[key] for key in _schema.SUMMARY_CALL}
            ts = doc["ts"]
            doc["ts"] = None if ts is None else ts.isoformat().replace("+00:00", "Z")
            doc["drift"] = (
                None if drift is None else {key: drift[key] for key in _schema.SUMMARY_DRIFT}
            )
            doc["miss"] = None if miss is None else {key: miss[key] for key in _schema.SUMMARY_MISS}
            doc["reported"] = reported
            calls.append({key: doc[key] for key in _schema.SUMMARY_CALL_ORDER})
        return {
            "format": self.session.format,
            "path": None if self.session.path is None else str(self.session.path),
            "skipped_lines": len(self.session.skipped),
            "ignored_records": dict(self.session.ignored),
            "billed_usd": self.billed_usd,
            **({"billed_scope": "session"} if self.billed_scope == "session" else {}),
            **self.headline(),
            "unpriced_models": list(self.unpriced_models),
            "unpriced_reasons": dict(self.unpriced_reasons),
            "reported_totals": reported_totals(self.session, self.calls),
            "calls": calls,
        }

    @property
    def billed_scope(self) -> str:
        """``"session"`` when the billed cost is the session's reported figure, else ``"calls"``."""
        return "session" if self.session.session_usage else "calls"

    def simulation_withheld(self) -> str | None:
        """Why the simulated, ideal and waste figures are not shown (``None``: they are).

        A rebuilt request starts with the unlogged system prompt and tools, sized from
        the usage its thread reports. When no call of a thread reports usage (GitHub
        Copilot CLI logs it only per session) that size is unknown, so a simulated cost
        would price the visible messages alone: well below what was sent, and not
        comparable with the billed cost.
        """
        opaque = {h for h, c in self.session.contents.items() if c.kind == OPAQUE}
        if not opaque:
            return None
        sized = self.calls["unlogged_tokens"].to_list()
        unsized = sum(
            1
            for call, size in zip(self.session.calls, sized, strict=True)
            if size is None and any(h in opaque for h in call.hashes[: call.message_start])
        )
        if not unsized:
            return None
        return (
            f"{unsized} of {len(sized)} call(s) have an unlogged system prompt and tools of "
            "unknown size (no usage reported to size them): a simulated cost of the "
            "visible messages alone would not be comparable"
        )

    def headline(self) -> dict[str, Any]:
        """Session totals every view shows the same way (:mod:`cacheviz.money._metrics`).

        ``simulated_usd`` / ``ideal_usd`` / ``waste_usd`` (billed - ideal over the calls
        with reported usage, else simulated - ideal; never negative; null, with
        ``simulation_withheld`` saying why, when the requests' unlogged part could not be
        sized: :meth:`simulation_withheld`), ``waste_of`` (what the waste sums:
        :meth:`cacheviz.money._metrics.Waste.to_dict`), ``hit_ratio`` (token- and
        request-weighted, null when no cache fields were reported; from the session's own
        totals, with ``scope: "session"``, when usage is reported only per session), ``token_basis``
        (calls per basis, :mod:`cacheviz.prefix._calibrate`) and ``provider_verdicts``
        (:func:`cacheviz.reported._verdict.verdict_counts`: calls per verdict state, and
        how often cacheviz's own reading agrees with a comparable verdict).
        """
        frame = self.calls
        money = {
            name: (float(frame[name].sum()) if frame[name].is_not_null().any() else None)
            for name in ("simulated_usd", "ideal_usd")
        }
        basis = waste_of(
            frame["billed_usd"].to_list(),
            frame["simulated_usd"].to_list(),
            frame["ideal_usd"].to_list(),
        )
        waste: float | None = basis.usd
        waste_sums: dict[str, Any] | None = basis.to_dict()
        withheld = self.simulation_withheld()
        if withheld is not None:  # costs of a prompt the log does not hold: not comparable
            money = {"simulated_usd": None, "ideal_usd": None}
            waste, waste_sums = None, None
        hit: dict[str, Any] = hit_ratio(
            frame["reported_cache_read_tokens"].to_list(),
            frame["reported_input_tokens"].to_list(),
        ).to_dict()
        totals = self.session.reported_totals
        if self.session.session_usage and totals is not None:  # the session's own figure
            read, total = totals.cache_read_tokens, totals.input_tokens
            ratio = None if read is None or not total else read / total
            hit = {"tokens": ratio, "requests": None, "calls": 0, "scope": "session"}
        return {
            **money,
            "waste_usd": waste,
            "waste_of": waste_sums,
            **({"simulation_withheld": withheld} if withheld is not None else {}),
            "hit_ratio": hit,
            "token_basis": {
                basis: int(count)
                for basis, count in frame["token_basis"].value_counts(sort=True).iter_rows()
                if basis is not None
            },
            "provider_verdicts": verdict_counts(
                frame["provider_verdict"].to_list(), frame["verdict_agrees"].to_list()
            ),
        }


def analyze(
    session: Session,
    *,
    thread: str = "auto",
    encoding: str | None = None,
    prices: Any = None,
) -> Analysis:
    """Tokenize and compare every call of ``session``; diagnose and price it.

    Parameters
    ----------
    session
        A loaded session (:func:`cacheviz.load`).
    thread
        How to group calls into threads; see :mod:`cacheviz.prefix._thread`.
    encoding
        Force one tiktoken encoding for every call (default: per model, ``o200k_base``
        as an approximation where the model's tokenizer is not public).
    prices
        A :class:`~cacheviz.money.pricing.PriceBook` or a user price file, for the billed,
        simulated and ideal costs and the cost of each drift and miss.

    Returns
    -------
    Analysis
    """
    columns = analyze_columns(session, thread=thread, encoding=encoding, prices=prices)
    lists, costs = columns.prefix, columns.costs
    runs = iter(costs.runs.values())
    own = next(runs, None)
    return Analysis(
        session,
        _schema.frame(_schema.CALLS, columns.calls),
        _schema.frame(_schema.DRIFTS, columns.drifts),
        lists.token_caches,
        lists.offsets,
        lists.local_offsets,
        lists.calibration,
        misses=_schema.frame(_schema.MISSES, costs.misses),
        billed_usd=costs.billed_usd,
        unpriced_models=costs.unpriced_models,
        unpriced_reasons=costs.unpriced_reasons,
        own_simulation=None if own is None else own.simulation(),
    )


@dataclass(slots=True)
class PrefixLists:
    """A session through the prefix stages (:func:`prefix_lists`), as plain lists, no frame.

    ``call_cols`` and ``drift_cols`` hold every column of :data:`cacheviz._schema.CALLS`
    and :data:`~cacheviz._schema.DRIFTS`, the cost columns still empty (``None``);
    ``offsets`` are in provider tokens (the calibrated axis), ``local_offsets`` in the
    local encoding's.
    """

    session: Session
    call_cols: dict[str, list[Any]]
    drift_cols: dict[str, list[Any]]
    token_caches: dict[str, TokenCache]
    offsets: list[list[int]]
    local_offsets: list[list[int]]
    calibration: Calibration | None  # None: rebuilt from an Analysis without one


@dataclass(slots=True)
class AnalysisColumns:
    """:func:`analyze` as plain lists: what a frame of each table would hold, unbuilt.

    For callers that flatten many sessions into one table (``cacheviz scan``): building
    a polars frame per session costs more than the analysis of a short one.
    """

    prefix: PrefixLists
    costs: CostLists
    calls: dict[str, list[Any]]
    """Every column of :data:`cacheviz._schema.CALLS`, the cost columns filled."""
    drifts: dict[str, list[Any]]
    """Every column of :data:`cacheviz._schema.DRIFTS`, the cost columns filled."""


def analyze_columns(
    session: Session,
    *,
    thread: str = "auto",
    encoding: str | None = None,
    prices: Any = None,
    rates: dict[str, RateCache] | None = None,
    sizes: str = "tokens",
) -> AnalysisColumns:
    """:func:`analyze` without the frames: the same values, as lists (see its parameters).

    String values are those the frames hold (:func:`cacheviz._schema.clean`). ``rates``:
    a dict the caller keeps across sessions priced with the same ``prices`` book, so
    that each price period is resolved once for all of them
    (:func:`cacheviz.money._costs.cost_lists`). ``sizes``: see :func:`prefix_lists`.
    """
    lists = prefix_lists(session, thread=thread, encoding=encoding, sizes=sizes)
    costs = cost_lists(lists, prices=prices, rates=rates)
    return AnalysisColumns(
        lists, costs, lists.call_cols | costs.calls, lists.drift_cols | costs.drifts
    )


def prefix_lists(
    session: Session,
    *,
    thread: str = "auto",
    encoding: str | None = None,
    sizes: str = "tokens",
) -> PrefixLists:
    """Tokenize and compare every call of ``session`` (:func:`analyze`, no costs).

    The prefix stages: tokens, threads, the common-prefix line, drifts, calibration, TTLs.

    ``sizes="bytes"`` sizes the blocks of a session every call of which reports usage
    by their bytes, not by BPE (:class:`~cacheviz.request._tokens.TokenCache`): no
    tokenizer runs, and calibration maps those sizes onto the reported usage. Every
    call's input is then its reported input, as with BPE, but a position calibration
    interpolates (inside a block, inside the span a call added, on a call whose report
    is below what it shares) moves, and with it the figures read there (the prefix line
    of a rescaled call, a drift's tokens lost, a miss's shortfall, the ideal cost), as
    does a thread found by shares of tokens: ``bench/same_sizes.py`` lists them per
    session (docs/performance.md, "Sizes from byte lengths"). So nothing shown uses it
    (``cacheviz scan`` counts BPE); it measures how far a figure depends on the local
    sizes. A session with a call that reports no usage is tokenized (its sizes are the
    only truth it has).
    """
    calls = session.calls
    if sizes == "bytes" and not all(c.usage and c.usage.input_tokens is not None for c in calls):
        sizes = "tokens"
    mark_compactions(calls)  # byte-exact captures: the summarizer request, the rebuild
    caches: dict[str, TokenCache] = {}
    call_cache: list[TokenCache] = []
    exact: list[bool] = []
    for call in calls:
        own, is_exact = encoding_for_model(call.model)
        name = encoding or own
        if name not in caches:
            caches[name] = TokenCache(name, session.contents, sizes=sizes)
        call_cache.append(caches[name])
        exact.append(is_exact and name == own)
    keys = [call.hashes for call in calls]
    if len(caches) == 1:
        next(iter(caches.values())).ensure(session.contents)
    else:
        for cache in caches.values():
            cache.ensure(h for i, c in enumerate(call_cache) if c is cache for h in keys[i])
    unlogged = _size_unlogged(session, call_cache)
    lengths = {name: cache.lengths() for name, cache in caches.items()}
    offsets = _offsets(keys, [lengths[c.encoding] for c in call_cache])
    threads, parents = assign_threads(
        calls, offsets, lambda i, h: call_cache[i][h], mode=thread, contents=session.contents
    )

    call_cols: dict[str, list[Any]] = {name: [] for name in _schema.CALLS}
    drift_cols: dict[str, list[Any]] = {name: [] for name in _schema.DRIFTS}
    walk = CallWalk()
    params = [keyed_params(call) for call in calls]
    previous: list[int | None] = [None] * len(calls)
    shared: list[int | None] = [None] * len(calls)
    for i in range(len(calls)):
        previous[i], shared[i], _ = walk.step(
            session,
            i,
            threads[i],
            parents[i],
            offsets,
            params,
            call_cache,
            exact[i],
            call_cols,
            drift_cols,
            unlogged,
        )

    call_cols["ttl_seconds"] = entry_ttls(calls, threads)
    reported = [call.usage.input_tokens if call.usage else None for call in calls]
    heads = [offsets[i][call.message_start] for i, call in enumerate(calls)]
    calibration = calibrate(offsets, reported, previous, shared, exact, threads, heads)
    _warn_disagreements(session, [o[-1] for o in offsets], reported)
    _to_provider_tokens(call_cols, drift_cols, offsets, calibration)
    _clean_strings(call_cols, _schema.CALLS)
    _clean_strings(drift_cols, _schema.DRIFTS)
    return PrefixLists(
        session, call_cols, drift_cols, caches, calibration.offsets, offsets, calibration
    )


def _warn_disagreements(
    session: Session, local_totals: list[int], reported: list[int | None]
) -> None:
    """One warning naming the calls whose reported input and local size disagree widely."""
    found = disagreements(local_totals, reported)
    if not found:
        return
    calls = session.calls
    named = []
    for i, factor in found[:5]:
        line = f" (line {calls[i].line})" if calls[i].line else ""
        shown = "no" if factor == float("inf") else f"{factor:.3g}x the"
        named.append(f"#{i}{line}: {reported[i]:,} reported, {shown} {local_totals[i]:,} logged")
    more = f"; and {len(found) - 5} more" if len(found) > 5 else ""
    warnings.warn(
        f"{session.path}: {len(found)} call(s) report an input more than "
        f"{MAX_FACTOR:g}x the request the log holds ({'; '.join(named)}{more}); "
        "their token positions are scaled to the report: check that the log holds the "
        "whole request and that the usage is right",
        CacheVizWarning,
        stacklevel=3,
    )


def _clean_strings(cols: dict[str, list[Any]], schema: dict[str, Any]) -> None:
    """The string columns as a frame holds them (lone surrogates replaced), in place."""
    for name, dtype in schema.items():
        if dtype == pl.String:
            values = cols[name]
            if any(isinstance(v, str) and not v.isascii() for v in values):
                cols[name] = [_schema.clean(v) for v in values]


_EMPTY = array("i")


@dataclass
class CallWalk:
    """What :func:`analyze`'s per-call loop carries from one call to the next.

    The prefix index of each cache namespace and the latest call of each thread and of
    each namespace; :class:`cacheviz.live._incremental.LiveLog` keeps one across appends.
    """

    indexes: dict[str, PrefixIndex] = _field(default_factory=dict)
    latest: dict[str, int] = _field(default_factory=dict)
    latest_in_namespace: dict[str, int] = _field(default_factory=dict)

    def step(
        self,
        session: Session,
        i: int,
        name: str,
        parent: str | None,
        offsets: list[list[int]],
        params: list[KeyedParams],
        call_cache: list[TokenCache],
        exact: bool,
        call_cols: dict[str, list[Any]],
        drift_cols: dict[str, list[Any]],
        unlogged: dict[str, int],
    ) -> tuple[int | None, int | None, bool]:
        """Add call ``i``'s row (thread ``name``) and its drift's, if any.

        Returns
        -------
        tuple
            The earlier call its calibration anchors on and the tokens they share
            (``None``, ``None``: none), and whether a drift row was added.
        """
        calls = session.calls
        call = calls[i]
        namespace = namespace_of(call)
        index = self.indexes.setdefault(namespace, PrefixIndex())
        ns_keys, ns_offsets = _namespace_keys(call, call.hashes, offsets[i], params[i])
        best, _ = index.add(ns_keys, ns_offsets, _pseudo_aware(call_cache[i]))
        before = self.latest.get(name)
        self.latest[name] = i
        drift = common = None
        last_here = self.latest_in_namespace.get(namespace)
        self.latest_in_namespace[namespace] = i
        previous = shared = None
        if before is None and last_here is not None and best.tokens:
            # a thread's first call that re-sends another's prefix (a fork, a side call):
            # calibration anchors on that call's positions for the part they share
            other = calls[last_here]
            found = match_pair(
                other.hashes,
                offsets[last_here][-1],
                call.hashes,
                offsets[i],
                call_cache[i].__getitem__,
                call_cache[last_here].__getitem__,
            )
            if found.tokens:
                previous, shared = last_here, found.tokens
        if before is not None:
            common, drift = _thread_drift(session, calls[before], call, offsets, params, call_cache)
            previous, shared = before, common
            if drift is not None and call.meta.get("rebuild") is not None:
                drift = None  # an expected rebuild the log announced (a compaction)
            if drift is not None:
                at, diagnosis = drift
                _add_drift(drift_cols, call, name, calls[before], at, common, offsets, diagnosis)
        _add_call(
            call_cols,
            call,
            name,
            parent,
            namespace,
            call_cache[i].encoding,
            exact,
            offsets[i][-1],
            best,
            None if before is None else calls[before].index,
            common,
            None if drift is None else drift[1],
            unlogged,
            None if session.path is None else session.path.name,
        )
        return previous, shared, drift is not None


def _to_provider_tokens(
    call_cols: dict[str, list[Any]],
    drift_cols: dict[str, list[Any]],
    local: list[list[int]],
    calibration: Calibration,
) -> None:
    """Turn the token columns, counted locally, into provider tokens (in place)."""
    call_cols["local_tokens"] = list(call_cols["input_tokens"])
    call_cols["token_basis"] = list(calibration.basis)
    drift_of = {call: k for k, call in enumerate(drift_cols["call"])}

    def at(call: int, position: int) -> int:
        return calibration.at(call, local[call], position)

    for i in range(len(local)):
        call_to_provider_tokens(call_cols, drift_cols, i, drift_of.get(i), calibration.offsets, at)


def call_to_provider_tokens(
    call_cols: dict[str, list[Any]],
    drift_cols: dict[str, list[Any]],
    i: int,
    drift: int | None,
    mapped: Sequence[Sequence[int]],
    at: Callable[[int, int], int],
) -> None:
    """Turn call ``i``'s token columns, and its drift row's, into provider tokens.

    In place; shared by :func:`prefix_lists` and :class:`cacheviz.live._incremental.LiveLog`.

    Parameters
    ----------
    call_cols, drift_cols
        The calls and drifts columns, call ``i``'s token columns counted locally.
    i
        The call.
    drift
        Its row in ``drift_cols`` (``None``: it did not drift).
    mapped
        Each call's block offsets in provider tokens (:attr:`Calibration.offsets
        <cacheviz.prefix._calibrate.Calibration.offsets>`), at least up to call ``i``.
    at
        ``at(call, position)``: a local token position of a call in provider tokens.
    """
    total = mapped[i][-1]
    prefix = at(i, call_cols["prefix_tokens"][i])
    call_cols["input_tokens"][i] = total
    call_cols["prefix_tokens"][i] = prefix
    call_cols["new_tokens"][i] = total - prefix
    common = call_cols["prev_common_tokens"][i]
    if common is not None:
        call_cols["prev_common_tokens"][i] = at(i, common)
    hidden = call_cols["unlogged_tokens"][i]
    if hidden is not None:
        call_cols["unlogged_tokens"][i] = at(i, hidden)
    if drift is not None:
        before = drift_cols["prev_call"][drift]
        shared = drift_cols["prev_common_tokens"][drift]
        drift_cols["prev_common_tokens"][drift] = at(i, shared)
        drift_cols["block_token_offset"][drift] = at(i, drift_cols["block_token_offset"][drift])
        lost = max(0, mapped[before][-1] - at(before, shared))
        if drift_cols["cause"][drift] == "model_switch":
            lost, drift_cols["detail"][drift] = switch_loss(
                lost, total, call_cols["reported_cache_read_tokens"][i], drift_cols["detail"][drift]
            )
        drift_cols["tokens_lost"][drift] = lost


def switch_loss(lost: int, total: int, read: int | None, detail: str) -> tuple[int, str]:
    """A model switch's tokens lost, bounded by the evidence, and its detail.

    The previous model's entries do not serve the new model, but no more can be lost than
    the request re-sends (``total``), and the provider may read part of it from the new
    model's own cache (``read``: Claude Code's static system prompt, warm from other
    sessions): that part was not lost.

    Examples
    --------
    >>> switch_loss(349_863, 219_715, 68_000, "model changed")
    (151715, "model changed; the provider read 68,000 tokens from the new model's cache")
    """
    bounded = min(lost, total)
    if read:
        bounded = max(0, bounded - read)
        detail = f"{detail}; the provider read {read:,} tokens from the new model's cache"
    return bounded, detail


def _pseudo_aware(cache: TokenCache) -> Any:
    """``cache[h]``, with no tokens for the params pseudo-keys of the namespace index."""

    def tokens_of(digest: str) -> array[int]:
        return _EMPTY if digest.startswith("params:") else cache[digest]

    return tokens_of


def _namespace_keys(
    call: Call, keys: list[str], offsets: list[int], params: KeyedParams
) -> tuple[list[str], list[int]]:
    """The keys the namespace index compares.

    The block hashes, with the cache-keyed request parameters of each level as a
    zero-token pseudo-block where that level starts.
    """
    salts = params.salts()
    if not salts:
        return keys, offsets
    keys, offsets = list(keys), list(offsets)
    for level, key in reversed(salts):  # the last level first: earlier indexes stay put
        at = level_start(call, level)
        keys.insert(at, key)
        offsets.insert(at, offsets[at])
    return keys, offsets


def _thread_drift(
    session: Session,
    before: Call,
    call: Call,
    offsets: list[list[int]],
    params: list[KeyedParams],
    call_cache: list[TokenCache],
) -> tuple[int, tuple[int, Diagnosis] | None]:
    """``(common tokens, (block index, diagnosis) or None)`` against the thread's last call."""
    b, c = before.index, call.index
    prev_total = offsets[b][-1]
    if before.model != call.model or before.provider != call.provider:
        detail = (
            f"model changed from {before.provider}/{before.model} to "
            f"{call.provider}/{call.model}: the previous model's cache entries do not "
            "serve it"
        )
        return 0, (0, Diagnosis("model_switch", detail))
    match = match_pair(
        before.hashes,
        prev_total,
        call.hashes,
        offsets[c],
        call_cache[c].__getitem__,
        call_cache[b].__getitem__,
    )
    changed = params[c].first_difference(params[b])
    if changed is not None:
        start = level_start(call, changed[0])
        if match.blocks >= start:
            detail = f"cache-keyed request parameters changed ({changed[0]} on): {changed[1]}"
            return offsets[c][start], (start, Diagnosis("params_changed", detail))
    if match.tokens >= prev_total:
        return match.tokens, None
    diagnosis = diagnose(before.blocks, call.blocks, match.blocks, session.contents)
    return match.tokens, (match.blocks, diagnosis)


def _size_unlogged(session: Session, call_cache: list[TokenCache]) -> dict[str, int]:
    """Infer the size of each unlogged prefix block from reported usage.

    Conversation logs (Claude Code, Codex, Cline, ...) keep the messages but not the
    system prompt and tool schemas. Their requests start with one opaque block whose
    size is the inclusive input reported for the first call that carries it, minus what
    that call's visible blocks count. Without reported usage it stays 0.
    """
    opaque = {h for h, c in session.contents.items() if c.kind == OPAQUE}
    sizes: dict[str, int] = {}
    if not opaque:
        return sizes
    for call, cache in zip(session.calls, call_cache, strict=True):
        if len(sizes) == len(opaque):
            break  # every one sized: the calls after cannot change a size
        for digest in call.hashes:
            if digest not in opaque or digest in sizes:
                continue
            reported = call.usage.input_tokens if call.usage else None
            if reported is None:
                continue
            visible = sum(cache.length(h) for h in call.hashes if h not in opaque)
            sizes[digest] = min(max(0, reported - visible), _MAX_UNLOGGED)
    for cache in {id(c): c for c in call_cache}.values():
        for digest in opaque:
            cache.set_unlogged(digest, sizes.get(digest, 0))
    return sizes


def _offsets(keys: list[list[str]], lengths: list[dict[str, int]]) -> list[list[int]]:
    """Cumulative token offsets of every call's blocks.

    A call shares most of its blocks with the call before it, so the offsets of the
    shared leading blocks are copied rather than summed again.
    """
    out: list[list[int]] = []
    for i, hashes in enumerate(keys):
        same = i and lengths[i] is lengths[i - 1]
        previous, before = (keys[i - 1], out[i - 1]) if same else ((), ())
        out.append(block_offsets(hashes, lengths[i].__getitem__, previous, before))
    return out


def block_offsets(
    hashes: Sequence[str],
    length: Callable[[str], int],
    previous: Sequence[str] = (),
    previous_offsets: Sequence[int] = (),
) -> list[int]:
    """Cumulative token offsets of a call's blocks: 0, then the total after each block.

    Shared by :func:`prefix_lists` and :class:`cacheviz.live._incremental.LiveLog`.

    Parameters
    ----------
    hashes
        The call's block hashes.
    length
        The number of tokens of a block.
    previous, previous_offsets
        The hashes and offsets of the call before it when counted in the same encoding
        (else empty): the offsets of the leading blocks they share are copied rather
        than summed again.

    Returns
    -------
    list of int
    """
    shared = common_prefix(previous, hashes) if previous else 0
    if shared:
        offsets = list(previous_offsets[:shared])
        offsets += accumulate(map(length, hashes[shared:]), initial=previous_offsets[shared])
        return offsets
    return [0, *accumulate(map(length, hashes))]


def _add_call(
    cols: dict[str, list[Any]],
    call: Call,
    thread: str,
    parent: str | None,
    namespace: str,
    encoding: str,
    exact: bool,
    total: int,
    best: Match,
    prev_call: int | None,
    common: int | None,
    drift: Diagnosis | None,
    unlogged: dict[str, int],
    own_file: str | None = None,
) -> None:
    head, tail = log_hashes(call)
    hidden = [unlogged.get(h, 0) for h in call.hashes[: call.message_start] if h in unlogged]
    values: dict[str, Any] = {
        "call": call.index,
        "line": call.line,
        "source": call.source if call.source is not None else own_file,
        "ts": call.ts,
        "thread": thread,
        "parent_thread": parent,
        "namespace": namespace,
        "provider": call.provider,
        "api": call.api,
        "model": call.model,
        "encoding": encoding,
        "tokens_exact": exact,
        "reconstructed": call.reconstructed,
        "unlogged_tokens": sum(hidden) if hidden else None,
        "ttl_seconds": None,
        "rebuild": call.meta.get("rebuild"),
        "n_segments": len(call.blocks),
        "input_tokens": total,
        "local_tokens": total,
        "token_basis": None,
        "prefix_tokens": best.tokens,
        "new_tokens": total - best.tokens,
        "prev_call": prev_call,
        "prev_common_tokens": common,
        "drift": drift is not None,
        "drift_cause": None if drift is None else drift.cause,
        "drift_material": None,
        "expected_read_tokens": None,
        "miss_cause": None,
        "own_cause": None,
        "shortfall_tokens": None,
        "billed_usd": None,
        "simulated_usd": None,
        "ideal_usd": None,
        "waste_usd": None,
        "prefix_hash": prefix_hash(call),
        "log_head_hash": head,
        "log_tail_hash": tail,
        "usage_provenance": None if call.usage is None else call.usage.provenance,
        "provider_verdict": call.meta.get("provider_verdict"),
        "provider_missed_tokens": call.meta.get("provider_missed_tokens"),
        "verdict_agrees": None,
        "verdict_detail": None,
    }
    for column, field in _USAGE_FIELDS.items():
        values[column] = None if call.usage is None else getattr(call.usage, field)
    values["hit_ratio"] = _schema.hit_ratio(
        values["reported_cache_read_tokens"], values["reported_input_tokens"]
    )
    for column, value in values.items():
        cols[column].append(value)


def _add_drift(
    cols: dict[str, list[Any]],
    call: Call,
    thread: str,
    before: Call,
    at: int,
    common: int,
    offsets: list[list[int]],
    drift: Diagnosis,
) -> None:
    at = max(at, 0)
    previous = before.blocks
    if at < len(call.blocks):
        here = call.blocks[at]
    else:
        here = previous[min(at, len(previous) - 1)] if previous else call.blocks[-1]
    own = offsets[call.index]
    values = {
        "call": call.index,
        "thread": thread,
        "prev_call": before.index,
        "part": here.part,
        "position": here.position,
        "label": here.label,
        "prev_common_tokens": common,
        "block_token_offset": own[min(at, len(call.blocks))],
        "tokens_lost": offsets[before.index][-1] - common,
        "cause": drift.cause,
        "detail": drift.detail,
        "hash": call.blocks[at].hash if at < len(call.blocks) else None,
        "prev_hash": previous[at].hash if at < len(previous) else None,
        "byte_offset": drift.byte_offset,
        "cost_usd": None,
        "material": None,
    }
    for column, value in values.items():
        cols[column].append(value)
