"""What the inspector and the HTML report show, computed from an analysis (no Jupyter).

Compact numeric tables travel as Arrow IPC streams; text only for the selected call,
capped. The widget (:mod:`cacheviz.widget`) and the report (:mod:`cacheviz.report`)
both read these functions, so they show the same thing.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz._schema import CAUSES, clean
from cacheviz._seq import common_prefix
from cacheviz.redact import MARGIN, REDACTED, redact, redact_all, redact_slice, secret_spans
from cacheviz.render import render_text
from cacheviz.tokens import MESSAGE_END, MESSAGE_START, UNLOGGED, UNLOGGED_ID

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.simulate import Simulation

STATUS = {"same": 0, "changed": 1, "invalidated": 2, "new": 3}
UNLOGGED_STATUS = 4
MAX_TEXT = 2000  # characters of each side of a drift shown
MAX_SEGMENTS = 300  # segments of the selected call listed
CHIPS = 8  # tokens shown before and after the first differing token
DEFAULT_TTL = 300


def ipc(frame: pl.DataFrame) -> bytes:
    """A frame as an Arrow IPC stream that any Arrow reader decodes."""
    buffer = io.BytesIO()
    frame.write_ipc_stream(buffer, compat_level=pl.CompatLevel.oldest())
    return buffer.getvalue()


def timeline(analysis: Analysis, ttl_seconds: int = DEFAULT_TTL) -> pl.DataFrame:
    """One row per call: tokens, the prefix line, drift marker and cause, idle gaps."""
    calls = analysis.calls
    threads = _threads(analysis)
    drifts = analysis.drifts.select(
        pl.col("call"), pl.col("label").alias("drift_label"), pl.col("cause"), pl.col("tokens_lost")
    )
    frame = calls.join(drifts, left_on="index", right_on="call", how="left", maintain_order="left")
    gap = pl.col("ts").diff().over("thread").dt.total_seconds()
    return frame.select(
        pl.col("index").cast(pl.Int32).alias("call"),
        (pl.col("ts").dt.epoch("ms").cast(pl.Float64)).alias("ts_ms"),
        pl.col("thread").replace_strict(threads, range(len(threads)), return_dtype=pl.Int32),
        pl.col("input_tokens").cast(pl.Int32),
        pl.col("prefix_tokens").cast(pl.Int32),
        pl.col("new_tokens").cast(pl.Int32),
        pl.col("drift"),
        pl.col("cause")
        .replace_strict(list(CAUSES), range(len(CAUSES)), default=-1, return_dtype=pl.Int32)
        .fill_null(-1),
        pl.col("drift_label").map_elements(_label, return_dtype=pl.String).alias("label"),
        pl.col("tokens_lost").fill_null(0).cast(pl.Int32),
        (gap > ttl_seconds).fill_null(value=False).alias("idle_gap"),
    )


def _label(text: str) -> str:
    return redact(clean(text))


def _threads(analysis: Analysis) -> list[str]:
    return analysis.calls["thread"].unique(maintain_order=True).to_list()


def shape_runs(analysis: Analysis) -> pl.DataFrame:
    """Runs of consecutive segments with the same status, per call, on the token axis."""
    segments = analysis.segments
    status = (
        pl.when(pl.col("opaque"))
        .then(pl.lit(UNLOGGED_STATUS))
        .otherwise(pl.col("status").replace_strict(STATUS, return_dtype=pl.Int8))
        .cast(pl.Int8)
    )
    runs = (
        segments.select("call", "token_offset", "tokens", status.alias("status"))
        .with_columns(
            run=(pl.col("status") != pl.col("status").shift(1).over("call"))
            .fill_null(value=True)
            .cum_sum()
            .over("call")
        )
        .group_by("call", "run", maintain_order=True)
        .agg(
            pl.col("token_offset").min().alias("start"),
            (pl.col("token_offset") + pl.col("tokens")).max().alias("end"),
            pl.col("status").first(),
        )
    )
    return runs.select(
        pl.col("call").cast(pl.Int32),
        pl.col("start").cast(pl.Int32),
        pl.col("end").cast(pl.Int32),
        "status",
    )


def costs(simulation: Simulation | None, n_calls: int) -> pl.DataFrame:
    """Per call cost under the target, with the ideal bound (null without a simulation)."""
    if simulation is None:
        return pl.DataFrame(
            {
                "call": pl.int_range(n_calls, eager=True, dtype=pl.Int32),
                "cost_usd": [None] * n_calls,
                "ideal_usd": [None] * n_calls,
                "cache_read": [0] * n_calls,
                "cache_write": [0] * n_calls,
                "uncached": [0] * n_calls,
            },
            schema={
                "call": pl.Int32,
                "cost_usd": pl.Float64,
                "ideal_usd": pl.Float64,
                "cache_read": pl.Int32,
                "cache_write": pl.Int32,
                "uncached": pl.Int32,
            },
        )
    return simulation.calls.select(
        pl.col("index").cast(pl.Int32).alias("call"),
        pl.col("cost_usd"),
        pl.col("ideal_cost_usd").alias("ideal_usd"),
        pl.col("cache_read_tokens").cast(pl.Int32).alias("cache_read"),
        pl.col("cache_write_tokens").cast(pl.Int32).alias("cache_write"),
        pl.col("uncached_tokens").cast(pl.Int32).alias("uncached"),
    )


def meta(
    analysis: Analysis,
    *,
    ttl_seconds: int,
    simulation: Simulation | None,
    compare: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """Totals, names and the target's headline numbers, as JSON-ready values."""
    calls = analysis.calls
    target = None
    if simulation is not None:
        target = {
            "provider": simulation.provider,
            "model": simulation.model,
            "price_source": simulation.price_source,
            "total_cost_usd": simulation.total_cost_usd,
            "ideal_cost_usd": simulation.ideal_cost_usd,
            "score": simulation.score,
            "token_scale": simulation.token_scale,
        }
    rows = []
    if compare is not None:
        keys = (
            "target",
            "cost_usd",
            "ideal_cost_usd",
            "cache_read_tokens",
            "cache_write_tokens",
            "uncached_tokens",
        )
        rows = [{k: row[k] for k in keys} for row in compare.iter_rows(named=True)]
    path = analysis.session.path
    return redact_all(
        {
            "path": None if path is None else clean(str(path)),
            "format": analysis.session.format,
            "n_calls": calls.height,
            "threads": [clean(name) for name in _threads(analysis)],
            "causes": list(CAUSES),
            "ttl_seconds": ttl_seconds,
            "totals": {
                "input_tokens": int(calls["input_tokens"].sum()),
                "prefix_tokens": int(calls["prefix_tokens"].sum()),
                "new_tokens": int(calls["new_tokens"].sum()),
                "drifts": analysis.drifts.height,
            },
            "target": target,
            "compare": rows,
            "approximate": not bool(calls["tokens_exact"].all()) if calls.height else False,
            "reconstructed": bool(calls["reconstructed"].any()) if calls.height else False,
        }
    )


def _window(text: str, at: int, limit: int) -> str:
    """``text`` cut to ``limit`` characters around position ``at``, redacted before the cut."""
    if len(text) <= limit:
        return redact(text)
    start = max(0, min(at - limit // 2, len(text) - limit))
    head = "…" if start else ""
    tail = "…" if start + limit < len(text) else ""
    return f"{head}{redact_slice(text, start, start + limit)}{tail}"


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
    from cacheviz.tokens import get_encoding

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
) -> dict[str, Any]:
    """What the inspector shows for one call, redacted (see :func:`_detail`)."""
    return redact_all(
        _detail(analysis, call, simulation=simulation, max_chars=max_chars, chips=chips)
    )


def _detail(
    analysis: Analysis,
    call: int,
    *,
    simulation: Simulation | None = None,
    max_chars: int = MAX_TEXT,
    chips: int = CHIPS,
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
    }
    base.update(_segments_of(analysis, call))
    drifts = analysis.drifts.filter(pl.col("call") == call)
    if drifts.height == 0:
        return {**base, "drift": False}
    drift = drifts.row(0, named=True)
    contents = analysis.session.contents
    encoding = row["encoding"]
    sides: dict[str, Any] = {}
    within = drift["token_offset"] - drift["block_token_offset"]
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
    cost = None
    if simulation is not None and simulation.calls.height > call:
        cost = _drift_cost(simulation, call, drift["tokens_lost"])
    return {
        **base,
        "drift": True,
        "part": drift["part"],
        "position": drift["position"],
        "label": clean(drift["label"]),
        "cause": drift["cause"],
        "detail": clean(drift["detail"]),
        "token_offset": drift["token_offset"],
        "tokens_lost": drift["tokens_lost"],
        "cost_usd": cost,
        "prev": sides.get("prev"),
        "current": sides.get("current"),
        "chips": chips_out,
    }


def _segments_of(analysis: Analysis, call: int) -> dict[str, Any]:
    """The call's segments (label, part, tokens, offset, hash, status), capped."""
    rows = analysis.segments.filter(pl.col("call") == call)
    shown = rows.head(MAX_SEGMENTS).select(
        pl.col("label").map_elements(_label, return_dtype=pl.String),
        "part",
        "tokens",
        "token_offset",
        "hash",
        pl.when(pl.col("opaque"))
        .then(pl.lit("unlogged"))
        .otherwise(pl.col("status"))
        .alias("status"),
    )
    return {"segments": shown.to_dicts(), "segments_truncated": rows.height - shown.height}


def _drift_cost(simulation: Simulation, call: int, tokens_lost: int) -> float | None:
    """What re-processing ``tokens_lost`` tokens cost instead of reading them."""
    from cacheviz.pricing import PriceBook

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
