"""Analysis: tokenize, shape and compare every call of a session into polars frames."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz import _schema
from cacheviz._seq import common_prefix
from cacheviz.diagnose import Diagnosis, diagnose
from cacheviz.model import OPAQUE, Call, Session
from cacheviz.prefix import Match, PrefixIndex
from cacheviz.shape import log_hashes, prefix_hash, segments_frame
from cacheviz.thread import assign_threads
from cacheviz.tokens import TokenCache, encoding_for_model

if TYPE_CHECKING:
    from cacheviz.simulate import Simulation

_MAX_UNLOGGED = 10_000_000  # the largest context windows; beyond that the report is suspect
_USAGE_FIELDS = {
    "reported_input_tokens": "input_tokens",
    "reported_cache_read_tokens": "cache_read_tokens",
    "reported_cache_write_tokens": "cache_write_tokens",
    "reported_cache_write_5m_tokens": "cache_write_5m_tokens",
    "reported_cache_write_1h_tokens": "cache_write_1h_tokens",
    "reported_output_tokens": "output_tokens",
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
    offsets: list[list[int]]  # per call: cumulative tokens before each block, then the total
    _segments: pl.DataFrame | None = None

    @property
    def segments(self) -> pl.DataFrame:
        """One row per (call, segment): the CacheShape of every request."""
        if self._segments is None:
            lengths = {name: cache.lengths() for name, cache in self.token_caches.items()}
            self._segments = segments_frame(self.session, self.calls, lengths)
        return self._segments

    def __repr__(self) -> str:
        return (
            f"<Analysis {self.session.format} calls={self.calls.height} "
            f"drifts={self.drifts.height}>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """Shown in a notebook cell, an analysis is the inspector widget."""
        from cacheviz.widget import inspect

        return inspect(self)._repr_mimebundle_(**kwargs)

    def simulate(
        self, provider: str, model: str | None = None, *, prices: Any = None, **rules: Any
    ) -> Simulation:
        """Replay the session under ``provider``'s caching rules and price it.

        See :func:`cacheviz.simulate.simulate`.
        """
        from cacheviz.simulate import simulate

        return simulate(self, provider, model, prices=prices, **rules)

    def compare(self, targets: list[str], *, prices: Any = None, **rules: Any) -> pl.DataFrame:
        """Cost of the session under several ``provider:model`` targets, side by side.

        See :func:`cacheviz.simulate.compare`.
        """
        from cacheviz.simulate import compare

        return compare(self, targets, prices=prices, **rules)

    def summary(self) -> dict[str, Any]:
        """The ``cacheviz summary --json`` document (see docs/format.md)."""
        drifts = {row["call"]: row for row in self.drifts.iter_rows(named=True)}
        calls = []
        for row in self.calls.iter_rows(named=True):
            drift = drifts.get(row["index"])
            reported = None
            if row["usage_provenance"] is not None:
                reported = {
                    key: row[f"reported_{key}"]
                    for key in (
                        "input_tokens",
                        "cache_read_tokens",
                        "cache_write_tokens",
                        "cache_write_5m_tokens",
                        "cache_write_1h_tokens",
                        "output_tokens",
                    )
                }
                reported["provenance"] = row["usage_provenance"]
            ts = row["ts"]
            calls.append(
                {
                    "index": row["index"],
                    "thread": row["thread"],
                    "model": row["model"],
                    "ts": None if ts is None else ts.isoformat().replace("+00:00", "Z"),
                    "input_tokens": row["input_tokens"],
                    "prefix_tokens": row["prefix_tokens"],
                    "new_tokens": row["new_tokens"],
                    "tokens_exact": row["tokens_exact"],
                    "reconstructed": row["reconstructed"],
                    "unlogged_tokens": row["unlogged_tokens"],
                    "drift": None
                    if drift is None
                    else {
                        key: drift[key]
                        for key in (
                            "part",
                            "position",
                            "label",
                            "token_offset",
                            "tokens_lost",
                            "cause",
                            "detail",
                        )
                    },
                    "reported": reported,
                }
            )
        return {
            "format": self.session.format,
            "path": None if self.session.path is None else str(self.session.path),
            "skipped_lines": len(self.session.skipped),
            "ignored_records": dict(self.session.ignored),
            "calls": calls,
        }


def analyze(session: Session, *, thread: str = "auto", encoding: str | None = None) -> Analysis:
    """Tokenize, shape and compare every call of ``session``.

    Parameters
    ----------
    session
        A loaded session (:func:`cacheviz.load`).
    thread
        How to group calls into threads; see :mod:`cacheviz.thread`.
    encoding
        Force one tiktoken encoding for every call (default: per model, ``o200k_base``
        as an approximation where the model's tokenizer is not public).

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
        if name not in caches:
            caches[name] = TokenCache(name, session.contents)
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
    threads = assign_threads(
        calls,
        keys,
        offsets,
        lambda i, h: lengths[call_cache[i].encoding][h],
        mode=thread,
    )

    call_cols: dict[str, list[Any]] = {name: [] for name in _schema.CALLS}
    drift_cols: dict[str, list[Any]] = {name: [] for name in _schema.DRIFTS}
    indexes: dict[str, PrefixIndex] = {}
    latest: dict[str, int] = {}
    for i, call in enumerate(calls):
        name = threads[i]
        index = indexes.setdefault(name, PrefixIndex())
        best, previous = index.add(keys[i], offsets[i], call_cache[i].__getitem__)
        before = latest.get(name)
        latest[name] = i
        drift = None
        if before is not None and previous is not None:
            drift = _drift(session, calls[before], call, offsets[before], previous)
            if drift is not None:
                at, common, diagnosis = drift
                _add_drift(drift_cols, call, name, calls[before], at, common, offsets, diagnosis)
        _add_call(
            call_cols,
            call,
            name,
            call_cache[i].encoding,
            exact[i],
            offsets[i][-1],
            best,
            None if before is None else calls[before].index,
            None if previous is None else (0 if drift and drift[0] == -1 else previous.tokens),
            None if drift is None else drift[2],
            unlogged,
        )

    return Analysis(
        session,
        _schema.frame(_schema.CALLS, call_cols),
        _schema.frame(_schema.DRIFTS, drift_cols),
        caches,
        offsets,
    )


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
        for digest in call.hashes:
            if digest not in opaque or digest in sizes:
                continue
            reported = call.usage.input_tokens if call.usage else None
            if reported is None:
                continue
            visible = sum(len(cache[h]) for h in call.hashes if h not in opaque)
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
        count = lengths[i].__getitem__
        shared = 0
        if i and lengths[i] is lengths[i - 1]:
            shared = common_prefix(keys[i - 1], hashes)
        if shared:
            offsets = out[i - 1][:shared]
            offsets += accumulate(map(count, hashes[shared:]), initial=out[i - 1][shared])
            out.append(offsets)
        else:
            out.append([0, *accumulate(map(count, hashes))])
    return out


def _drift(
    session: Session, before: Call, call: Call, before_offsets: list[int], previous: Match
) -> tuple[int, int, Diagnosis] | None:
    """``(block index, common tokens, diagnosis)`` when ``call`` drifts from ``before``."""
    if before.model != call.model:
        detail = f"model changed from {before.model} to {call.model}"
        return -1, 0, Diagnosis("unknown", detail)
    if previous.tokens >= before_offsets[-1]:
        return None
    diagnosis = diagnose(before.blocks, call.blocks, previous.blocks, session.contents)
    return previous.blocks, previous.tokens, diagnosis


def _add_call(
    cols: dict[str, list[Any]],
    call: Call,
    thread: str,
    encoding: str,
    exact: bool,
    total: int,
    best: Match,
    prev_call: int | None,
    common: int | None,
    drift: Diagnosis | None,
    unlogged: dict[str, int],
) -> None:
    head, tail = log_hashes(call)
    hidden = [unlogged.get(h, 0) for h in call.hashes[: call.message_start] if h in unlogged]
    values: dict[str, Any] = {
        "index": call.index,
        "line": call.line,
        "ts": call.ts,
        "thread": thread,
        "provider": call.provider,
        "api": call.api,
        "model": call.model,
        "encoding": encoding,
        "tokens_exact": exact,
        "reconstructed": call.reconstructed,
        "unlogged_tokens": sum(hidden) if hidden else None,
        "n_segments": len(call.blocks),
        "input_tokens": total,
        "prefix_tokens": best.tokens,
        "new_tokens": total - best.tokens,
        "prev_call": prev_call,
        "prev_common_tokens": common,
        "drift": drift is not None,
        "drift_cause": None if drift is None else drift.cause,
        "prefix_hash": prefix_hash(call),
        "log_head_hash": head,
        "log_tail_hash": tail,
        "usage_provenance": None if call.usage is None else call.usage.provenance,
        "provider_verdict": call.meta.get("provider_verdict"),
    }
    for column, field in _USAGE_FIELDS.items():
        values[column] = None if call.usage is None else getattr(call.usage, field)
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
    here = call.blocks[at] if at < len(call.blocks) else previous[at]
    own = offsets[call.index]
    values = {
        "call": call.index,
        "thread": thread,
        "prev_call": before.index,
        "part": here.part,
        "position": here.position,
        "label": here.label,
        "token_offset": common,
        "block_token_offset": own[min(at, len(call.blocks))],
        "tokens_lost": offsets[before.index][-1] - common,
        "cause": drift.cause,
        "detail": drift.detail,
        "hash": call.blocks[at].hash if at < len(call.blocks) else None,
        "prev_hash": previous[at].hash if at < len(previous) else None,
        "byte_offset": drift.byte_offset,
    }
    for column, value in values.items():
        cols[column].append(value)
