"""The drift detail of the selected call: both sides of the first difference, token chips, cost.

``widgets/src/views/detail.js`` draws it, with the call's miss, its segment list and
what it sent (the content browser, :mod:`cacheviz.ui._content`). Everything is redacted:
a secret is found in a block's whole text before any cut or any split into tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz._schema import clean
from cacheviz._util.seq import common_prefix
from cacheviz.redact import (
    MARGIN,
    REDACTED,
    redact,
    redact_all,
    redact_cut,
    secret_spans,
)
from cacheviz.request._blocks import render_text
from cacheviz.request._tokens import MESSAGE_END, MESSAGE_START, UNLOGGED, UNLOGGED_ID
from cacheviz.ui._content import PREVIEW_CHARS, call_content, call_rows, segment_text
from cacheviz.ui._shared import clean_label

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.money._simulate import Simulation

MAX_TEXT = 2000  # characters of each side of a drift shown
MAX_SEGMENTS = 300  # segments of the selected call listed
CHIPS = 8  # tokens shown before and after the first differing token


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
        # which file the call came from (a sub-agent's log), and its line there
        "source": clean(row["source"]),
        "line": row["line"],
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
    base["miss"] = miss_of(analysis, call)
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


def miss_of(analysis: Analysis, call: int) -> dict[str, Any] | None:
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

    Read from the call's blocks (:func:`cacheviz.ui._content.call_rows`), not the segments frame.
    """
    rows = call_rows(analysis, call)
    segments = [
        {
            "label": clean_label(label),
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
