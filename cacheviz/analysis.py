"""Analysis: tokenize, shape and compare every call of a session into polars frames."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import polars as pl

from cacheviz import _schema
from cacheviz.diagnose import Diagnosis, diagnose
from cacheviz.lineage import assign_lineages, prefix_hash
from cacheviz.model import Call, Session
from cacheviz.prefix import PrefixIndex, match_previous
from cacheviz.shape import log_hashes, segment_status, with_stability
from cacheviz.tokens import TokenCache, encoding_for_model

_USAGE_FIELDS = {
    "reported_input_tokens": "input_tokens",
    "reported_cache_read_tokens": "cache_read_tokens",
    "reported_cache_write_tokens": "cache_write_tokens",
    "reported_cache_write_5m_tokens": "cache_write_5m_tokens",
    "reported_cache_write_1h_tokens": "cache_write_1h_tokens",
    "reported_output_tokens": "output_tokens",
}


@dataclass(slots=True)
class _State:
    """What a lineage remembers of its latest call."""

    call: Call
    offsets: list[int]


@dataclass
class Analysis:
    """The analysed session: ``calls``, ``segments`` and ``drifts`` polars frames.

    Columns and dtypes are listed in :mod:`cacheviz._schema`.
    """

    session: Session
    calls: pl.DataFrame
    segments: pl.DataFrame
    drifts: pl.DataFrame
    token_caches: dict[str, TokenCache]

    def __repr__(self) -> str:
        return (
            f"<Analysis {self.session.format} calls={self.calls.height} "
            f"drifts={self.drifts.height} segments={self.segments.height}>"
        )

    def summary(self) -> dict[str, Any]:
        """The ``cacheviz summary --json`` document (see docs/format.md)."""
        drifts = {row["call"]: row for row in self.drifts.iter_rows(named=True)}
        calls = []
        for row in self.calls.iter_rows(named=True):
            drift = drifts.get(row["index"])
            reported = None
            if row["usage_provenance"] is not None:
                reported = {
                    "input_tokens": row["reported_input_tokens"],
                    "cache_read_tokens": row["reported_cache_read_tokens"],
                    "cache_write_tokens": row["reported_cache_write_tokens"],
                    "cache_write_5m_tokens": row["reported_cache_write_5m_tokens"],
                    "cache_write_1h_tokens": row["reported_cache_write_1h_tokens"],
                    "output_tokens": row["reported_output_tokens"],
                    "provenance": row["usage_provenance"],
                }
            calls.append(
                {
                    "index": row["index"],
                    "lineage": row["lineage"],
                    "model": row["model"],
                    "ts": None if row["ts"] is None else row["ts"].isoformat().replace("+00:00", "Z"),
                    "input_tokens": row["input_tokens"],
                    "prefix_tokens": row["prefix_tokens"],
                    "new_tokens": row["new_tokens"],
                    "tokens_exact": row["tokens_exact"],
                    "drift": None
                    if drift is None
                    else {
                        "part": drift["part"],
                        "position": drift["position"],
                        "label": drift["label"],
                        "token_offset": drift["token_offset"],
                        "tokens_lost": drift["tokens_lost"],
                        "cause": drift["cause"],
                        "detail": drift["detail"],
                    },
                    "reported": reported,
                }
            )
        return {
            "format": self.session.format,
            "path": None if self.session.path is None else str(self.session.path),
            "skipped_lines": len(self.session.skipped),
            "calls": calls,
        }


def analyze(session: Session, *, lineage: str = "auto", encoding: str | None = None) -> Analysis:
    """Tokenize, shape and compare every call of ``session``.

    Parameters
    ----------
    session
        A loaded session (:func:`cacheviz.load`).
    lineage
        How to group calls into lineages; see :mod:`cacheviz.lineage`.
    encoding
        Force one tiktoken encoding for every call (default: per model, o200k_base
        approximation where the model's tokenizer is not public).

    Returns
    -------
    Analysis
    """
    calls = session.calls
    caches: dict[str, TokenCache] = {}
    call_cache: list[TokenCache] = []
    exact: list[bool] = []
    for call in calls:
        own, is_exact = encoding_for_model(call.model)
        name = encoding or own
        cache = caches.get(name)
        if cache is None:
            cache = caches[name] = TokenCache(name, session.contents)
        call_cache.append(cache)
        exact.append(is_exact and name == own)
    for cache in caches.values():
        cache.ensure(
            b.hash for call, c in zip(calls, call_cache, strict=True) if c is cache for b in call.blocks
        )
    offsets = [
        [0, *accumulate(len(call_cache[i][b.hash]) for b in call.blocks)]
        for i, call in enumerate(calls)
    ]
    lineages = assign_lineages(
        calls, lambda call, h: len(call_cache[call.index][h]), mode=lineage
    )

    calls_cols: dict[str, list[Any]] = {name: [] for name in _schema.CALLS}
    seg_cols: dict[str, list[Any]] = {name: [] for name in _schema.SEGMENTS if name != "stability"}
    drift_cols: dict[str, list[Any]] = {name: [] for name in _schema.DRIFTS}
    indexes: dict[str, PrefixIndex] = {}
    latest: dict[str, _State] = {}

    for i, call in enumerate(calls):
        name = lineages[i]
        cache = call_cache[i]
        own_offsets = offsets[i]
        keys = [(b.part, b.hash) for b in call.blocks]
        index = indexes.setdefault(name, PrefixIndex())
        prefix = index.match_and_insert(keys, own_offsets, cache.__getitem__).tokens
        before = latest.get(name)
        latest[name] = _State(call, own_offsets)
        drift: Diagnosis | None = None
        common = None
        if before is not None:
            prev_keys = [(b.part, b.hash) for b in before.call.blocks]
            found = match_previous(
                prev_keys, before.offsets, keys, own_offsets, cache.__getitem__
            )
            common = found.tokens
            if before.call.model != call.model:
                drift = Diagnosis(
                    "unknown", f"model changed from {before.call.model} to {call.model}"
                )
                common = 0
            elif common < before.offsets[-1]:
                drift = diagnose(before.call.blocks, call.blocks, found.blocks, session.contents)
            if drift is not None:
                at = 0 if before.call.model != call.model else found.blocks
                _add_drift(drift_cols, call, name, before, at, common, own_offsets, drift)
        _add_call(calls_cols, call, name, cache.encoding, exact[i], own_offsets, prefix, before, common, drift)
        previous_blocks = None if before is None else before.call.blocks
        for j, block in enumerate(call.blocks):
            seg_cols["call"].append(call.index)
            seg_cols["lineage"].append(name)
            seg_cols["part"].append(block.part)
            seg_cols["position"].append(block.position)
            seg_cols["label"].append(block.label)
            seg_cols["hash"].append(block.hash)
            seg_cols["bytes"].append(len(session.contents[block.hash].raw))
            seg_cols["tokens"].append(own_offsets[j + 1] - own_offsets[j])
            seg_cols["token_offset"].append(own_offsets[j])
            seg_cols["status"].append(
                segment_status(j, block, own_offsets[j + 1], prefix, previous_blocks)
            )

    segments = with_stability(
        pl.DataFrame(seg_cols, schema={k: _schema.SEGMENTS[k] for k in seg_cols})
    ).select(list(_schema.SEGMENTS))
    return Analysis(
        session,
        _schema.frame(_schema.CALLS, calls_cols),
        segments,
        _schema.frame(_schema.DRIFTS, drift_cols),
        caches,
    )


def _add_call(
    cols: dict[str, list[Any]],
    call: Call,
    lineage: str,
    encoding: str,
    exact: bool,
    offsets: list[int],
    prefix: int,
    before: _State | None,
    common: int | None,
    drift: Diagnosis | None,
) -> None:
    head, tail = log_hashes(call.blocks)
    total = offsets[-1]
    values: dict[str, Any] = {
        "index": call.index,
        "line": call.line,
        "ts": call.ts,
        "lineage": lineage,
        "provider": call.provider,
        "api": call.api,
        "model": call.model,
        "encoding": encoding,
        "tokens_exact": exact,
        "n_segments": len(call.blocks),
        "input_tokens": total,
        "prefix_tokens": prefix,
        "new_tokens": total - prefix,
        "prev_call": None if before is None else before.call.index,
        "prev_common_tokens": common,
        "drift": drift is not None,
        "drift_cause": None if drift is None else drift.cause,
        "prefix_hash": prefix_hash(call),
        "log_head_hash": head,
        "log_tail_hash": tail,
        "usage_provenance": None if call.usage is None else call.usage.provenance,
    }
    for column, field in _USAGE_FIELDS.items():
        values[column] = None if call.usage is None else getattr(call.usage, field)
    for column, value in values.items():
        cols[column].append(value)


def _add_drift(
    cols: dict[str, list[Any]],
    call: Call,
    lineage: str,
    before: _State,
    at: int,
    common: int,
    offsets: list[int],
    drift: Diagnosis,
) -> None:
    previous = before.call.blocks
    here = call.blocks[at] if at < len(call.blocks) else previous[at]
    values = {
        "call": call.index,
        "lineage": lineage,
        "prev_call": before.call.index,
        "part": here.part,
        "position": here.position,
        "label": here.label,
        "token_offset": common,
        "block_token_offset": offsets[min(at, len(call.blocks))],
        "tokens_lost": before.offsets[-1] - common,
        "cause": drift.cause,
        "detail": drift.detail,
        "hash": call.blocks[at].hash if at < len(call.blocks) else None,
        "prev_hash": previous[at].hash if at < len(previous) else None,
        "byte_offset": drift.byte_offset,
    }
    for column, value in values.items():
        cols[column].append(value)
