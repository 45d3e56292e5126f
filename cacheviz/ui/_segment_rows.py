"""The shape map's runs and the content browser's rows of every call, without the segments frame.

:func:`cacheviz.prefix._segments.segments_frame` has one row per (call, segment): millions
for a long session (6 M for 2,000 calls of a growing thread), each with its label, hash, sizes
and stability. The inspector's shape map needs only each call's runs of one status on
the token axis, and its content browser only the rows it lists (unlogged, tools and
system, or past the common prefix: a few per call). :func:`segment_rows` computes both
with the segments frame's own rules over integer columns (block ids, the calibrated
offsets, the previous call's hash at the same place) and reads the strings of the listed
rows only. ``tests/ui/test_same_after_speedups.py`` checks both against the frame.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz._schema import clean
from cacheviz._util.seq import common_prefix
from cacheviz.model import OPAQUE, Block, Call

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis

STATUS = {"same": 0, "changed": 1, "invalidated": 2, "new": 3}
"""The segment statuses as the shape map codes them (:mod:`cacheviz.ui._shape`)."""
UNLOGGED_STATUS = 4
"""The shape map's code of an unlogged (opaque) segment."""
_NAMES = {code: name for name, code in STATUS.items()}
_CONTEXT = ("tools", "system")


def runs(rows: pl.DataFrame) -> pl.DataFrame:
    """Runs of consecutive rows of one call with one ``status``, on the token axis.

    ``rows`` has ``call``, ``token_offset``, ``tokens`` and ``status`` (the shape
    code), a call's rows together and in order.
    """
    grouped = (
        rows.with_columns(run=pl.struct("call", "status").rle_id())
        .group_by("run", maintain_order=True)
        .agg(
            pl.col("call").first(),
            pl.col("token_offset").min().alias("start"),
            (pl.col("token_offset") + pl.col("tokens")).max().alias("end"),
            pl.col("status").first(),
        )
    )
    return grouped.select(
        pl.col("call").cast(pl.Int32),
        pl.col("start").cast(pl.Int32),
        pl.col("end").cast(pl.Int32),
        "status",
    )


@dataclass(frozen=True)
class SegmentRows:
    """What the inspector reads of the segments frame (:func:`segment_rows`)."""

    shape: pl.DataFrame
    """:func:`cacheviz.ui._shape.shape_runs`: one row per run (call, start, end, status)."""
    calls: list[int]
    """The calls that have segment rows, in order (a call without blocks has none)."""
    listed: list[tuple[Any, ...]]
    """The content browser's rows, ``content._CONTENT_COLUMNS`` in the frame's order:
    ``(call, opaque, part, status, label, tokens, hash)``, the same tuples as
    ``content._shown(analysis.segments).iter_rows()`` (:mod:`cacheviz.ui._content`)."""


def available(analysis: Analysis) -> bool:
    """Whether :func:`segment_rows` can read ``analysis`` (its offsets cover every call)."""
    session = getattr(analysis, "session", None)
    offsets = getattr(analysis, "offsets", None)
    return (
        session is not None
        and offsets is not None
        and len(offsets) == len(session.calls)
        and all(0 <= call.index < len(offsets) for call in session.calls)
    )


class _Builder:
    """The runs and the listed rows, call after call (:func:`segment_rows`)."""

    def __init__(self, analysis: Analysis) -> None:
        session = analysis.session
        self.contents = session.contents
        frame = analysis.calls
        calls = frame["call"].to_list()
        self.prefix_of = dict(zip(calls, frame["prefix_tokens"].to_list(), strict=True))
        self.prev_of = dict(zip(calls, frame["prev_call"].to_list(), strict=True))
        self.by_index = {call.index: call for call in session.calls}
        self.opaque_kind: dict[str, bool] = {}
        # per call: the rows of its unlogged (opaque) or context (tools, system) blocks
        self.special: dict[int, list[int]] = {}
        self.labels: dict[int, str] = {}
        self.runs: dict[str, list[int]] = {"call": [], "start": [], "end": [], "status": []}
        self.listed: list[tuple[Any, ...]] = []
        self.with_rows: list[int] = []

    def is_opaque(self, block: Block) -> bool:
        found = self.opaque_kind.get(block.hash)
        if found is None:
            found = self.opaque_kind[block.hash] = self.contents[block.hash].kind == OPAQUE
        return found

    def add(self, call: Call, own: list[int]) -> None:
        """The runs and listed rows of ``call``, whose offsets are ``own``."""
        index = call.index
        blocks = call.blocks
        n = len(blocks)
        if not n:
            self.special[index] = []
            return
        self.with_rows.append(index)
        base = own[0]
        line = self.prefix_of.get(index)
        # rows [0, inside) end inside the common prefix (offsets are non-decreasing)
        inside = 0 if line is None else bisect_right(own, base + line, 1, n + 1) - 1
        prev = self.prev_of.get(index)
        before = self.by_index.get(prev) if prev is not None else None
        shared = 0
        rows: list[int] = []
        if before is not None:
            shared = common_prefix(before.blocks, blocks)
            kept = self.special.get(before.index, [])
            rows = kept[: bisect_left(kept, shared)]
        is_opaque = self.is_opaque
        rows += [j for j in range(shared, n) if blocks[j].part in _CONTEXT or is_opaque(blocks[j])]
        self.special[index] = rows
        runs = _Runs(index, self.runs)
        at = 0  # the next row inside the prefix not yet in a run
        for j in rows:
            if j >= inside:
                break
            opaque = is_opaque(blocks[j])
            if opaque:
                if j > at:
                    runs.push(STATUS["same"], own[at] - base, own[j] - base)
                runs.push(UNLOGGED_STATUS, own[j] - base, own[j + 1] - base)
                at = j + 1
            self._list(index, blocks[j], STATUS["same"], opaque, own[j + 1] - own[j])
        if inside > at:
            runs.push(STATUS["same"], own[at] - base, own[inside] - base)
        # past the prefix: the previous call's bytes at each place past what both share
        tail: dict[tuple[str, int], str] | None = None
        for j in range(inside, n):
            block = blocks[j]
            if before is None:
                status = STATUS["new"]
            elif j < shared:  # the same block at the same place
                status = STATUS["invalidated"]
            else:
                if tail is None:
                    tail = {(b.part, b.position): b.hash for b in before.blocks[shared:]}
                had = tail.get((block.part, block.position))
                if had is None:
                    status = STATUS["new"]
                else:
                    status = STATUS["invalidated"] if had == block.hash else STATUS["changed"]
            opaque = is_opaque(block)
            runs.push(UNLOGGED_STATUS if opaque else status, own[j] - base, own[j + 1] - base)
            self._list(index, block, status, opaque, own[j + 1] - own[j])
        runs.close()

    def _list(self, call: int, block: Block, status: int, opaque: bool, tokens: int) -> None:
        label = self.labels.get(block.id)
        if label is None:
            label = self.labels[block.id] = clean(block.label)
        self.listed.append((call, opaque, block.part, _NAMES[status], label, tokens, block.hash))


class _Runs:
    """One call's runs of one status, appended to ``out`` as they close."""

    def __init__(self, call: int, out: dict[str, list[int]]) -> None:
        self.call = call
        self.out = out
        self.code = -1
        self.start = self.end = 0

    def push(self, code: int, start: int, end: int) -> None:
        """Rows ``start:end`` of the token axis with ``code``: a new run or the last one's."""
        if code == self.code:
            self.end = end
            return
        self.close()
        self.code, self.start, self.end = code, start, end

    def close(self) -> None:
        if self.code >= 0:
            out = self.out
            out["call"].append(self.call)
            out["start"].append(self.start)
            out["end"].append(self.end)
            out["status"].append(self.code)
        self.code = -1


def _call_of(analysis: Analysis, index: int) -> Call | None:
    """The session's call ``index`` (its position, else looked for)."""
    calls = analysis.session.calls
    if 0 <= index < len(calls) and calls[index].index == index:
        return calls[index]
    return next((call for call in calls if call.index == index), None)


def call_rows(analysis: Analysis, index: int) -> list[tuple[Any, ...]] | None:
    """Every segment row of call ``index``, in order, read from its blocks alone.

    The same rows as ``analysis.segments.filter(pl.col("call") == index)``: each a
    tuple ``(call, opaque, part, status, label, tokens, hash, token_offset)``
    (``content._CONTENT_COLUMNS``, then the offset), with :func:`segment_rows`'s rules
    (the segments frame's), from this call's blocks and offsets and its thread's
    previous call's blocks only. ``None`` when the call is not in the session or its
    offsets do not match its blocks (the segments frame is the reference then); ``[]``
    for a call without blocks.
    """
    offsets = getattr(analysis, "offsets", None)
    session = getattr(analysis, "session", None)
    calls = analysis.calls
    if offsets is None or session is None or not 0 <= index < len(offsets):
        return None
    call = _call_of(analysis, index)
    if call is None:
        return None
    blocks = call.blocks
    n = len(blocks)
    own = offsets[index]
    if len(own) != n + 1:
        return None
    if not n:
        return []
    found = calls.filter(pl.col("call") == index).select("prefix_tokens", "prev_call")
    if found.height != 1:
        return None
    line, prev = found.row(0)
    base = own[0]
    inside = 0 if line is None else bisect_right(own, base + line, 1, n + 1) - 1
    before = _call_of(analysis, prev) if prev is not None else None
    shared = common_prefix(before.blocks, blocks) if before is not None else 0
    tail: dict[tuple[str, int], str] | None = None
    contents = session.contents
    out: list[tuple[Any, ...]] = []
    for j, block in enumerate(blocks):
        if j < inside:
            status = "same"
        elif before is None:
            status = "new"
        elif j < shared:  # the same block at the same place
            status = "invalidated"
        else:
            if tail is None:
                tail = {(b.part, b.position): b.hash for b in before.blocks[shared:]}
            had = tail.get((block.part, block.position))
            status = "new" if had is None else "invalidated" if had == block.hash else "changed"
        opaque = contents[block.hash].kind == OPAQUE
        label = clean(block.label)
        tokens = own[j + 1] - own[j]
        out.append((index, opaque, block.part, status, label, tokens, block.hash, own[j] - base))
    return out


def segment_rows(analysis: Analysis) -> SegmentRows | None:
    """The shape runs and the listed rows of ``analysis``'s segments (module docstring).

    The rules are :func:`cacheviz.prefix._segments.segments_frame`'s: a segment is ``same`` when it
    ends inside the call's common prefix; else ``invalidated`` / ``changed`` when the
    thread's previous call had the same / other bytes at its (part, position); else
    ``new``. Sizes and offsets are the calibrated offsets' (provider tokens).

    The work is per call, not per segment: a call's offsets never decrease (they are
    cumulative token counts, :mod:`cacheviz.prefix._calibrate` keeps them non-decreasing), so its
    ``same`` segments are the ones before the first that ends past its common prefix (a
    bisection); the blocks it shares with the thread's previous call (the very objects,
    found with one C-speed comparison) keep that call's unlogged and context positions
    and have their own bytes there before; only the others are looked at.

    ``None`` when a call's offsets do not match its blocks (one offset per block, then
    the total): the segments frame is the reference then.
    """
    offsets = analysis.offsets
    builder = _Builder(analysis)
    for call in analysis.session.calls:
        own = offsets[call.index]
        if len(own) != len(call.blocks) + 1:
            return None
        builder.add(call, own)
    shape = pl.DataFrame(
        builder.runs,
        schema={"call": pl.Int32, "start": pl.Int32, "end": pl.Int32, "status": pl.Int8},
    )
    return SegmentRows(shape=shape, calls=builder.with_rows, listed=builder.listed)


def report_rows(analysis: Analysis) -> SegmentRows | None:
    """:func:`segment_rows`, ``None`` when it cannot read it."""
    return segment_rows(analysis) if available(analysis) else None


__all__ = [
    "STATUS",
    "UNLOGGED_STATUS",
    "SegmentRows",
    "available",
    "call_rows",
    "report_rows",
    "runs",
    "segment_rows",
]
