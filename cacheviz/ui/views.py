"""What the inspector and the HTML report show, computed from an analysis (no Jupyter).

Compact numeric tables travel as Arrow IPC streams; text only for the selected call,
capped. The widget (:mod:`cacheviz.ui.widget`) and the report (:mod:`cacheviz.ui.report`)
both read these functions, so they show the same thing.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz import providers
from cacheviz._schema import CAUSES, MISS_CAUSES, clean
from cacheviz._util.seq import common_prefix
from cacheviz.model import OPAQUE
from cacheviz.money._metrics import hit_ratio
from cacheviz.redact import (
    MARGIN,
    REDACTED,
    redact,
    redact_all,
    redact_cut,
    redact_slice,
    secret_spans,
)
from cacheviz.request._blocks import render_text
from cacheviz.request._tokens import MESSAGE_END, MESSAGE_START, UNLOGGED, UNLOGGED_ID
from cacheviz.ui.segment_rows import STATUS, UNLOGGED_STATUS, SegmentRows, available, segment_rows
from cacheviz.ui.segment_rows import call_rows as segment_call_rows
from cacheviz.ui.segment_rows import runs as segment_runs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation

MAX_TEXT = 2000  # characters of each side of a drift shown
MAX_SEGMENTS = 300  # segments of the selected call listed
CHIPS = 8  # tokens shown before and after the first differing token


def ipc(frame: pl.DataFrame) -> bytes:
    """A frame as an Arrow IPC stream that any Arrow reader decodes."""
    buffer = io.BytesIO()
    frame.write_ipc_stream(buffer, compat_level=pl.CompatLevel.oldest())
    return buffer.getvalue()


def session_ttl(analysis: Analysis) -> float | None:
    """The TTL the session's evidence shows for its busiest thread (``None``: no evidence).

    Per thread, :mod:`cacheviz.prefix._ttl` reads it from the requests' ``cache_control`` or the
    reported writes (Claude Code's main thread writes 1 h, its sub-agents 5 m).
    """
    known = analysis.calls.filter(pl.col("ttl_seconds").is_not_null())
    if known.is_empty():
        return None
    busiest = known.group_by("thread").agg(pl.len(), pl.col("ttl_seconds").first())
    return float(busiest.sort(["len", "thread"], descending=[True, False])["ttl_seconds"][0])


def default_ttl_seconds(analysis: Analysis, provider: str | None = None) -> float | None:
    """The default cache lifetime of ``provider`` (else of the recorded provider).

    For the recorded provider, the TTL the session's own evidence shows wins
    (:func:`session_ttl`). A provider without a time limit (self-hosted) or an unknown
    one falls back to the default comparison's first vendor, so idle marks stay
    meaningful.
    """
    recorded = analysis.calls["provider"].unique().to_list()
    own = providers.find(recorded[0] if len(recorded) == 1 else None)
    found = providers.find(provider) or own
    if found is not None and (own is None or found.id == own.id):
        evidence = session_ttl(analysis)
        if evidence is not None:
            return evidence
    if found is None or found.default_ttl_seconds is None:
        found = providers.profile(providers.reference_targets()[0].partition(":")[0])
    return found.default_ttl_seconds


def timeline(analysis: Analysis, ttl_seconds: float | str | None = "recorded") -> pl.DataFrame:
    """One row per call: tokens, prefix line, drift, idle gaps, reported read, misses.

    A gap longer than ``ttl_seconds`` is idle (``None``: the cache has no time limit;
    ``"recorded"``: the TTL each call's thread shows, :mod:`cacheviz.prefix._ttl`, else the
    recorded provider's default, :func:`default_ttl_seconds`).
    """
    per_thread = isinstance(ttl_seconds, str)
    if isinstance(ttl_seconds, str):
        ttl_seconds = default_ttl_seconds(analysis)
    calls = analysis.calls
    thread = "thread"
    threads = _threads(analysis)
    drift_frame = analysis.drifts
    material = (
        pl.col("material") if "material" in drift_frame.columns else pl.col("tokens_lost") > 0
    )
    drifts = drift_frame.select(
        pl.col("call"),
        pl.col("label").alias("drift_label"),
        pl.col("cause"),
        pl.col("tokens_lost"),
        material.alias("material"),
    )
    frame = calls.join(drifts, left_on="call", right_on="call", how="left", maintain_order="left")
    gap = pl.col("ts").diff().over(thread).dt.total_seconds()
    fallback = float("inf") if ttl_seconds is None else float(ttl_seconds)
    ttl = (
        pl.col("ttl_seconds").cast(pl.Float64).fill_null(fallback)
        if per_thread
        else pl.lit(fallback)
    )
    miss_cause = (
        pl.col("miss_cause") if "miss_cause" in calls.columns else pl.lit(None, dtype=pl.String)
    )
    miss_tokens = (
        pl.col("shortfall_tokens")
        if "shortfall_tokens" in calls.columns
        else pl.lit(None, dtype=pl.Int64)
    )
    return frame.select(
        pl.col("call").cast(pl.Int32).alias("call"),
        (pl.col("ts").dt.epoch("ms").cast(pl.Float64)).alias("ts_ms"),
        pl.col(thread)
        .replace_strict(threads, range(len(threads)), return_dtype=pl.Int32)
        .alias("thread"),
        pl.col("input_tokens").cast(pl.Int32),
        pl.col("prefix_tokens").cast(pl.Int32),
        pl.col("new_tokens").cast(pl.Int32),
        pl.col("drift"),
        pl.col("cause")
        .replace_strict(list(CAUSES), range(len(CAUSES)), default=-1, return_dtype=pl.Int32)
        .fill_null(-1),
        pl.col("drift_label").map_elements(_label, return_dtype=pl.String).alias("label"),
        pl.col("tokens_lost").fill_null(0).cast(pl.Int32),
        (gap > ttl).fill_null(value=False).alias("idle_gap"),
        pl.col("reported_cache_read_tokens").cast(pl.Int32).alias("reported_read"),
        # reported cache read / reported inclusive input; null (n/a) when not reported
        pl.col("hit_ratio").cast(pl.Float64),
        miss_cause.is_not_null().alias("miss"),
        miss_cause.replace_strict(
            list(MISS_CAUSES), range(len(MISS_CAUSES)), default=-1, return_dtype=pl.Int32
        )
        .fill_null(-1)
        .alias("miss_cause"),
        miss_tokens.cast(pl.Int32).alias("shortfall_tokens"),
        pl.col("material").fill_null(value=False),
    )


def _label(text: str) -> str:
    return redact(clean(text))


def _threads(analysis: Analysis) -> list[str]:
    calls = analysis.calls
    return calls["thread"].unique(maintain_order=True).to_list()


def _thread_parents(analysis: Analysis) -> list[int]:
    """Index of each thread's parent thread (sub-agents), -1 for a root or unknown."""
    calls = analysis.calls
    names = _threads(analysis)
    if "parent_thread" not in calls.columns:
        return [-1] * len(names)
    index = {name: i for i, name in enumerate(names)}
    parents = (
        calls.group_by("thread", maintain_order=True)
        .agg(pl.col("parent_thread").drop_nulls().first())
        .rows()
    )
    found = {name: index.get(parent, -1) for name, parent in parents}
    return [found.get(name, -1) for name in names]


def shape_runs(analysis: Analysis, rows: SegmentRows | None = None) -> pl.DataFrame:
    """Runs of consecutive segments with the same status, per call, on the token axis.

    From ``rows`` (:func:`cacheviz.ui.segment_rows.segment_rows`) when given, else from
    the segments frame when it is built, else from :func:`segment_rows` (which does not
    build it: millions of rows for a long session).
    """
    if rows is None and getattr(analysis, "_segments", None) is None:
        rows = report_rows(analysis)
    if rows is not None:
        return rows.shape
    segments = analysis.segments
    status = (
        pl.when(pl.col("opaque"))
        .then(pl.lit(UNLOGGED_STATUS))
        .otherwise(pl.col("status").replace_strict(STATUS, return_dtype=pl.Int8))
        .cast(pl.Int8)
    )
    # a run: consecutive rows of one call with one status (a call's rows are together)
    return segment_runs(segments.select("call", "token_offset", "tokens", status.alias("status")))


def report_rows(analysis: Analysis) -> SegmentRows | None:
    """:func:`cacheviz.ui.segment_rows.segment_rows`, ``None`` when it cannot read it."""
    return segment_rows(analysis) if available(analysis) else None


def costs(
    simulation: Simulation | None, n_calls: int, analysis: Analysis | None = None
) -> pl.DataFrame:
    """Per call cost under the target, ideal bound and billed cost (null when unknown)."""
    frame = _costs(simulation, n_calls)
    billed = None
    if analysis is not None and "billed_usd" in analysis.calls.columns:
        billed = analysis.calls["billed_usd"].cast(pl.Float64)
    if billed is None or billed.len() != frame.height:
        billed = pl.Series("billed_usd", [None] * frame.height, dtype=pl.Float64)
    return frame.with_columns(billed.alias("billed_usd"))


def _costs(simulation: Simulation | None, n_calls: int) -> pl.DataFrame:
    if simulation is None:
        return pl.DataFrame(
            {
                "call": pl.int_range(n_calls, eager=True, dtype=pl.Int32),
                "cost_usd": [None] * n_calls,
                "ideal_usd": [None] * n_calls,
                "cache_read_tokens": [0] * n_calls,
                "cache_write_tokens": [0] * n_calls,
                "uncached_tokens": [0] * n_calls,
            },
            schema={
                "call": pl.Int32,
                "cost_usd": pl.Float64,
                "ideal_usd": pl.Float64,
                "cache_read_tokens": pl.Int32,
                "cache_write_tokens": pl.Int32,
                "uncached_tokens": pl.Int32,
            },
        )
    return simulation.calls.select(
        pl.col("call").cast(pl.Int32).alias("call"),
        pl.col("cost_usd"),
        pl.col("ideal_usd").alias("ideal_usd"),
        pl.col("cache_read_tokens").cast(pl.Int32),
        pl.col("cache_write_tokens").cast(pl.Int32),
        pl.col("uncached_tokens").cast(pl.Int32),
    )


def priced_models(provider: str, *, retired: bool | list[str] = False) -> list[str]:
    """The models of ``provider``'s own families that have a price (the model picker).

    Newest first (:func:`cacheviz.money.pricing.recency`). Retired models are left out unless
    ``retired`` is True, or is a list of the ones to keep (the session's own models).
    """
    from cacheviz.money import pricing

    found = providers.find(provider)
    if found is None or found.self_hosted:
        return []
    models = pricing.known_models(provider)
    own = [m for m in models if found.owns_model(m)] or models
    if retired is not True:
        gone = pricing.retired_models(provider) - set(retired or [])
        own = [m for m in own if m not in gone]
    return sorted(own, key=pricing.recency)


def closest_model(recorded: list[str], models: list[str]) -> str | None:
    """The priced model closest to the recorded ones (None when there is none)."""
    import difflib

    for name in recorded:
        if name in models:
            return name
    for name in recorded:
        found = difflib.get_close_matches(name, models, 1, cutoff=0.0)
        if found:
            return found[0]
    return models[0] if models else None


def unpriced_models(analysis: Analysis, simulation: Simulation | None) -> list[str]:
    """Models the target could not price (empty for self-hosted engines)."""
    if simulation is None or simulation.provider in providers.self_hosted():
        return []
    missing = simulation.calls.filter(pl.col("cost_usd").is_null() & pl.col("model").is_not_null())
    return sorted({clean(m) for m in missing["model"].to_list()})


def pricing_notes(analysis: Analysis, simulation: Simulation | None) -> dict[str, Any]:
    """Why the cost chart would be empty (``notice``) and a tokenizer ``warning``."""
    if simulation is None:
        return {"notice": None, "warning": None}
    provider = simulation.provider
    recorded = sorted(set(analysis.calls["provider"].to_list()))
    notice = None
    if provider in providers.self_hosted():
        notice = (
            f"{provider} is a self-hosted engine: it has no prices, so there is no cost to "
            "chart; the comparison shows the prefill tokens its prefix cache saves."
        )
    else:
        missing = unpriced_models(analysis, simulation)
        if missing and simulation.total_cost_usd in (None, 0):
            picks = priced_models(provider)[:3]
            hint = f" (for example {', '.join(picks)})" if picks else ""
            notice = (
                f"No {provider} price for {', '.join(missing)}: choose a priced {provider} "
                f"model in the model list{hint}."
            )
        elif missing:
            notice = f"Calls to {', '.join(missing)} have no {provider} price and are left out."
    warning = None
    others = [p for p in recorded if p != provider]
    if others and provider not in providers.self_hosted():
        encodings = sorted(set(analysis.calls["encoding"].to_list()))
        warning = (
            f"This session was recorded with {', '.join(others)} models and is priced here "
            f"under {provider}'s rules with tokens counted by {', '.join(encodings)}; "
            f"{provider}'s own tokenizer would count differently, so these costs are approximate."
        )
    return {"notice": notice, "warning": warning}


def _hit_ratio(read: pl.Series, total: pl.Series) -> float | None:
    """Token-weighted hit ratio (:func:`cacheviz.money._metrics.hit_ratio`)."""
    return hit_ratio(read.to_list(), total.to_list()).tokens


def meta(
    analysis: Analysis,
    *,
    ttl_seconds: float | None,
    simulation: Simulation | None,
    compare: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """Totals, names and the target's headline numbers, as JSON-ready values."""
    calls = analysis.calls
    sim_hit = None
    if simulation is not None:
        sim = simulation.calls
        sim_hit = _hit_ratio(sim["cache_read_tokens"], sim["input_tokens"])
    reported = hit_ratio(
        calls["reported_cache_read_tokens"].to_list(), calls["reported_input_tokens"].to_list()
    )
    return meta_of(
        analysis,
        ttl_seconds=ttl_seconds,
        simulation=simulation,
        compare=compare,
        notes=pricing_notes(analysis, simulation),
        threads=_threads(analysis),
        hit_ratio=sim_hit,
        reported=(reported.tokens, reported.requests),
        waste_usd=analysis.headline()["waste_usd"],
    )


def meta_of(
    analysis: Analysis,
    *,
    ttl_seconds: float | None,
    simulation: Simulation | None,
    compare: pl.DataFrame | None,
    notes: dict[str, Any],
    threads: list[str],
    hit_ratio: float | None,
    reported: tuple[float | None, float | None],
    waste_usd: float | None,
) -> dict[str, Any]:
    """:func:`meta` from its per-call sums (the live inspector keeps them call by call).

    ``notes`` is :func:`pricing_notes`, ``threads`` the thread names in order,
    ``hit_ratio`` the simulation's token hit ratio, ``reported`` the reported hit ratios
    (tokens, requests), ``waste_usd`` the headline waste.
    """
    calls = analysis.calls
    target = None
    if simulation is not None:
        target = {
            "provider": simulation.provider,
            "model": simulation.model,
            # a self-hosted engine (vllm, sglang) has no prices: nothing is billed or priced
            "self_hosted": providers.profile(simulation.provider).self_hosted,
            # the session replayed under its own provider's rules: its waste is the
            # session's (billed - ideal), the same number as summary, scan and check
            "own": simulation is analysis.own_simulation,
            "price_source": simulation.price_source,
            "total_cost_usd": simulation.total_cost_usd,
            "ideal_usd": simulation.ideal_usd,
            "score": simulation.score,
            "token_scale": simulation.token_scale,
            "hit_ratio": hit_ratio,
            "warning": notes["warning"],
        }
    rows = []
    if compare is not None:
        keys = (
            "target",
            "cost_usd",
            "ideal_usd",
            "cache_read_tokens",
            "cache_write_tokens",
            "uncached_tokens",
        )
        rows = [{k: row[k] for k in keys} for row in compare.iter_rows(named=True)]
    path = analysis.session.path
    out: dict[str, Any] = {
        "path": None if path is None else clean(str(path)),
        "format": analysis.session.format,
        "n_calls": calls.height,
        "threads": [clean(name) for name in threads],
        "thread_parents": _thread_parents(analysis),
        "causes": list(CAUSES),
        "miss_causes": list(MISS_CAUSES),
        "ttl_seconds": ttl_seconds,
        "totals": {
            "input_tokens": int(calls["input_tokens"].sum()),
            "prefix_tokens": int(calls["prefix_tokens"].sum()),
            "new_tokens": int(calls["new_tokens"].sum()),
            "drifts": analysis.drifts.height,
        },
        "reported": {"hit_ratio": reported[0], "hit_ratio_requests": reported[1]},
        "waste_usd": waste_usd,
        "target": target,
        "models": priced_models(simulation.provider) if simulation is not None else [],
        "unpriced_models": unpriced_models(analysis, simulation),
        "notice": notes["notice"],
        "compare": rows,
        "approximate": not bool(calls["tokens_exact"].all()) if calls.height else False,
        "reconstructed": bool(calls["reconstructed"].any()) if calls.height else False,
    }
    billed = getattr(analysis, "billed_usd", None)
    if "billed_usd" in calls.columns or billed is not None:
        out["billed_usd"] = billed
        out["billed_unpriced_models"] = list(getattr(analysis, "unpriced_models", []) or [])
    return redact_all(out)


def _window(text: str, at: int, limit: int) -> str:
    """``text`` cut to ``limit`` characters around position ``at``, redacted before the cut."""
    if len(text) <= limit:
        return redact(text)
    start = max(0, min(at - limit // 2, len(text) - limit))
    return redact_cut(text, limit + 1, start)


def _chips(analysis: Analysis, encoding: str, digest: str, start: int, end: int) -> list[str]:
    """The text of the block's tokens ``start:end``; a run touching a secret is one chip.

    Secrets are found in the block's whole text (redacted before it is cut into tokens
    for display), so no piece of a key shows in a chip.
    """
    cache = analysis.token_caches[encoding]
    tokens = cache[digest][max(0, start) : end]
    shown = cache.decode(tokens)
    masked = _secret_tokens(analysis, encoding, digest, max(0, start), len(tokens))
    out: list[str] = []
    for index, (token, text) in enumerate(zip(tokens, shown, strict=True)):
        if index in masked:
            if not out or out[-1] != REDACTED:
                out.append(REDACTED)
        elif token in (MESSAGE_START, MESSAGE_END, UNLOGGED) or token <= UNLOGGED_ID:
            out.append(text)
        else:
            out.append(clean(text))
    return out


def _secret_tokens(
    analysis: Analysis, encoding: str, digest: str, start: int, count: int
) -> set[int]:
    """Which of ``count`` tokens from ``start`` overlap a secret in the block's text."""
    from cacheviz.request._tokens import get_encoding

    role, text = render_text(analysis.session.contents[digest])
    if not count or not text:
        return set()
    enc = get_encoding(encoding)
    tokens = analysis.token_caches[encoding][digest]
    header = 0 if role is None else 1 + len(enc.encode_ordinary(role))
    first = max(start, header)
    raw = text.encode("utf-8")
    offset = len(enc.decode_bytes(tokens[header:first]))  # bytes before the first chip
    bounds: dict[int, tuple[int, int]] = {}
    for index in range(first, start + count):
        token = tokens[index]
        if token < 0:  # the closing marker
            break
        size = len(enc.decode_single_token_bytes(token))
        low = len(raw[:offset].decode("utf-8", "ignore"))
        high = len(raw[: offset + size].decode("utf-8", "ignore"))
        bounds[index - start] = (low, max(high, low + 1))
        offset += size
    if not bounds:
        return set()
    lowest = min(b[0] for b in bounds.values())
    highest = max(b[1] for b in bounds.values())
    base = max(0, lowest - MARGIN)
    spans = secret_spans(text[base : highest + MARGIN])
    return {
        index
        for index, (low, high) in bounds.items()
        if any(s + base < high and low < e + base for s, e in spans)
    }


def drift_detail(
    analysis: Analysis,
    call: int,
    *,
    simulation: Simulation | None = None,
    max_chars: int = MAX_TEXT,
    chips: int = CHIPS,
    content: bool = True,
) -> dict[str, Any]:
    """What the inspector shows for one call, redacted (see :func:`_detail`)."""
    return redact_all(
        _detail(
            analysis,
            call,
            simulation=simulation,
            max_chars=max_chars,
            chips=chips,
            content=content,
        )
    )


def _detail(
    analysis: Analysis,
    call: int,
    *,
    simulation: Simulation | None = None,
    max_chars: int = MAX_TEXT,
    chips: int = CHIPS,
    content: bool = True,
) -> dict[str, Any]:
    """What the inspector shows for one call: the drift, both sides, token chips, cost.

    Parameters
    ----------
    analysis
        The analysed session.
    call
        The call's index.
    simulation
        The target simulation, to price what the drift cost (the tokens past the break
        billed at the input price instead of the cache-read price).
    max_chars
        Characters of each side's text around the first difference.
    chips
        Tokens shown on each side of the first differing token.
    content
        Also list the call's segments and what it sent (the report stores those apart).
    """
    calls = analysis.calls
    if not 0 <= call < calls.height:
        return {"call": call, "drift": False, "error": f"no call {call}"}
    row = calls.row(call, named=True)
    base = {
        "call": call,
        "thread": clean(row["thread"]),
        "model": clean(row["model"]),
        "input_tokens": row["input_tokens"],
        "prefix_tokens": row["prefix_tokens"],
        "new_tokens": row["new_tokens"],
        # beside every simulated cost: what the provider billed for this call (null: no
        # usage reported or no price) and the session's own provider's simulation
        "billed_usd": row["billed_usd"],
        "simulated_usd": row["simulated_usd"],
        "hit_ratio": row["hit_ratio"],
    }
    if content:
        base.update(_segments_of(analysis, call))
        base["content"] = call_content(analysis, call)
    base["miss"] = _miss_of(analysis, call)
    drifts = analysis.drifts.filter(pl.col("call") == call)
    if drifts.height == 0:
        return {**base, "drift": False}
    drift = drifts.row(0, named=True)
    contents = analysis.session.contents
    encoding = row["encoding"]
    sides: dict[str, Any] = {}
    within = drift["prev_common_tokens"] - drift["block_token_offset"]
    chips_out: dict[str, list[str]] = {"before": [], "prev_after": [], "current_after": []}
    texts: dict[str, str] = {}
    for side, digest in (("prev", drift["prev_hash"]), ("current", drift["hash"])):
        if digest is None:
            texts[side] = ""
            continue
        texts[side] = render_text(contents[digest])[1]
    at = common_prefix(texts.get("prev", ""), texts.get("current", ""))
    previous_blocks = analysis.session.calls[drift["prev_call"]].blocks
    for side, digest in (("prev", drift["prev_hash"]), ("current", drift["hash"])):
        label = None
        if side == "current" and digest is not None:
            label = drift["label"]
        elif side == "prev" and drift["position"] is not None:
            label = next(
                (b.label for b in previous_blocks if b.hash == digest and b.part == drift["part"]),
                drift["label"],
            )
        sides[side] = {
            "label": None if label is None else clean(label),
            "text": clean(_window(texts[side], at, max_chars)),
        }
        if digest is not None and contents[digest].kind != "opaque":
            if side == "current":
                chips_out["before"] = _chips(analysis, encoding, digest, within - chips, within)
                chips_out["current_after"] = _chips(
                    analysis, encoding, digest, within, within + chips
                )
            else:
                chips_out["prev_after"] = _chips(analysis, encoding, digest, within, within + chips)
    cost = drift.get("cost_usd")  # priced by the analysis (the session's own provider)
    if cost is None and simulation is not None and simulation.calls.height > call:
        cost = _drift_cost(simulation, call, drift["tokens_lost"])
    return {
        **base,
        "drift": True,
        "part": drift["part"],
        "position": drift["position"],
        "label": clean(drift["label"]),
        "cause": drift["cause"],
        "detail": clean(drift["detail"]),
        "prev_common_tokens": drift["prev_common_tokens"],
        "tokens_lost": drift["tokens_lost"],
        "cost_usd": cost,
        "material": drift.get("material"),
        "prev": sides.get("prev"),
        "current": sides.get("current"),
        "chips": chips_out,
    }


def _miss_of(analysis: Analysis, call: int) -> dict[str, Any] | None:
    """The provider's miss at ``call`` (it read less than its rules predict), or None."""
    misses = getattr(analysis, "misses", None)
    if misses is None or misses.height == 0:
        return None
    rows = misses.filter(pl.col("call") == call)
    if rows.height == 0:
        return None
    row = rows.row(0, named=True)
    keys = (
        "cause",
        "shortfall_tokens",
        "expected_read_tokens",
        "reported_cache_read_tokens",
        "cost_usd",
    )
    out = {key: row.get(key) for key in keys}
    out["detail"] = clean(row.get("detail"))
    return out


def _segments_of(analysis: Analysis, call: int) -> dict[str, Any]:
    """The call's segments (label, part, tokens, offset, hash, status), capped.

    Read from the call's blocks (:func:`call_rows`), not the segments frame.
    """
    rows = call_rows(analysis, call)
    segments = [
        {
            "label": _label(label),
            "part": part,
            "tokens": tokens,
            "token_offset": offset,
            "hash": digest,
            "status": "unlogged" if opaque else status,
            "preview": segment_text(analysis, digest, PREVIEW_CHARS),
        }
        for _, opaque, part, status, label, tokens, digest, offset in rows[:MAX_SEGMENTS]
    ]
    return {"segments": segments, "segments_truncated": len(rows) - len(segments)}


def frame_rows(analysis: Analysis, call: int) -> list[tuple[Any, ...]]:
    """Call ``call``'s rows of the segments frame, as :func:`call_rows` gives them.

    The reference of :func:`call_rows`, which reads the blocks instead (this builds the
    frame).
    """
    rows = analysis.segments.filter(pl.col("call") == call)
    return rows.select(*_CONTENT_COLUMNS, "token_offset").rows()


def call_rows(analysis: Analysis, call: int) -> list[tuple[Any, ...]]:
    """Every segment row of call ``call``, the segments frame's values.

    Each a tuple ``(call, opaque, part, status, label, tokens, hash, token_offset)``.
    From the call's own blocks and its thread's previous call's
    (:func:`cacheviz.ui.segment_rows.call_rows`) when the frame is not built yet (it
    has a row per block per call: millions), else, or when they cannot be read so,
    from the frame.
    """
    if getattr(analysis, "_segments", None) is None:
        rows = segment_call_rows(analysis, call)
        if rows is not None:
            return rows
    return frame_rows(analysis, call)


def _drift_cost(simulation: Simulation, call: int, tokens_lost: int) -> float | None:
    """What re-processing ``tokens_lost`` tokens cost instead of reading them."""
    from cacheviz.money.pricing import PriceBook

    row = simulation.calls.row(call, named=True)
    if row["cost_usd"] is None:
        return None
    try:
        rates = PriceBook().rates(
            simulation.provider, row["model"], at=row["ts"], prompt_tokens=row["input_tokens"]
        )
    except Exception:
        return None
    read = rates.input if rates.cache_read is None else rates.cache_read
    return tokens_lost * (rates.input - read)


# ---- the content browser: what each call sent ---------------------------------------
PREVIEW_CHARS = 160  # of each segment in the segment list
TEXT_CHARS = 3000  # of each new or context segment shown in full
MAX_SENT = 80  # new segments listed per call
MAX_CONTEXT = 80  # system and tool segments listed per call


def redact_text(text: str, limit: int | None = None) -> str:
    """The one place the inspector's content text is redacted (then cut to ``limit``).

    A secret is found in the whole text before the cut, so one that crosses the cut
    shows as ``[REDACTED]``, never as a piece.
    """
    if limit is None or len(text) <= limit:
        return redact(text)
    return f"{redact_slice(text, 0, limit)}… ({len(text) - limit:,} more characters)"


def segment_text(analysis: Analysis, digest: str | None, limit: int = TEXT_CHARS) -> str:
    """A segment's text as the tokenizer sees it, cleaned, redacted and cut to ``limit``."""
    from cacheviz.model import OPAQUE

    content = analysis.session.contents.get(digest) if digest is not None else None
    if content is None or content.kind == OPAQUE:
        return ""
    return redact_text(clean(render_text(content)[1]), limit)


def _role(analysis: Analysis, digest: str | None) -> str | None:
    content = analysis.session.contents.get(digest) if digest is not None else None
    if content is None or content.kind in ("tool", "system"):
        return None
    try:
        return render_text(content)[0]
    except Exception:
        return None


_CONTENT_COLUMNS = ("call", "opaque", "part", "status", "label", "tokens", "hash")


def _shown(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows the content browser lists: unlogged, context (tools, system), or sent."""
    return rows.filter(
        pl.col("opaque").fill_null(False)
        | pl.col("part").is_in(["tools", "system"]).fill_null(False)
        | pl.col("status").ne_missing("same")
    ).select(_CONTENT_COLUMNS)


class _Browser:
    """Builds :func:`content_of` documents, each distinct block's role and text made once."""

    def __init__(
        self,
        analysis: Analysis,
        texts: dict[str, str] | None,
        limit: int,
        finish: Callable[[str], str] | None = None,
    ) -> None:
        self.analysis = analysis
        self.texts = texts
        self.limit = limit
        self._roles: dict[str | None, str | None] = {}
        self._labels: dict[str | None, str] = {}
        self._own_texts: dict[str | None, str] = {}
        self._finished: dict[str, str] = {}
        self._items: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.finish = finish

    def _done(self, text: str) -> str:
        """``finish(text)``, each distinct text once (the identity without ``finish``)."""
        if self.finish is None:
            return text
        out = self._finished.get(text)
        if out is None:
            out = self._finished[text] = self.finish(text)
        return out

    @staticmethod
    def empty() -> dict[str, Any]:
        return {"sent": [], "sent_more": 0, "context": [], "context_more": 0, "unlogged_tokens": 0}

    def add(self, doc: dict[str, Any], row: tuple[Any, ...]) -> None:
        """Add one segment row (``_CONTENT_COLUMNS`` order) to a call's document."""
        _, opaque, part, status, label, tokens, digest = row
        if opaque:
            doc["unlogged_tokens"] += tokens or 0
            return
        is_context = part in ("tools", "system")
        is_sent = status != "same"
        if not (is_context or is_sent):
            return
        # a call re-sends its context (tools, system) as the calls before it: the same
        # row gives the same item, made once (the documents are only read, never changed)
        item = self._items.get(row[1:])
        if item is None:
            item = self._items[row[1:]] = self._item(part, status, label, tokens, digest)
        if is_sent:
            doc["sent_more"] += 1
            if len(doc["sent"]) < MAX_SENT:
                doc["sent"].append(item)
                doc["sent_more"] -= 1
        elif is_context:
            doc["context_more"] += 1
            if len(doc["context"]) < MAX_CONTEXT:
                doc["context"].append(item)
                doc["context_more"] -= 1

    def _item(
        self, part: str, status: str, label: str, tokens: int | None, digest: str | None
    ) -> dict[str, Any]:
        """The browser's item of one segment row (its texts made or stored once)."""
        shown = self._labels.get(label)
        if shown is None:
            shown = self._labels[label] = self._done(clean(label))
        done = self._done
        item: dict[str, Any] = {
            "label": shown,
            "part": done(part),
            "tokens": tokens,
            "status": done(status),
        }
        if part == "messages":
            if digest not in self._roles:
                self._render(digest)
            role = self._roles[digest]
            if role:
                item["role"] = role
        if self.texts is None:
            text = self._own_texts.get(digest)
            if text is None:
                text = segment_text(self.analysis, digest, self.limit)
                text = self._own_texts[digest] = done(text)
            item["text"] = text
        else:
            item["hash"] = done(digest) if digest is not None else digest
            if digest not in self.texts:
                self.texts[digest] = segment_text(self.analysis, digest, self.limit)
        return item

    def _render(self, digest: str | None) -> None:
        """A message block's role, and its text when the text is stored: one rendering.

        The same as :func:`_role` and :func:`segment_text`, which would each render it.
        """
        content = self.analysis.session.contents.get(digest) if digest is not None else None
        if content is None or content.kind in ("tool", "system", OPAQUE):
            role = _role(self.analysis, digest)
            self._roles[digest] = self._done(role) if role else role
            return
        try:
            role, text = render_text(content)
        except Exception:
            self._roles[digest] = None  # as _role; segment_text renders again and raises
            return
        self._roles[digest] = self._done(role) if role else role
        if self.texts is not None and digest not in self.texts:
            self.texts[digest] = redact_text(clean(text), self.limit)


def content_of(
    analysis: Analysis,
    rows: pl.DataFrame,
    *,
    texts: dict[str, str] | None = None,
    limit: int = TEXT_CHARS,
) -> dict[str, Any]:
    """What one call sent, from its rows of the segments frame.

    ``sent``: the segments past the common prefix (changed, re-sent past a break, new:
    the messages, tool calls and tool results this call added); ``context``: the system
    prompt and tool definitions when they were logged; ``unlogged_tokens``: the size of an
    unlogged prefix. Each item carries its text, or with ``texts`` a ``hash`` whose text
    is stored once in ``texts`` (the report shares them between calls).
    """
    browser = _Browser(analysis, texts, limit)
    doc = browser.empty()
    for row in _shown(rows).iter_rows():
        browser.add(doc, row)
    return doc


def call_content(analysis: Analysis, call: int) -> dict[str, Any]:
    """What call ``call`` sent (see :func:`content_of`), texts included.

    Its rows from :func:`call_rows` (the call's blocks, not the segments frame).
    """
    browser = _Browser(analysis, None, TEXT_CHARS)
    doc = browser.empty()
    for row in call_rows(analysis, call):
        browser.add(doc, row[: len(_CONTENT_COLUMNS)])
    return doc


def all_contents(
    analysis: Analysis,
    texts: dict[str, str],
    limit: int,
    *,
    finish: Callable[[str], str] | None = None,
    rows: SegmentRows | None = None,
) -> dict[int, dict[str, Any]]:
    """:func:`content_of` for every call, texts stored once in ``texts``.

    Only the rows the browser lists are read from polars (a call re-sends its whole
    prefix as ``same`` rows, which it skips), and each distinct block is rendered,
    cleaned and redacted once however many calls send it. ``finish`` is applied to
    every string of every item (each distinct string once): the report passes its
    redact-then-escape, so that it need not walk the documents again. The rows come
    from ``rows`` or :func:`report_rows` (as :func:`shape_runs`), without building the
    segments frame, unless it is already built.
    """
    browser = _Browser(analysis, texts, limit, finish)
    if rows is None and getattr(analysis, "_segments", None) is None:
        rows = report_rows(analysis)
    shown: Iterable[tuple[Any, ...]]
    if rows is not None:
        calls, shown = rows.calls, rows.listed
    else:
        segments = analysis.segments
        calls = segments["call"].unique(maintain_order=True).to_list()
        shown = _shown(segments).iter_rows()
    out: dict[int, dict[str, Any]] = {int(call): browser.empty() for call in calls}
    for row in shown:
        browser.add(out[int(row[0])], row)
    return out


def opening_call(analysis: Analysis) -> int:
    """The call a report opens on (not a trivial side call).

    The costliest drift, else the largest miss, else the call of the busiest thread that
    sent the most new tokens.
    """
    drifts = analysis.drifts
    if drifts.height:
        order = ["cost_usd", "tokens_lost"] if "cost_usd" in drifts.columns else ["tokens_lost"]
        best = drifts.sort(order, descending=True, nulls_last=True).row(0, named=True)
        return int(best["call"])
    calls = analysis.calls
    if calls["shortfall_tokens"].drop_nulls().len():
        return int(calls.sort("shortfall_tokens", descending=True, nulls_last=True)["call"][0])
    if calls.height == 0:
        return -1
    thread = "thread"
    busiest = calls[thread].mode().sort()[0]
    main = calls.filter(pl.col(thread) == busiest)
    return int(main.sort("new_tokens", descending=True)["call"][0])
