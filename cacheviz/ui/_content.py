"""The content browser of the selected call: what it sent, its system prompt and tools.

``widgets/src/views/detail.js`` draws it (``contentBrowser``) below the drift detail;
the report stores every call's (:func:`all_contents`). Each item's text is rendered as
the tokenizer sees it, cleaned, redacted, then cut; the rows come from the call's blocks
(:mod:`cacheviz.ui._segment_rows`) unless the segments frame is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz._schema import clean
from cacheviz.model import OPAQUE
from cacheviz.redact import redact, redact_slice
from cacheviz.request._blocks import render_text
from cacheviz.ui import _segment_rows as segment_rows

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from cacheviz.analysis import Analysis
    from cacheviz.ui._segment_rows import SegmentRows

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
            if digest is not None and digest not in self.texts:  # a block's hash: never None
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
        if self.texts is not None and digest is not None and digest not in self.texts:
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
    from ``rows`` or :func:`~cacheviz.ui._segment_rows.report_rows` (as the shape's do),
    without building the segments frame, unless it is already built.
    """
    browser = _Browser(analysis, texts, limit, finish)
    if rows is None and getattr(analysis, "_segments", None) is None:
        rows = segment_rows.report_rows(analysis)
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
    (:func:`cacheviz.ui._segment_rows.call_rows`) when the frame is not built yet (it
    has a row per block per call: millions), else, or when they cannot be read so,
    from the frame.
    """
    if getattr(analysis, "_segments", None) is None:
        rows = segment_rows.call_rows(analysis, call)
        if rows is not None:
            return rows
    return frame_rows(analysis, call)
