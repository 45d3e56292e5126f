"""OpenAI prompt caching (Chat Completions and Responses; providers.md §2 and §7).

OpenAI documents two generations; ``generation`` picks one, by default from the model
name (:func:`generation_for`: GPT-5.6 and later, and GPT-6, are ``breakpoint``).

``classic`` (GPT-5.5 and earlier: implicit caching only)
    A prompt under 1,024 tokens caches nothing. Otherwise the cached part is the longest
    common token prefix (LCP) with any live prompt stored in the same routing bucket,
    floored to the granularity ``g`` (128; 2,048 for gpt-5.5, whose implicit breakpoints
    are 2,048 tokens apart, already a multiple of the 128 rounding), and it counts only
    when it reaches 1,024. After the request the whole prompt is stored, with no write
    fee (``cache_write_tokens`` stays 0). A hit refreshes the entry it read from. The
    TTL is the inactivity time of the retention policy: ``in_memory`` ("5 to 10 minutes
    of inactivity, up to one hour") defaults to the conservative 5 minutes, ``24h``
    ("typically around 30 minutes, up to 24 hours") to 30 minutes.

``breakpoint`` (GPT-5.6 and later)
    Breakpoints are the implicit one, at the end of the latest eligible message (a user
    message, the last tool response of a consecutive group, or the end of the initial
    developer block), and the explicit ones the request marked. Lookup candidates: the
    first 2 and latest 50 explicit breakpoints, the implicit one, up to 20 earlier
    eligible message endings, and the end of the initial developer block. The hit ``A``
    is the longest candidate with a live entry of at least 1,024 tokens, read exactly
    (no rounding). Entries are written at up to 4 breakpoints past ``A`` (the implicit
    one takes a slot), and ``cache_write_tokens = T(last written) - T(A)``, which pricing
    bills at 1.25x. An entry lives 30 minutes from its latest write or reuse.
    ``prompt_cache_options.mode = "explicit"`` drops the implicit breakpoint and the
    message-ending candidates.

Both generations keep caches per routing bucket and per render salt: the model and the
request members that change the rendered prefix without being blocks
(``parallel_tool_calls``, ``response_format``, ``text``, ``reasoning``,
``reasoning_effort``, ``verbosity``, ``context_management``; each as a whole object).

Approximations
--------------
* Routing bucket: ``prompt_cache_key`` when the request sets one, else the prefix hash,
  taken as the chain digest of the blocks that cover the first 256 tokens (a block that
  straddles token 256 counts whole, so an edit past token 256 inside that block moves
  the request to another bucket). Within a key's bucket requests whose first tokens
  differ never share 1,024 tokens anyway, so the key alone is enough. Organization and
  region are one scope; overflow routing above ~15 requests/min per prefix is not
  modelled (every request reaches its bucket's machine).
* Classic LCP search: the longest match among *all* live, visible prompts of the
  bucket, found through an index (:class:`_Bucket`), not by comparing each; a tie goes
  to the most recently used prompt, which the hit refreshes. (Until 2026-12 at most
  ``max_compared`` (64) prompts were compared, most recent first: an approximation for
  speed, not the spec; the parameter is still accepted and ignored.)
* Hidden system tokens are unknown and taken as 0.
* ``retention=None`` follows the request's ``prompt_cache_retention`` and falls back to
  ``in_memory``, the conservative choice (the Sept-2026 guide makes ``24h`` the default
  for non-ZDR organizations; the classic guide said ``in_memory``). GPT-5.6+ ignores it:
  its only TTL is ``breakpoint_ttl_seconds`` (30 minutes).
* GPT-5.6+: which explicit breakpoints get the write slots when more than 4 lie past the
  hit is undocumented [U]: the latest ones do. Only the hit entry is refreshed. The API
  reference's alternative candidate rule (the latest 80 breakpoints, no lookback limit)
  is not offered [C]. A content-part breakpoint is taken at the end of its message, and
  a role per block means a message is one block. Eligible tool responses are blocks
  whose role is ``tool``/``function`` or ends in ``_call_output`` (Responses items).
  The initial developer block ends at the last block before the conversation (cacheviz
  renders tools after the instructions, as harmony puts them in the developer message).
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import heapq
import json
import re
import warnings
from array import array
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

from cacheviz._util.seq import differing_block_common
from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._cache import Entry, EntryStore
from cacheviz.providers._profile import HistoryFix, LongerTTL, ProviderProfile

GENERATIONS = ("classic", "breakpoint")
MODES = ("implicit", "explicit")
RETENTIONS = ("in_memory", "24h")
GRANULARITY = 128
GPT55_GRANULARITY = 2048  # gpt-5.5 / 5.5-pro: implicit breakpoints every 2,048 tokens
MIN_TOKENS = 1024
ROUTING_PREFIX_TOKENS = 256
BREAKPOINT_TTL = 1800  # GPT-5.6+: prompt_cache_options.ttl "30m", the only value
MAX_WRITES = 4
EXPLICIT_FIRST = 2
EXPLICIT_LATEST = 50
MESSAGE_LOOKBACK = 20
_SALT_KEYS = (
    "parallel_tool_calls",
    "response_format",
    "text",
    "reasoning",
    "reasoning_effort",
    "verbosity",
    "context_management",
)
_VERSION = re.compile(r"gpt-(\d+)(?:\.(\d+))?")


def model_version(model: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a GPT model name, ``None`` for other names.

    Examples
    --------
    >>> model_version("gpt-5.6-terra"), model_version("gpt-4o-mini"), model_version("o3")
    ((5, 6), (4, 0), None)
    """
    found = _VERSION.search(model.lower())
    if found is None:
        return None
    return int(found[1]), int(found[2] or 0)


def generation_for(model: str) -> str:
    """``breakpoint`` for GPT-5.6 and later (GPT-6 included), else ``classic``.

    Examples
    --------
    >>> [generation_for(m) for m in ("gpt-5.5", "gpt-5.6-sol", "gpt-6-luna", "o4-mini")]
    ['classic', 'breakpoint', 'breakpoint', 'classic']
    """
    version = model_version(model)
    return "breakpoint" if version is not None and version >= (5, 6) else "classic"


def request_mode(params: dict[str, object]) -> str:
    """A GPT-5.6+ request's caching mode: ``prompt_cache_options.mode``, else ``implicit``."""
    options = params.get("prompt_cache_options")
    mode = options.get("mode") if isinstance(options, dict) else None
    return "explicit" if mode == "explicit" else "implicit"


def granularity_for(model: str) -> int:
    """The classic generation's cache granularity: 2,048 for gpt-5.5, else 128.

    Examples
    --------
    >>> granularity_for("gpt-5.5-pro"), granularity_for("gpt-5.4")
    (2048, 128)
    """
    return GPT55_GRANULARITY if model_version(model) == (5, 5) else GRANULARITY


def _salt(call: SimCall) -> bytes:
    """The model and the request members that change the rendered prefix."""
    params = {k: call.params[k] for k in _SALT_KEYS if k in call.params}
    if not params:
        return _model_salt(call.model)
    text = json.dumps([call.model, params], sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).digest()[:8]


@functools.lru_cache(maxsize=64)
def _model_salt(model: str) -> bytes:
    """:func:`_salt` of a request without any of those members (the same digest)."""
    text = json.dumps([model, {}], sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).digest()[:8]


def _route(call: SimCall) -> tuple[str, Hashable]:
    """The routing bucket: ``prompt_cache_key``, else the first ~256 tokens' digest."""
    key = call.params.get("prompt_cache_key")
    if key is not None:
        return ("key", str(key))
    if not call.chain:
        return ("prefix", b"")
    last = bisect.bisect_left(call.offsets, ROUTING_PREFIX_TOKENS) - 1
    return ("prefix", call.chain[min(max(last, 0), len(call.chain) - 1)])


def _token_lcp(a: SimCall, b: SimCall, floor: int = -1) -> int:
    """Common tokens of two requests: whole equal blocks, then the differing block.

    The equal blocks are found by bisecting the prefix identities (``chain[i]`` is the
    digest of blocks ``0..i``: equal exactly where the blocks up to ``i`` are), in
    log(blocks) comparisons. When even the whole differing block could not take the
    result past ``floor`` its tokens are not compared, and the result is at most
    ``floor`` (what a caller looking for more than ``floor`` needs).
    """
    depth = _common_blocks(a.chain, b.chain)
    tokens = a.offsets[depth]
    if depth < len(a.hashes) and depth < len(b.hashes):
        if min(a.offsets[depth + 1], a.total, b.total) <= floor:
            return min(tokens, a.total, b.total)
        run = differing_block_common(a.tokens(a.hashes[depth]), b.tokens(b.hashes[depth]))
        tokens += a.partial(depth, run)
    return min(tokens, a.total, b.total)


def _common_blocks(a: list[bytes], b: list[bytes]) -> int:
    """How many leading blocks two prefix-identity chains share (a bisection)."""
    n = min(len(a), len(b))
    if not n or a[0] != b[0]:
        return 0
    if a[n - 1] == b[n - 1]:
        return n
    low, high = 1, n - 1  # a[low - 1] == b[low - 1]; a[high] != b[high]
    while low < high:
        mid = (low + high) // 2
        if a[mid] == b[mid]:
            low = mid + 1
        else:
            high = mid
    return low


def _is_tool_response(role: str | None) -> bool:
    return role is not None and (role in ("tool", "function") or role.endswith("_call_output"))


@dataclass(slots=True)
class _Kids:
    """The distinct next blocks of the live prompts through one node, sorted by tokens.

    ``keys`` are the blocks' token ids as 4-byte words, so byte order is a lexicographic
    order of the token sequences (by some order of the words): the block sharing the
    most leading tokens with a given one is next to where that one would be inserted.
    """

    depth: int
    keys: list[bytes] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    count: dict[str, int] = field(default_factory=dict)
    key_of: dict[str, bytes] = field(default_factory=dict)
    owner: dict[str, SimCall] = field(default_factory=dict)  # a prompt with that block

    def add(self, prompt: SimCall) -> None:
        h = prompt.hashes[self.depth]
        if h in self.count:
            self.count[h] += 1
            return
        key = _token_key(prompt.tokens(h))
        at = bisect.bisect_left(self.keys, key)
        self.keys.insert(at, key)
        self.hashes.insert(at, h)
        self.count[h], self.key_of[h], self.owner[h] = 1, key, prompt

    def remove(self, prompt: SimCall) -> None:
        h = prompt.hashes[self.depth]
        left = self.count[h] - 1
        if left:
            self.count[h] = left
            return
        key = self.key_of.pop(h)
        del self.count[h], self.owner[h]
        at = bisect.bisect_left(self.keys, key)
        while self.hashes[at] != h:
            at += 1
        del self.keys[at], self.hashes[at]

    def best_run(self, call: SimCall) -> int:
        """Most tokens of ``call``'s block at this depth shared with one of these blocks."""
        block = call.tokens(call.hashes[self.depth])
        key = _token_key(block)
        at = bisect.bisect_left(self.keys, key)
        near = [at - 1] if at else []
        ahead = at
        while ahead < len(self.keys) and self.keys[ahead] == key:
            ahead += 1  # identical tokens, another hash: they share all but the last
        near += [at, ahead] if ahead > at else [ahead]
        best = 0
        for i in near:
            if i < len(self.hashes):
                h = self.hashes[i]
                best = max(best, differing_block_common(block, self.owner[h].tokens(h)))
        return best


def _token_key(tokens: array[int]) -> bytes:
    """A block's tokens as fixed-width words: any fixed width orders them lexicographically."""
    return (tokens if tokens.typecode == "i" else array("i", tokens)).tobytes()


_KIDS_KEPT = 8  # nodes whose sorted next blocks are kept up to date


@dataclass(slots=True)
class _Bucket:
    """The stored prompts of one routing bucket (classic generation), indexed.

    ``order`` keeps the live prompts sorted by their block sequences (lexicographically,
    compared by bisecting their prefix chains): the prompts sharing the most blocks with
    a call are next to where it would be inserted, and those sharing at least ``d`` are
    one run around that place. At the deepest shared node the best partial block is
    found among the sorted next blocks (:class:`_Kids`), which gives the longest match
    ``B``; then the prompts are walked most recently used first until one matches ``B``
    tokens (ties: the most recent, as an uncapped comparison of every prompt would
    give). Storing or dropping a prompt costs O(log(prompts) * log(blocks)) steps, not one
    per block. Expiry is lazy: a heap of expiry times pops what expired by the call's
    clock, exactly what a sweep of every entry at each call would drop.
    """

    entries: EntryStore = field(default_factory=EntryStore)
    prompts: dict[bytes, SimCall] = field(default_factory=dict)
    order: list[SimCall] = field(default_factory=list)
    expiry: list[tuple[float, int, Entry]] = field(default_factory=list)
    kids: dict[bytes, _Kids] = field(default_factory=dict)
    latest_visible: float = float("-inf")  # latest ``visible_at`` ever written
    pushed: int = 0

    def _schedule(self, entry: Entry) -> None:
        self.pushed += 1
        heapq.heappush(self.expiry, (entry.expires_at, self.pushed, entry))

    def _position(self, call: SimCall) -> int:
        """Where ``call``'s block sequence goes in ``order`` (before an equal one)."""
        order, low, high = self.order, 0, len(self.order)
        while low < high:
            mid = (low + high) // 2
            if _before(order[mid], call):
                low = mid + 1
            else:
                high = mid
        return low

    def put(self, call: SimCall, now: float, ttl: float) -> None:
        """Store ``call``'s whole prompt (rewriting an identical one)."""
        key = call.chain[-1]
        at = self._position(call)
        if key in self.prompts:
            self.order[at] = call  # the same blocks
        else:
            self.order.insert(at, call)
            for node, kids in self.kids.items():
                if _passes(call, node, kids.depth):
                    kids.add(call)
        self.prompts[key] = call
        entry = self.entries.put(key, call.total, now, ttl, written_by=call.index)
        self.latest_visible = max(self.latest_visible, entry.visible_at)
        self._schedule(entry)

    def touch(self, entry: Entry, now: float, ttl: float) -> None:
        """A hit refreshes the entry it read from."""
        self.entries.touch(entry, now, ttl)
        self._schedule(entry)

    def _expire(self, now: float) -> None:
        """Drop every entry expired by ``now`` (entries refreshed since are rescheduled)."""
        expiry = self.expiry
        while expiry and expiry[0][0] <= now:
            expires_at, _, entry = heapq.heappop(expiry)
            key = cast(bytes, entry.key)
            if entry.expires_at != expires_at or self.entries.peek(key) is not entry:
                continue  # refreshed or rewritten since it was scheduled
            self.entries.get(key, now)  # drops it
            prompt = self.prompts.pop(key)
            del self.order[self._position(prompt)]
            for node, kids in self.kids.items():
                if _passes(prompt, node, kids.depth):
                    kids.remove(prompt)

    def longest(self, call: SimCall, now: float) -> tuple[int, Entry | None]:
        """The longest token prefix ``call`` shares with a live prompt, and its entry."""
        self._expire(now)
        if not self.prompts:
            return 0, None
        if self.latest_visible > now:  # calls logged out of time order: some not visible
            return self._compare_all(call, now)
        order, chain = self.order, call.chain
        at = self._position(call)
        depth = max(
            _common_blocks(chain, order[i].chain) for i in (at - 1, at) if 0 <= i < len(order)
        )
        bound = call.offsets[depth]
        if depth < len(call.hashes):
            kids = self._kids(call, at, depth)
            if kids.hashes:  # some live prompt goes on past the node: its best next block
                bound += call.partial(depth, kids.best_run(call))
        bound = min(bound, call.total)
        node = chain[depth - 1] if depth else b""
        for entry in self.entries.recent():
            if entry.tokens < bound:
                continue
            prompt = self.prompts[cast(bytes, entry.key)]
            if bound > call.offsets[depth] and not _passes(prompt, node, depth):
                continue  # shares fewer blocks: at most ``offsets[depth]`` tokens
            if _token_lcp(call, prompt, bound - 1) == bound:
                return bound, entry
        return self._compare_all(call, now)  # no prompt long enough (calibrated sizes)

    def _kids(self, call: SimCall, at: int, depth: int) -> _Kids:
        """The next blocks of the live prompts through ``call``'s node at ``depth``."""
        node = call.chain[depth - 1] if depth else b""
        kids = self.kids.pop(node, None)  # put back last: the least recently used goes
        if kids is None or kids.depth != depth:
            order, low, high = self.order, at, at  # the run sharing ``depth`` blocks
            if depth:
                while low > 0 and _shares(order[low - 1], node, depth):
                    low -= 1
                while high < len(order) and _shares(order[high], node, depth):
                    high += 1
            else:
                low, high = 0, len(order)
            kids = _Kids(depth)
            for prompt in order[low:high]:
                if _passes(prompt, node, depth):
                    kids.add(prompt)
            if len(self.kids) >= _KIDS_KEPT:
                del self.kids[next(iter(self.kids))]
        self.kids[node] = kids
        return kids

    def _compare_all(self, call: SimCall, now: float) -> tuple[int, Entry | None]:
        """Every live, visible prompt compared, most recently used first."""
        best, best_entry = 0, None
        for entry in self.entries.recent():
            # an entry written at a later clock (calls logged out of time order) is not
            # visible yet: kept, with its prompt, for the calls after it
            if entry.tokens <= best or entry.visible_at > now:
                continue
            length = _token_lcp(call, self.prompts[cast(bytes, entry.key)], best)
            if length > best:
                best, best_entry = length, entry
                if best >= call.total:
                    break
        return best, best_entry


def _before(a: SimCall, b: SimCall) -> bool:
    """Whether ``a``'s block sequence sorts before ``b``'s (a prefix sorts first)."""
    k = _common_blocks(a.chain, b.chain)
    if k == len(a.hashes):
        return k < len(b.hashes)
    if k == len(b.hashes):
        return False
    return a.hashes[k] < b.hashes[k]


def _shares(prompt: SimCall, node: bytes, depth: int) -> bool:
    """Whether ``prompt`` starts with the ``depth`` blocks whose prefix digest is ``node``."""
    return depth == 0 or (len(prompt.chain) >= depth and prompt.chain[depth - 1] == node)


def _passes(prompt: SimCall, node: bytes, depth: int) -> bool:
    """Whether ``prompt`` goes through ``node`` (a chain digest at ``depth``) and beyond."""
    return len(prompt.hashes) > depth and _shares(prompt, node, depth)


@dataclass
class OpenAISimulator:
    """OpenAI's caching rules; every parameter defaults to the spec.

    Parameters
    ----------
    retention
        ``in_memory`` or ``24h`` for every request; ``None`` follows each request's
        ``prompt_cache_retention`` (``in_memory`` when absent). Classic generation only.
    in_memory_ttl_seconds, extended_ttl_seconds
        Inactivity TTL of ``in_memory`` (documented 5 to 60 minutes) and ``24h``
        (typically 30 minutes, up to 24 hours) entries.
    granularity
        Classic cache granularity; ``None``: 2,048 for gpt-5.5, else 128.
    min_tokens
        Minimum cached prefix.
    generation
        ``classic`` (GPT-5.5 and earlier) or ``breakpoint`` (GPT-5.6+); ``None``: from
        each call's model name.
    breakpoint_ttl_seconds
        GPT-5.6+ entry lifetime after its latest write or reuse.
    max_writes
        GPT-5.6+ cache writes per request.
    message_lookback
        GPT-5.6+ earlier eligible message endings looked up.
    max_compared
        Deprecated and ignored: the classic search now finds the longest match among all
        live prompts (it compared at most this many, most recent first, before 2026-12).
    mode
        GPT-5.6+: ``implicit`` or ``explicit`` for every request; ``None`` follows each
        request's ``prompt_cache_options.mode`` (``implicit`` when absent).
    """

    retention: str | None = None
    in_memory_ttl_seconds: float = 300
    extended_ttl_seconds: float = 1800
    granularity: int | None = None
    min_tokens: int = MIN_TOKENS
    generation: str | None = None
    breakpoint_ttl_seconds: float = BREAKPOINT_TTL
    max_writes: int = MAX_WRITES
    message_lookback: int = MESSAGE_LOOKBACK
    max_compared: int | None = None
    mode: str | None = None
    provider: str = "openai"

    def __post_init__(self) -> None:
        if self.retention is not None:
            self.retention = self.retention.replace("-", "_")
            if self.retention not in RETENTIONS:
                msg = f"retention={self.retention!r}; expected in_memory, 24h or None"
                raise ValueError(msg)
        if self.generation is not None and self.generation not in GENERATIONS:
            msg = f"generation={self.generation!r}; expected classic, breakpoint or None"
            raise ValueError(msg)
        if self.mode is not None and self.mode not in MODES:
            msg = f"mode={self.mode!r}; expected implicit, explicit or None"
            raise ValueError(msg)
        if self.granularity is not None and self.granularity < 1:
            raise ValueError("granularity must be at least 1")
        if self.max_compared is not None:
            warnings.warn(
                "OpenAISimulator(max_compared=...) is deprecated and ignored: the classic "
                "search finds the longest match among all live prompts; drop the argument",
                DeprecationWarning,
                stacklevel=3,
            )

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the algorithm."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken.

        The live inspector feeds the calls as they are logged (:mod:`cacheviz.live._incremental`).
        """
        buckets: dict[tuple[bytes, tuple[str, Hashable]], _Bucket] = {}
        store = EntryStore()
        for call in calls:
            generation = self.generation or generation_for(call.model)
            if generation == "classic":
                yield self._classic(call, buckets)
            else:
                yield self._breakpoint(call, store)

    def _ttl(self, call: SimCall) -> tuple[str, float]:
        retention = self.retention or str(call.params.get("prompt_cache_retention") or "")
        retention = retention.replace("-", "_")
        if retention == "24h":
            return retention, self.extended_ttl_seconds
        return "in_memory", self.in_memory_ttl_seconds

    def _classic(
        self, call: SimCall, buckets: dict[tuple[bytes, tuple[str, Hashable]], _Bucket]
    ) -> CallResult:
        now, total = call.clock, call.total
        if total < self.min_tokens or not call.hashes:
            return CallResult(total, detail=f"below the {self.min_tokens}-token minimum")
        retention, ttl = self._ttl(call)
        step = self.granularity or granularity_for(call.model)
        bucket = buckets.setdefault((_salt(call), _route(call)), _Bucket())
        length, entry = bucket.longest(call, now)
        cached = length // step * step
        if cached < self.min_tokens:
            cached = 0
        if entry is not None and cached:
            bucket.touch(entry, now, ttl)
            detail = (
                f"{retention}: {length} tokens match call {entry.written_by}, "
                f"{cached} cached (every {step})"
            )
        elif length:
            detail = f"{retention}: {length} tokens match, under {self.min_tokens} once floored"
        else:
            detail = f"{retention}: no live prompt in the bucket"
        bucket.put(call, now, ttl)
        return CallResult(total, cache_read_tokens=cached, detail=detail)

    def _points(self, call: SimCall) -> tuple[list[int], list[int], int | None]:
        """Lookup candidates (longest first), explicit breakpoints, implicit breakpoint."""
        n = len(call.hashes)
        explicit = sorted({b.block for b in call.breakpoints if 0 <= b.block < n})
        candidates = set(explicit[:EXPLICIT_FIRST])
        candidates.update(explicit[max(0, len(explicit) - EXPLICIT_LATEST) :])
        mode = self.mode or request_mode(call.params)
        implicit = None
        if mode != "explicit":
            start = next((i for i, part in enumerate(call.parts) if part == "messages"), n)
            developer_end = start - 1 if start > 0 else None
            endings = [
                i
                for i in range(start, n)
                if call.roles[i] == "user"
                or (
                    _is_tool_response(call.roles[i])
                    and (i + 1 == n or not _is_tool_response(call.roles[i + 1]))
                )
            ]
            if endings:
                implicit = endings[-1]
                earlier = endings[:-1][max(0, len(endings) - 1 - self.message_lookback) :]
                candidates.update(earlier)
            else:
                implicit = developer_end
            if implicit is not None:
                candidates.add(implicit)
            if developer_end is not None:
                candidates.add(developer_end)
        return sorted(candidates, reverse=True), explicit, implicit

    def _breakpoint(self, call: SimCall, store: EntryStore) -> CallResult:
        now, total = call.clock, call.total
        candidates, explicit, implicit = self._points(call)
        scope = (_salt(call), _route(call))

        def length(i: int) -> int:
            return call.offsets[i + 1]

        hit = -1
        for i in candidates:
            if length(i) < self.min_tokens:
                break  # candidates are longest first
            entry = store.get((scope, call.chain[i]), now)
            if entry is not None:
                hit = i
                store.touch(entry, now, self.breakpoint_ttl_seconds)
                break
        read = length(hit) if hit >= 0 else 0

        def beyond(i: int) -> bool:
            return length(i) > read and length(i) >= self.min_tokens

        written = [implicit] if implicit is not None and beyond(implicit) else []
        extra = [i for i in explicit if beyond(i) and i != implicit]
        slots = max(0, self.max_writes - len(written))
        written = sorted(written + extra[max(0, len(extra) - slots) :])[: self.max_writes]
        for i in written:
            store.put(
                (scope, call.chain[i]),
                length(i),
                now,
                self.breakpoint_ttl_seconds,
                written_by=call.index,
            )
        write = length(written[-1]) - read if written else 0
        detail = f"{len(candidates)} candidate(s)"
        if hit >= 0:
            detail += f", hit at block {hit}"
        if written:
            detail += f", wrote at block(s) {', '.join(map(str, written))}"
        elif not candidates or length(candidates[0]) < self.min_tokens:
            detail += f", below the {self.min_tokens}-token minimum"
        return CallResult(total, cache_read_tokens=read, cache_write_tokens=write, detail=detail)


def _min_tokens(model: str) -> int:
    return MIN_TOKENS


PROFILE = ProviderProfile(
    id="openai",
    label="OpenAI",
    module="openai",
    simulator="OpenAISimulator",
    model_prefixes=("gpt-", "o1", "o3", "o4", "codex"),
    # GPT-5.6+'s prompt_cache_breakpoint: "30m" is the only lifetime
    ttls={"30m": BREAKPOINT_TTL},
    default_ttl_seconds=OpenAISimulator.in_memory_ttl_seconds,
    longer_ttl=LongerTTL({"retention": "24h"}, "prompt_cache_retention '24h'"),
    # the whole prompt's cache key: they invalidate from the tools on
    keyed_params=(
        (
            "tools",
            (
                "parallel_tool_calls",
                "response_format",
                "text.format",
                "reasoning_effort",
                "reasoning.effort",
                "verbosity",
                "text.verbosity",
                "prompt_cache_key",
            ),
        ),
    ),
    min_tokens=_min_tokens,
    reference_model="gpt-5",
    # GPT-5.6+ explicit mode: "with no breakpoint, nothing is cached" (providers.md §2.1)
    only_at_breakpoints=lambda call: (
        generation_for(call.model) == "breakpoint" and request_mode(call.params) == "explicit"
    ),
    history_fix=HistoryFix(
        {"mode": "implicit"}, "implicit mode (a breakpoint at the latest message)"
    ),
)
