"""Group calls into threads: the conversations of a session.

A thread is a conversation: each call's messages continue the messages of the thread's
previous call (plus its reply). System prompt, tools, request parameters and even the
model may change inside a thread - those are exactly the drifts cacheviz shows - so a
thread is recognised by its messages only. Sub-agents and side calls (title generation,
quota probes) start threads of their own. A drift is judged against the previous call of
the same thread; the common-prefix line is measured against the whole cache namespace
(:mod:`cacheviz.prefix._namespace`), whatever the thread.

Modes
-----
``auto`` (default)
    The transcript's own thread (``meta.thread``, or ``meta.session``/``meta.agent``, or
    a sub-agent file) when it gives one; its ``main`` thread has no parent, even when a
    sub-agent's call comes first. Otherwise a call joins the thread whose latest
    call it continues best: the share of that call's message tokens this call still
    sends, in order (the longest common message prefix, where one message edited in place
    - a stripped ``<environment_details>``, a timestamp - still counts as kept), or, when
    the front of the history was cut, the share of its messages found again. At least
    :data:`JOIN_SHARE` is needed; else the call starts a new thread. A new thread's
    parent is the thread of the most recent call that belongs to a thread of more than
    one call (the conversation that was running when it started).
    A call that adds no message to the one it continues, and either changes the model or
    shares none of its tools and system blocks, is a side call (a title or summary of the
    conversation so far, asked of another model), not the next turn: it starts a thread.
``model+prefix``
    Model plus the hash of tools+system (the strict rule: any change starts a thread).
``model``
    One thread per model.
``single``
    Every call in one thread.
"""

from __future__ import annotations

import dataclasses
import functools
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cacheviz._util.seq import common_prefix
from cacheviz.model import MAIN_THREAD, Call, Content, numbered, side_call_name, subagent_name
from cacheviz.prefix._segments import prefix_hash

THREAD_MODES = ("auto", "model+prefix", "model", "single")
JOIN_SHARE = 0.5  # share of the earlier call's message tokens this call must keep
EDIT_SHARE = 0.5  # share of a message's tokens an edit in place keeps (prefix + suffix)
_FRAMING = 3  # tokens a rendered message spends on its start, role and end
MAX_CANDIDATES = 64  # most recent threads compared with each call
CONVERSATION_CALLS = 3  # calls a found thread needs, besides the main one, to be a sub-agent
ROOT = MAIN_THREAD  # a transcript's own main thread (``thread_hint``): never a sub-thread
PURPOSE_CHARS = 2_000  # characters of a call's text a side call's purpose is read from
# what a side call is for, by the words of its system prompt or messages (Claude Code's
# own side calls: lowercase phrases, first match wins)
PURPOSES = (
    ("quota probe", ("quota",)),
    ("title", ("title",)),
    ("topic check", ("new conversation topic", "isnewtopic")),
    ("status word", ("gerund",)),
    ("summary", ("summarize", "summary")),
    ("bash prefix", ("command prefix",)),
)

TokensOf = Callable[[int, str], "array[int]"]  # array[int] is not subscriptable before 3.12


def _texts(value: Any, out: list[str], budget: list[int]) -> None:
    """Collect the strings of ``value`` (a block's parsed JSON), up to ``budget[0]`` chars."""
    if budget[0] <= 0:
        return
    if isinstance(value, str):
        out.append(value[: budget[0]])
        budget[0] -= len(out[-1])
    elif isinstance(value, dict):
        for key in ("text", "content", "system"):
            if key in value:
                _texts(value[key], out, budget)
    elif isinstance(value, list):
        for item in value:
            _texts(item, out, budget)


def call_purpose(call: Call, contents: Mapping[str, Content]) -> str | None:
    """What a side call is for, when its words tell (:data:`PURPOSES`), else ``None``.

    A quota probe is a lone ``quota`` message; a title, topic, status-word or summary
    call says so in its system prompt or its last message. Read from the first
    :data:`PURPOSE_CHARS` characters of its system prompt and its last message.
    """
    found: list[str] = []
    system = [b for b in call.blocks if b.part == "system"]
    messages = [b for b in call.blocks if b.part == "messages"]
    for block in [*system, *messages[-1:]]:
        content = contents.get(block.hash)
        if content is not None:
            _texts(content.value, found, [PURPOSE_CHARS])
    text = " ".join(" ".join(found).split()).lower()
    if not text:
        return None
    if text == "quota" and len(messages) == 1:
        return "quota probe"
    for purpose, words in PURPOSES[1:]:
        if any(word in text for word in words):
            return purpose
    return None


def _kept_edit(a: array[int], b: array[int]) -> bool:
    """Whether ``b`` is ``a`` edited in place (a tail cut off, a value changed)."""
    if a == b:
        return True  # a change the rendered text does not show (an id, a key order)
    shorter = min(len(a), len(b))
    if shorter <= 2 * _FRAMING:
        return False  # next to no content: compared whole
    head = common_prefix(a, b)
    if head >= shorter - 2:
        return True  # one is the other plus text (but the closing token and a merged one)
    tail = common_prefix(a[::-1], b[::-1], 0, 0, shorter - head)
    return head + tail - _FRAMING >= EDIT_SHARE * (shorter - _FRAMING)


def continuity(
    earlier: Call,
    earlier_offsets: Sequence[int],
    call: Call,
    old_tokens: Callable[[str], array[int]],
    new_tokens: Callable[[str], array[int]],
    call_messages: set[str] | None = None,
) -> float:
    """Share (0..1) of ``earlier``'s message tokens that ``call`` still sends.

    Parameters
    ----------
    earlier, call
        The thread's latest call and the call to place.
    earlier_offsets
        Cumulative token offsets of ``earlier``'s blocks.
    old_tokens, new_tokens
        Token array of a block hash of ``earlier`` and of ``call``.
    call_messages
        The set of ``call``'s message hashes, if already built.

    Returns
    -------
    float
    """
    s0, s1 = earlier.message_start, call.message_start
    old, new = earlier.hashes[s0:], call.hashes[s1:]
    base = earlier_offsets[s0]
    total = earlier_offsets[-1] - base
    if not old:
        return 0.0
    m = common_prefix(old, new)
    if m == len(old):
        return 1.0
    kept = earlier_offsets[s0 + m] - base
    if m < len(new) and _kept_edit(old_tokens(old[m]), new_tokens(new[m])):
        rest = len(old) - m - 1
        if common_prefix(old, new, m + 1, m + 1, rest) == rest:
            return 1.0  # one message edited in place, the rest continues
        kept = earlier_offsets[s0 + m + 1] - base
    share = kept / total if total else 0.0
    if share >= JOIN_SHARE:
        return share
    found = call_messages if call_messages is not None else set(new)
    again = sum(
        earlier_offsets[s0 + k + 1] - earlier_offsets[s0 + k]
        for k, h in enumerate(old)
        if h in found
    )
    return max(share, again / total if total else 0.0)


def assign_threads(
    calls: Sequence[Call],
    offsets: Sequence[Sequence[int]],
    tokens_of: TokensOf,
    *,
    mode: str = "auto",
    contents: Mapping[str, Content] | None = None,
) -> tuple[list[str], list[str | None]]:
    """Return the thread name and the parent thread (or ``None``) of every call.

    Parameters
    ----------
    calls
        The session's calls in request-time order.
    offsets
        Each call's cumulative token offsets (``offsets[i][-1]`` is its total).
    tokens_of
        ``tokens_of(call index, hash)``: token array of one block of that call.
    mode
        One of :data:`THREAD_MODES`.
    contents
        The session's block contents: a side call is named by what it is for
        (:func:`call_purpose`); without them, by its model.

    Returns
    -------
    tuple of list
    """
    if mode not in THREAD_MODES:
        msg = f"thread={mode!r}; expected one of {', '.join(THREAD_MODES)}"
        raise ValueError(msg)
    hints = [call.parent_hint for call in calls]
    if mode == "single":
        return ["main"] * len(calls), [None] * len(calls)
    if mode == "model":
        return [call.model for call in calls], hints
    if mode == "model+prefix":
        return [f"{call.model}:{prefix_hash(call)[:6]}" for call in calls], hints

    walk = ThreadWalk(contents=contents)
    names = [walk.step(i, call, calls, offsets, tokens_of)[0] for i, call in enumerate(calls)]
    renamed, tree = walk.named()
    return [renamed[n] for n in names], [tree[renamed[n]] for n in names]


@dataclasses.dataclass
class ThreadWalk:
    """:func:`assign_threads` (mode ``auto``), one call at a time.

    Finds each call's thread among the threads of the calls stepped before, and keeps
    what :func:`name_threads` reads of them; :class:`cacheviz.live._incremental.LiveLog` keeps
    one across appends.
    """

    latest: dict[str, int] = dataclasses.field(default_factory=dict)
    """Each thread's latest call (the most recent thread last)."""
    first: dict[str, int] = dataclasses.field(default_factory=dict)
    """Each thread's first call."""
    per_model: dict[str, int] = dataclasses.field(default_factory=dict)
    """New (unhinted) threads per model, for their names."""
    parents: dict[str, str | None] = dataclasses.field(default_factory=dict)
    """Each thread's parent, as recorded at its first call."""
    hinted: set[str] = dataclasses.field(default_factory=set)
    """The threads the transcript names."""
    logged: set[str] = dataclasses.field(default_factory=set)
    """The threads whose parent the transcript names."""
    totals: ThreadTotals = dataclasses.field(default_factory=lambda: ThreadTotals())
    contents: Mapping[str, Content] | None = None
    """The session's block contents, to tell what a side call is for (optional)."""

    def step(
        self,
        i: int,
        call: Call,
        calls: Sequence[Call],
        offsets: Sequence[Sequence[int]],
        tokens_of: TokensOf,
    ) -> tuple[str, str | None]:
        """The thread of call ``i`` (its name before :meth:`named`) and its parent.

        Parameters
        ----------
        i, call
            The call and its index; the calls before it were stepped, in order.
        calls, offsets, tokens_of
            As for :func:`assign_threads` (at least the calls up to ``i``).

        Returns
        -------
        tuple
            The thread's name and the parent thread it records for this call (``None``).
        """
        latest, sizes = self.latest, self.totals.sizes
        parent = call.parent_hint
        name: str | None
        if call.thread_hint is not None:
            name = call.thread_hint
        else:
            name = _best_thread(i, call, calls, offsets, tokens_of, latest)
            if name is None:
                count = self.per_model.get(call.model, 0) + 1
                self.per_model[call.model] = count
                name = call.model if count == 1 else f"{call.model}#{count}"
                while name in latest:  # a hinted thread took the name
                    name += "'"
        if name not in latest and parent is None and sizes and call.thread_hint != ROOT:
            first = self.first
            parent = max(sizes, key=lambda t: (sizes[t], -first[t]))
        if name not in latest and self.contents is not None and call.thread_hint is None:
            self.totals.purposes[name] = call_purpose(call, self.contents)
        latest.pop(name, None)
        latest[name] = i
        self.first.setdefault(name, i)
        self.totals.add(i, name, call.model, offsets[i][-1])
        parent = parent if parent != name else None
        self.parents.setdefault(name, parent)
        if call.thread_hint is not None:
            self.hinted.add(name)
        if call.parent_hint is not None:
            self.logged.add(name)
        return name, parent

    def named(self) -> tuple[dict[str, str], dict[str, str | None]]:
        """:func:`name_threads` of the calls stepped so far: new names and the tree."""
        return name_from_totals(self.totals, self.parents, self.hinted, self.logged)


def name_threads(
    calls: Sequence[Call],
    names: Sequence[str],
    parents: dict[str, str | None],
    hinted: set[str],
    logged: set[str],
    weights: Sequence[int],
    contents: Mapping[str, Content] | None = None,
) -> tuple[dict[str, str], dict[str, str | None]]:
    """Names that say what each found thread is, and a tree with the main one at its root.

    The main conversation is the found (unhinted) thread that sent the most tokens among
    those with at least half the calls of the longest one (so a few short side calls in
    a row don't outrank it): it is named ``main`` and has no parent. Another found
    thread with at least :data:`CONVERSATION_CALLS` calls of the main thread's model is
    a ``sub-agent <model>`` when it runs while the main one does, and a later part of
    the main conversation (``main #2``: after a compaction, say) when it does not; any
    other is a side call: ``side call: <purpose>`` when its words tell what it is for
    (:func:`call_purpose`: ``title``, ``quota probe``…), else ``side call <model>``
    (:func:`cacheviz.model.side_call_name`). A name is numbered (``#2``, by order of
    first call) only when it repeats.
    A found thread whose parent was guessed hangs under the guessed parent only when that
    one is the larger; else under the main thread. Threads the transcript names (hinted)
    keep their names and their logged parents.

    ``contents`` (the session's block contents) lets a side call be named by its purpose,
    as :class:`ThreadWalk` does; without them it is named by its model.

    Returns
    -------
    tuple of dict
        Old name to new name, and new name to parent (new names).
    """
    totals = ThreadTotals()
    for i, (name, call) in enumerate(zip(names, calls, strict=True)):
        new = name not in totals.sizes
        if new and contents is not None and call.thread_hint is None:
            totals.purposes[name] = call_purpose(call, contents)
        totals.add(i, name, call.model, weights[i])
    return name_from_totals(totals, parents, hinted, logged)


@dataclasses.dataclass
class ThreadTotals:
    """Per thread: calls, tokens sent, first and last call index, first model.

    What :func:`name_threads` reads of the calls; kept call by call by
    :class:`ThreadWalk`.
    """

    sizes: dict[str, int] = dataclasses.field(default_factory=dict)
    tokens: dict[str, int] = dataclasses.field(default_factory=dict)
    spans: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    models: dict[str, str] = dataclasses.field(default_factory=dict)
    purposes: dict[str, str | None] = dataclasses.field(default_factory=dict)
    """What each found thread's first call is for (:func:`call_purpose`), when read."""

    def add(self, i: int, name: str, model: str, weight: int) -> None:
        """Count call ``i`` (of ``model``, ``weight`` tokens) in thread ``name``."""
        self.sizes[name] = self.sizes.get(name, 0) + 1
        self.tokens[name] = self.tokens.get(name, 0) + weight
        self.spans.setdefault(name, [i, i])[1] = i
        self.models.setdefault(name, model)


def name_from_totals(
    totals: ThreadTotals,
    parents: dict[str, str | None],
    hinted: set[str],
    logged: set[str],
) -> tuple[dict[str, str], dict[str, str | None]]:
    """:func:`name_threads` from the threads' :class:`ThreadTotals`."""
    sizes, tokens, spans, models = totals.sizes, totals.tokens, totals.spans, totals.models
    purposes = totals.purposes
    found = [n for n in sizes if n not in hinted]
    if not found:
        return {n: n for n in sizes}, dict(parents)
    longest = max(sizes[n] for n in found)
    main = max(
        (n for n in found if 2 * sizes[n] >= longest),
        key=lambda n: (tokens[n], sizes[n], -spans[n][0]),
    )
    taken = set(hinted)
    renamed = {n: n for n in hinted}
    renamed[main] = ROOT if ROOT not in taken else main
    taken.add(renamed[main])
    for name in found:
        if name == main:
            continue
        start, end = spans[name]
        overlaps = start <= spans[main][1] and end >= spans[main][0]
        conversation = sizes[name] >= CONVERSATION_CALLS and models[name] == models[main]
        if conversation and not overlaps:
            base = renamed[main]  # the main conversation again, e.g. after a compaction
        elif conversation:
            base = subagent_name(kind=models[name])
        else:
            base = side_call_name(purposes.get(name), models[name])
        renamed[name] = numbered(base, taken)
    tree: dict[str, str | None] = {}
    for name in sizes:
        parent = parents.get(name)
        if name == main:
            tree[renamed[name]] = None
        elif name in hinted or name in logged:
            tree[renamed[name]] = None if parent is None else renamed.get(parent, parent)
        elif parent is not None and parent != main and sizes.get(parent, 0) > sizes[name]:
            tree[renamed[name]] = renamed[parent]
        else:
            tree[renamed[name]] = renamed[main]
    return renamed, tree


def _side_call(earlier: Call, call: Call) -> bool:
    """A call that adds no message and changes the model or all of tools and system."""
    old = len(earlier.hashes) - earlier.message_start
    new = len(call.hashes) - call.message_start
    if new > old:
        return False
    if earlier.model != call.model:
        return True
    head = set(earlier.hashes[: earlier.message_start])
    return bool(head) and not head.intersection(call.hashes[: call.message_start])


def _best_thread(
    i: int,
    call: Call,
    calls: Sequence[Call],
    offsets: Sequence[Sequence[int]],
    tokens_of: TokensOf,
    latest: dict[str, int],
) -> str | None:
    """The unhinted thread ``call`` continues best, or ``None`` for a new one."""
    best, best_key = None, (0.0, False, False)
    messages: set[str] | None = None
    head = set(call.hashes[: call.message_start])
    for name in list(reversed(latest))[:MAX_CANDIDATES]:
        j = latest[name]
        earlier = calls[j]
        if earlier.thread_hint is not None or _side_call(earlier, call):
            continue
        if messages is None and len(earlier.hashes) - earlier.message_start:
            messages = set(call.hashes[call.message_start :])
        share = continuity(
            earlier,
            offsets[j],
            call,
            functools.partial(tokens_of, j),
            lambda h: tokens_of(i, h),
            messages,
        )
        # among equal continuations: the same model, then shared tools/system, then recency
        same_head = bool(head.intersection(earlier.hashes[: earlier.message_start]))
        key = (share, earlier.model == call.model, same_head)
        if key > best_key:
            best, best_key = name, key
            if key == (1.0, True, True):
                break
    best_share = best_key[0]
    return best if best_share >= JOIN_SHARE else None
