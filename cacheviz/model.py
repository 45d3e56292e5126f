"""Plain data: a session is calls; a call is ordered blocks plus reported usage.

Block contents are content-addressed: a call holds only ``Block`` references (part,
position, label, hash) and the session keeps one ``Content`` per distinct hash, so a
block re-sent in a thousand requests is stored, rendered and tokenized once.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from cacheviz._util import fastjson

if TYPE_CHECKING:
    from pathlib import Path

    from cacheviz.analysis import Analysis

Part = Literal["tools", "system", "messages"]
OPAQUE = "opaque"  # Content.kind of the unlogged prefix of a reconstructed request
Provenance = Literal["reported", "derived"]
PARTS: tuple[Part, ...] = ("tools", "system", "messages")


@dataclass(slots=True, frozen=True)
class Usage:
    """Usage as the provider reported it, normalized.

    ``input_tokens`` is inclusive (uncached + cache read + cache write). Every field is
    ``None`` when the provider did not report it: "not reported" is never 0.
    ``provenance`` is "reported" when the inclusive input came straight from the
    provider and "derived" when cacheviz added it up from reported parts.
    ``reasoning_tokens`` (thinking) is the part of ``output_tokens`` the log reports as
    reasoning: billed as output, shown apart; ``None`` where the log does not say.
    """

    input_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_5m_tokens: int | None = None
    cache_write_1h_tokens: int | None = None
    output_tokens: int | None = None
    provenance: Provenance = "reported"
    reasoning_tokens: int | None = None  # part of output_tokens, when reported apart


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a session is read or analysed.

    A session is many small containers (blocks, elements, parsed messages, each call's
    lists), all kept: the collector's passes over them found nothing to free and took a
    quarter of the load of a 961 MB log and a fifth of its analysis. Neither makes
    reference cycles (``tests/formats/test_no_cycles.py``), so reference counting frees
    all they drop. At the end what the pause kept moves to the oldest generation
    (``gc.freeze`` then ``gc.unfreeze``) instead of being traversed by the next young
    collections, which would find it all alive again; it is still collected by the full
    collections. Nested pauses and a collector already off are left as they are.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.enable()


_UNPARSED: Any = object()  # Content._value of a content parsed from its bytes when read


class Content:
    """The bytes of one distinct block, as sent, and their parsed value.

    A content made with :meth:`unparsed` keeps its bytes only (one copy of its text, not
    two): its ``value`` is parsed from them each time it is read. The requests rebuilt
    from conversation logs are stored so; a caller that reads a value often keeps it.
    """

    __slots__ = ("_value", "kind", "raw")

    def __init__(self, raw: bytes, value: Any, kind: str) -> None:
        self.raw = raw
        self._value = value
        self.kind = kind  # render kind: "tool", "system", "message:<api>", or OPAQUE

    @classmethod
    def unparsed(cls, raw: bytes, kind: str) -> Content:
        """A content whose value is the JSON of ``raw`` (UTF-8, lone surrogates kept)."""
        return cls(raw, _UNPARSED, kind)

    @property
    def value(self) -> Any:
        """The block's parsed value (a fresh parse of ``raw`` for an unparsed content)."""
        value = self._value
        if value is _UNPARSED:
            return fastjson.loads(self.raw)  # lone surrogates: decoded with surrogatepass
        return value

    @property
    def parsed(self) -> bool:
        """Whether the value is held (``False``: parsed from ``raw`` when read)."""
        return self._value is not _UNPARSED

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Content):
            return NotImplemented
        return (self.raw, self.kind, self.value) == (other.raw, other.kind, other.value)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (scan workers) keep it unparsed
        if self.parsed:
            return (Content, (self.raw, self._value, self.kind))
        return (Content.unparsed, (self.raw, self.kind))

    def __repr__(self) -> str:
        held = "" if self.parsed else ", unparsed"
        return f"Content({self.kind}, {len(self.raw)} bytes{held})"


@dataclass(slots=True, frozen=True, eq=False)
class Block:
    """One cacheable unit of a request as sent: a tool definition, a system block, a message.

    Its row in the segments frame (one per call that sends it) is a segment. Blocks are
    shared: a request that re-sends a block at the same place holds the very object of
    the earlier request. ``id`` is its row in ``Session.blocks``.
    """

    id: int
    part: Part
    position: int  # index within the part
    label: str
    hash: str


@dataclass(slots=True)
class Call:
    """One API request (and what is known of its response)."""

    index: int
    line: int
    ts: datetime | None
    provider: str
    api: str
    model: str
    blocks: list[Block]
    usage: Usage | None = None
    thread_hint: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    reconstructed: bool = False  # rebuilt from a conversation log, not the bytes sent
    params: dict[str, Any] = field(default_factory=dict)  # request members outside the blocks
    breakpoints: list[tuple[int, int]] = field(default_factory=list)  # (block, TTL s) as sent
    hashes: list[str] = field(default_factory=list)  # block hashes, derived when not given
    message_start: int = -1  # index of the first "messages" block, derived when not given
    parent_hint: str | None = None  # the thread a sub-agent was spawned from, when logged
    source: str | None = None  # the file ``line`` is in, relative to the session's folder,
    # when not the session's own file (a sub-agent's log)
    # the engine's own token ids of the prompt, when the log holds them (a self-hosted
    # engine's response ``prompt_token_ids``): its rules then run on them, token-exact
    prompt_token_ids: list[int] | None = None

    def __post_init__(self) -> None:
        if not self.hashes and self.blocks:
            self.hashes = [b.hash for b in self.blocks]
        if self.message_start < 0:
            self.message_start = next(
                (i for i, b in enumerate(self.blocks) if b.part == "messages"), len(self.blocks)
            )


@dataclass(slots=True)
class SkippedLine:
    """A line left out with ``errors="skip"``, and why."""

    line: int | None  # None in whole-file JSON documents (the reason names the field)
    reason: str


@dataclass(frozen=True, slots=True)
class SessionUsage:
    """Usage a log reports for a whole session, per model, and never per call.

    GitHub Copilot CLI's ``session.shutdown`` ``modelMetrics``: it is billed at the
    session's scope (``ts``: when it was reported, for the dated prices).
    """

    model: str
    provider: str
    usage: Usage
    ts: datetime | None = None


@dataclass(slots=True)
class Session:
    """A loaded transcript: calls in request-time order plus their block contents."""

    path: Path | None
    format: str
    calls: list[Call]
    contents: dict[str, Content]
    blocks: list[Block] = field(default_factory=list)  # every distinct Block, by id
    skipped: list[SkippedLine] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)  # records that are not calls, by kind
    # usage a format reports for the whole session only (GitHub Copilot CLI), never per call
    reported_totals: Usage | None = None
    # the same, per model: billed at the session's scope (costs.cost_lists)
    session_usage: list[SessionUsage] = field(default_factory=list)
    # the log's own title for the session (Claude Code: the user's, else its AI title)
    title: str | None = None

    def analyze(
        self, *, thread: str = "auto", encoding: str | None = None, prices: Any = None
    ) -> Analysis:
        """Tokenize and compare every call; see :func:`cacheviz.analysis.analyze`."""
        from cacheviz.analysis import analyze

        with paused_gc():
            return analyze(self, thread=thread, encoding=encoding, prices=prices)

    def __repr__(self) -> str:
        return f"<Session {self.format} {self.path} calls={len(self.calls)}>"


# --- thread names: one scheme for every surface (summary, follow, scan, report, inspector,
# the calls frame). ``main`` is the conversation; a sub-agent is named by what it was asked
# to do; a side call by what it is for; either numbered (``#2``) by order of first call
# only when its name repeats.

MAIN_THREAD = "main"
"""The session's own conversation (``main #2``: a later part of it, after a compaction)."""
THREAD_WHAT_CHARS = 40
"""Longest description a thread name carries (cut with ``…``)."""


def _what(text: str) -> str:
    """``text`` on one line, at most :data:`THREAD_WHAT_CHARS` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= THREAD_WHAT_CHARS else flat[: THREAD_WHAT_CHARS - 1] + "…"


def subagent_name(
    description: str | None = None, kind: str | None = None, ident: str | None = None
) -> str:
    """A sub-agent's thread name: what it was asked to do, else its type, else its id.

    Parameters
    ----------
    description : str, optional
        The task's short description (Claude Code: ``agent-<id>.meta.json``'s
        ``description``, or the ``Task`` call that spawned it).
    kind : str, optional
        The agent's type (``Explore``, ``general-purpose``), used without a description.
    ident : str, optional
        The agent's id (its first 8 characters when longer than 12), used without either.

    Returns
    -------
    str
        ``sub-agent: <description>``, ``sub-agent <kind>``, ``sub-agent <id>`` or
        ``sub-agent``.
    """
    if description and description.strip():
        return f"sub-agent: {_what(description)}"
    if kind and kind.strip():
        return f"sub-agent {_what(kind)}"
    if not ident:
        return "sub-agent"
    return f"sub-agent {ident if len(ident) <= 12 else ident[:8]}"


def side_call_name(purpose: str | None, model: str) -> str:
    """A side call's thread name: what it is for (``title``, ``quota probe``), else its model."""
    return f"side call: {purpose}" if purpose else f"side call {model}"


def numbered(base: str, taken: set[str]) -> str:
    """``base``, or ``base #2``, ``#3``… when taken; the name returned is added to ``taken``."""
    name, count = base, 1
    while name in taken:
        count += 1
        name = f"{base} #{count}"
    taken.add(name)
    return name


AGENT_KEY = "agent:"
"""A reader's thread key for a sub-agent it read: ``agent:<id>`` (``agent:<id>:<more>``)."""


def name_agent_threads(calls: list[Call]) -> None:
    """Rename the ``agent:<id>`` threads of ``calls`` (in request-time order) to their names.

    :func:`subagent_name` of the id, numbered (:func:`numbered`) by order of first call;
    a reader that knows more (a description) names its threads before.
    """
    names: dict[str, str] = {}
    taken = {
        c.thread_hint for c in calls if c.thread_hint and not c.thread_hint.startswith(AGENT_KEY)
    }
    for call in calls:
        key = call.thread_hint
        if key is not None and key.startswith(AGENT_KEY) and key not in names:
            ident = key.removeprefix(AGENT_KEY).split(":", 1)[0]
            names[key] = numbered(subagent_name(ident=ident), taken)
    if names:
        for call in calls:
            call.thread_hint = names.get(call.thread_hint or "", call.thread_hint)
            call.parent_hint = names.get(call.parent_hint or "", call.parent_hint)
