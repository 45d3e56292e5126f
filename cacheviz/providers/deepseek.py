"""DeepSeek context caching on disk (providers.md §3 and §7).

Caching is automatic and free to write: a request is billed ``hit`` tokens at the cache
rate and the rest (``miss``) at the input rate; ``cache_write_tokens`` is always 0.
Everything is scoped by model (a KV cache belongs to one model).

``units`` (current, "cache prefix units"): after request M, these units are persisted
and become usable ``build_seconds`` after M's start ("cache construction takes
seconds"):

- M's whole prompt;
- M's prompt plus its output (the output is cached);
- the prefixes at every multiple of ``interval_tokens`` inside the prompt and output;
- a common-prefix unit ``P`` when M shares a prefix with an earlier live request but
  M's hit did not cover it (A+B then A+C: nothing hits, ``A`` is persisted, A+D hits A).

Request N hits the longest live unit that is a *complete* prefix of its prompt;
``miss = prompt - hit``. A partial match inside a unit gives nothing. A unit expires
``expiry_seconds`` after its last use (a hit or a re-persist restarts the clock).

``legacy`` (before the sliding-window change): ``hit = floor(LCP / 64) * 64`` against any
earlier live prompt (every prompt is cached, its prefixes refreshed when re-sent).

How units are represented: a unit is a token prefix, identified independently of the
thread that wrote it. A prefix of ``L`` tokens ending ``r`` tokens into block ``j`` is
the key ``(chain digest of blocks 0..j-1, r, digest of block j's first r tokens)``
(``r = 0`` at a block boundary, trailing empty blocks excluded). A request tests the
units filed under each of its own block-chain digests, so the test is token-exact
within a block and costs a dict lookup per block.

The output unit: a request only reports how many tokens it generated, not which. The
unit "prompt_M + output_M" is given its identity by the first later request that starts
with M's whole prompt followed by an assistant message (role ``assistant`` or ``model``:
the output, re-sent). It is that request's prefix of ``total_M + output_tokens_M``
tokens, written at M's time. If the count exceeds the re-sent assistant run by more
than ``output_slack`` (10%, at least 8 tokens: the two sides are counted by different
tokenizers and the template adds an end-of-turn token), the output was not re-sent as
generated (reasoning dropped, an edited reply) and the unit matches nothing. Within the
slack it is clipped to the end of the assistant run, so it never swallows the next user
turn. With no reported output count, the re-sent assistant run is taken as the output.

Approximations, each a parameter or noted [U]:

- ``interval_tokens`` (4,096) is unpublished [U]; intervals are counted from token 0.
- ``expiry_seconds`` (6 h after last use) is "hours to days", best effort [U].
- ``build_seconds`` (5 s, both modes) counts from the request *start* (finish times are
  unknown); calls without a timestamp (a synthetic clock) get no build delay.
- The common-prefix unit is the longest token prefix shared with any earlier request of
  the model whose path was seen within ``expiry_seconds``; shorter shared prefixes are
  taken to exist already (they were persisted when they were first shared).
- Whether the 64-token granularity still applies to units is unstated [C]; units are
  token-exact. Legacy mode's 64-token floor is ``legacy_unit_tokens``.
- Only the hit unit is refreshed by a read; the request's own units are re-persisted.
"""

from __future__ import annotations

import hashlib
import math
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from heapq import heappop, heappush

from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._cache import Entry, EntryStore, LivePrompts
from cacheviz.providers._profile import ProviderProfile

MODES = ("units", "legacy")
OUTPUT_ROLES = frozenset({"assistant", "model"})  # a re-sent model output
OUTPUT_SLACK_MIN = 8  # tokens the reported output may exceed the re-sent run by, at least


def token_digest(tokens: array[int]) -> bytes:
    """Identity of a run of tokens."""
    return hashlib.blake2b(tokens.tobytes(), digest_size=16).digest()


def prefix_key(
    call: SimCall, length: int, memo: dict[tuple[str, int], bytes] | None = None
) -> tuple[bytes, int, bytes]:
    """The thread-independent identity of ``call``'s first ``length`` tokens.

    ``(chain digest of the whole blocks before, tokens into the next block, their digest)``;
    ``memo`` caches digests by ``(block hash, tokens)``.
    """
    offsets = call.offsets
    j = bisect_left(offsets, length)
    if j < len(offsets) and offsets[j] == length:
        return call.chain[j - 1] if j else b"", 0, b""
    j -= 1
    r = length - offsets[j]
    return call.chain[j - 1] if j else b"", r, _block_digest(call, j, r, memo)


class PrefixDigests(dict[tuple[str, int], bytes]):
    """Digests of block prefixes, ``{(block hash, tokens): digest}``, computed incrementally.

    A block's prefixes are hashed with one running hash, so the digests of every interval
    inside one huge block cost one pass over it, not one pass per interval (which made a
    single 32 MB message quadratic).
    """

    def __init__(self) -> None:
        super().__init__()
        # block hash -> (tokens hashed, running hash)
        self.running: dict[str, tuple[int, hashlib.blake2b]] = {}

    def prefix(self, block: str, tokens: array[int], r: int) -> bytes:
        """Digest of ``tokens[:r]`` (the first ``r`` tokens of block ``block``)."""
        key = (block, r)
        digest = self.get(key)
        if digest is not None:
            return digest
        done, state = self.running.get(block, (0, None))
        if state is None or r < done:  # out of order: start again from the block's start
            done, state = 0, hashlib.blake2b(digest_size=16)
        raw = memoryview(tokens).cast("B")
        state.update(raw[done * tokens.itemsize : r * tokens.itemsize])
        self.running[block] = (r, state)
        digest = self[key] = state.copy().digest()
        return digest


def _block_digest(
    call: SimCall, j: int, r: int, memo: dict[tuple[str, int], bytes] | None
) -> bytes:
    """Digest of the first ``r`` tokens of ``call``'s block ``j``."""
    tokens = call.tokens(call.hashes[j])
    if isinstance(memo, PrefixDigests):
        return memo.prefix(call.hashes[j], tokens, r)
    key = (call.hashes[j], r)
    if memo is not None and key in memo:
        return memo[key]
    digest = token_digest(tokens[:r])
    if memo is not None:
        memo[key] = digest
    return digest


@dataclass(slots=True)
class _Pending:
    """An output whose tokens are not known yet: fixed by the request that re-sends it."""

    tokens: int | None
    clock: float
    build: float
    index: int
    blocks: int  # blocks of the prompt it answered (its chain digest is the key)


class _Slot:
    """The units filed after one chain of whole blocks, by their tokens into the next block.

    ``units[r][digest]`` is ``(kind, entry)``; ``lengths`` are the ``r`` held, sorted, so a
    request hashes its block once per distinct ``r`` (not once per unit); ``expiry`` is a
    heap of ``(expires_at, seq, entry, r, digest)``, pushed whenever an entry's expiry
    changes, so the expired units are found without a sweep (stale items are skipped).
    """

    __slots__ = ("expiry", "lengths", "units")

    def __init__(self) -> None:
        self.units: dict[int, dict[bytes, tuple[str, Entry]]] = {}
        self.lengths: list[int] = []
        self.expiry: list[tuple[float, int, Entry, int, bytes]] = []

    def __len__(self) -> int:
        return sum(len(units) for units in self.units.values())

    def get(self, r: int, digest: bytes) -> tuple[str, Entry] | None:
        units = self.units.get(r)
        return None if units is None else units.get(digest)

    def put(self, r: int, digest: bytes, kind: str, entry: Entry, seq: int) -> None:
        units = self.units.get(r)
        if units is None:
            units = self.units[r] = {}
            insort(self.lengths, r)
        units[digest] = (kind, entry)
        self.expires(entry, r, digest, seq)

    def expires(self, entry: Entry, r: int, digest: bytes, seq: int) -> None:
        """Note ``entry``'s (new) expiry."""
        heappush(self.expiry, (entry.expires_at, seq, entry, r, digest))

    def sweep(self, now: float, store: EntryStore) -> None:
        """Drop every unit expired at ``now`` (from the slot and from ``store``)."""
        expiry = self.expiry
        while expiry and expiry[0][0] <= now:
            _, _, entry, r, digest = heappop(expiry)
            units = self.units.get(r)
            found = None if units is None else units.get(digest)
            if found is None or found[1] is not entry or entry.expires_at > now:
                continue  # replaced, or its expiry moved (a later item holds it)
            store.get(entry.key, now)  # drops it
            del units[digest]  # type: ignore[union-attr]  # found above
            if not units:
                del self.units[r]
                self.lengths.pop(bisect_left(self.lengths, r))


@dataclass
class _State:
    """One model's cache."""

    prompts: LivePrompts
    units: EntryStore = field(default_factory=EntryStore)
    # units filed under the chain digest before them
    index: dict[bytes, _Slot] = field(default_factory=dict)
    pending: dict[bytes, _Pending] = field(default_factory=dict)  # by the prompt's chain
    # the pending outputs by their prompt's blocks (sorted), and a heap of their expiries
    pending_by_blocks: dict[int, dict[bytes, _Pending]] = field(default_factory=dict)
    pending_blocks: list[int] = field(default_factory=list)
    pending_expiry: list[tuple[float, int, bytes, _Pending]] = field(default_factory=list)
    digests: PrefixDigests = field(default_factory=PrefixDigests)  # (block, tokens)
    seq: int = 0  # tie-breaker of the heaps' items

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def add_pending(self, key: bytes, pending: _Pending, expiry_seconds: float) -> None:
        """File ``pending`` under its prompt's chain digest (replacing the one there)."""
        self.drop_pending(key)
        self.pending[key] = pending
        group = self.pending_by_blocks.get(pending.blocks)
        if group is None:
            group = self.pending_by_blocks[pending.blocks] = {}
            insort(self.pending_blocks, pending.blocks)
        group[key] = pending
        heappush(
            self.pending_expiry, (pending.clock + expiry_seconds, self.next_seq(), key, pending)
        )

    def drop_pending(self, key: bytes) -> None:
        pending = self.pending.pop(key, None)
        if pending is None:
            return
        group = self.pending_by_blocks[pending.blocks]
        del group[key]
        if not group:
            del self.pending_by_blocks[pending.blocks]
            self.pending_blocks.pop(bisect_left(self.pending_blocks, pending.blocks))


@dataclass
class DeepSeekSimulator:
    """DeepSeek's caching rules; every parameter defaults to the spec.

    Parameters
    ----------
    mode
        ``units`` (current cache prefix units) or ``legacy`` (64-token LCP).
    interval_tokens
        Spacing of the fixed-interval units inside long inputs and outputs [U].
    expiry_seconds
        A unit's lifetime after its last use [U].
    build_seconds
        Delay from a request's start until its units are usable.
    output_slack
        How far (a fraction of the re-sent assistant run, at least 8 tokens) the
        reported output count may exceed the run and still be taken as re-sent.
    legacy_unit_tokens
        Legacy mode's storage unit: hits are floored to a multiple of it.
    """

    mode: str = "units"
    interval_tokens: int = 4096
    expiry_seconds: float = 6 * 3600
    build_seconds: float = 5.0
    output_slack: float = 0.1
    legacy_unit_tokens: int = 64
    provider: str = "deepseek"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            msg = f"mode={self.mode!r}; expected one of {', '.join(MODES)}"
            raise ValueError(msg)
        if self.interval_tokens <= 0 or self.legacy_unit_tokens <= 0:
            raise ValueError("interval_tokens and legacy_unit_tokens must be positive")

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the algorithm."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken.

        The live inspector feeds the calls as they are logged (:mod:`cacheviz.live._incremental`).
        """
        states: dict[str, _State] = {}
        for call in calls:
            state = states.get(call.model)
            if state is None:
                state = states[call.model] = _State(LivePrompts(self.expiry_seconds))
            if self.mode == "legacy":
                yield self._legacy(call, state)
            else:
                yield self._units(call, state)

    def _build(self, call: SimCall) -> float:
        return 0.0 if call.ts is None else self.build_seconds

    # legacy -----------------------------------------------------------------------------

    def _legacy(self, call: SimCall, state: _State) -> CallResult:
        now = call.clock
        lcp = state.prompts.common(call, now)
        unit = self.legacy_unit_tokens
        hit = lcp // unit * unit
        state.prompts.record(call, now, self._build(call))
        return CallResult(
            input_tokens=call.total,
            cache_read_tokens=hit,
            detail=f"legacy: LCP {lcp} with a live prompt, {hit} in {unit}-token units",
        )

    # units ------------------------------------------------------------------------------

    def _units(self, call: SimCall, state: _State) -> CallResult:
        now = call.clock
        build = self._build(call)
        self._materialise_outputs(call, state, now)
        hit, kind, writer = self._longest_unit(call, state, now)
        detail = f"hit the {kind} unit of call #{writer}" if hit else "no unit is a prefix"
        shared = state.prompts.common(call, now, visible=False)
        if hit < shared < call.total:
            self._persist(state, call, shared, now, build, "common-prefix", call.index)
            detail += f"; common prefix {shared} persisted"
        self._persist(state, call, call.total, now, build, "prompt", call.index)
        for length in range(self.interval_tokens, call.total, self.interval_tokens):
            self._persist(state, call, length, now, build, "interval", call.index)
        if call.hashes and call.output_tokens != 0:
            pending = _Pending(call.output_tokens, now, build, call.index, len(call.hashes))
            state.add_pending(call.chain[-1], pending, self.expiry_seconds)
        state.prompts.record(call, now, build)
        return CallResult(input_tokens=call.total, cache_read_tokens=hit, detail=detail)

    def _persist(
        self,
        state: _State,
        call: SimCall,
        length: int,
        written: float,
        build: float,
        kind: str,
        writer: int,
    ) -> None:
        """Persist ``call``'s first ``length`` tokens as a unit written at ``written``."""
        if length <= 0:
            return
        parent, r, digest = prefix_key(call, length, state.digests)
        slot = state.index.get(parent)
        if slot is None:
            slot = state.index[parent] = _Slot()
        found = slot.get(r, digest)
        ttl = self.expiry_seconds
        if found is not None and found[1].expires_at > written:
            entry = found[1]
            if written + ttl > entry.expires_at:
                entry.expires_at = written + ttl
                slot.expires(entry, r, digest, state.next_seq())
            entry.visible_at = min(entry.visible_at, written + build)
            return
        entry = state.units.put((parent, r, digest), length, written, ttl, written_by=writer)
        entry.visible_at = written + build
        slot.put(r, digest, kind, entry, state.next_seq())

    def _longest_unit(self, call: SimCall, state: _State, now: float) -> tuple[int, str, int]:
        """The longest live unit that is a complete prefix of the prompt; it is refreshed.

        Units filed after ``j`` whole blocks are at most ``offsets[j + 1]`` long, so the
        blocks are scanned from the last and the first one with a usable unit wins. In a
        block's slot, the units expired by ``now`` are dropped, then the block is hashed
        once per distinct length held (shortest first: one pass over its tokens), and the
        longest length whose digest names a visible unit wins.
        """
        n = len(call.hashes)
        offsets = call.offsets
        for j in range(n, -1, -1):
            slot = state.index.get(call.chain[j - 1] if j else b"")
            if slot is None or not slot.units:
                continue
            slot.sweep(now, state.units)
            lengths = slot.lengths
            if j == n:
                usable = 1 if lengths and lengths[0] == 0 else 0
            else:
                usable = bisect_right(lengths, offsets[j + 1] - offsets[j])
            digests = [
                _block_digest(call, j, r, state.digests) if r else b"" for r in lengths[:usable]
            ]
            for i in range(usable - 1, -1, -1):
                r = lengths[i]
                found = slot.units[r].get(digests[i])
                if found is None or found[1].visible_at > now:
                    continue
                kind, entry = found
                state.units.touch(entry, now)
                slot.expires(entry, r, digests[i], state.next_seq())
                return offsets[j] + r, kind, entry.written_by
        return 0, "", -1

    def _materialise_outputs(self, call: SimCall, state: _State, now: float) -> None:
        """Give identity to earlier outputs this request re-sends after their prompt.

        The pending outputs expired by ``now`` are dropped (a heap of their expiries);
        then the request looks up, for each prompt length in blocks some pending output
        has (or each of its own blocks, when fewer), its chain digest at that length:
        neither a growing thread nor a sliding window checks every pending output.
        """
        expiry = state.pending_expiry
        while expiry and expiry[0][0] <= now:
            _, _, key, pending = heappop(expiry)
            if state.pending.get(key) is pending:
                state.drop_pending(key)
        n = len(call.hashes)
        blocks = state.pending_blocks
        if len(blocks) < n:
            lengths: Iterable[int] = blocks[: bisect_left(blocks, n)]
        else:
            lengths = range(1, n)
        for j in list(lengths):
            if j <= 0:
                continue
            key = call.chain[j - 1]
            group = state.pending_by_blocks.get(j)
            found = None if group is None else group.get(key)
            if found is None:
                continue  # this request does not start with that prompt
            if call.roles[j] not in OUTPUT_ROLES:
                continue  # not the continuation (a retry, an appended user turn): keep it
            state.drop_pending(key)
            end = j
            while end < n and call.roles[end] in OUTPUT_ROLES:
                end += 1
            start, run = call.offsets[j], call.offsets[end] - call.offsets[j]
            out = run if found.tokens is None else found.tokens
            allowed = run + max(OUTPUT_SLACK_MIN, math.ceil(self.output_slack * run))
            if out <= 0 or out > allowed:
                continue  # not re-sent as generated: the unit matches nothing
            length = start + min(out, run)
            args = (found.clock, found.build)
            self._persist(state, call, length, *args, "prompt+output", found.index)
            first = (start // self.interval_tokens + 1) * self.interval_tokens
            for cut in range(first, length, self.interval_tokens):
                self._persist(state, call, cut, *args, "interval", found.index)


PROFILE = ProviderProfile(
    id="deepseek",
    label="DeepSeek",
    module="deepseek",
    simulator="DeepSeekSimulator",
    model_prefixes=("deepseek",),
    default_ttl_seconds=DeepSeekSimulator.expiry_seconds,
    reference_model="deepseek-chat",
)
