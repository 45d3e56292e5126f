"""llama.cpp's server: per-slot previous-prompt reuse and the host prompt cache.

Read from llama.cpp's ``tools/server/server-context.cpp`` and ``server-task.cpp`` (as
vendored by llama-cpp-python 0.3.36). The server has ``slots`` slots (``--parallel``);
each slot keeps the tokens of the last request it served, and nothing else stays in the
KV cache. A request is served by one slot:

1. **Slot selection** (``get_available_slot``). With a similarity threshold
   (``--slot-prompt-similarity``, 0.1), the non-empty slot whose prompt shares the
   largest fraction ``LCP / len(request)`` with the request, above the threshold, wins
   (the first such slot on ties). Else the least recently used slot (the last of the
   equally old ones: never used slots first, the last slot first).
2. **Host prompt cache** (``--cache-ram``; ``host_cache_tokens``). When the slot was
   picked by LRU, or by similarity but the request keeps less than half of the slot's
   prompt, the slot's prompt is saved to the host cache (unless a cached prompt already
   holds all of it; cached prompts it contains are dropped) and the cached prompt that
   beats the slot's own on both ``LCP / len(cached)`` and ``LCP / len(request)`` (and
   keeps at least a quarter of itself) is loaded into the slot and leaves the cache. The
   oldest prompts are dropped while the cache holds more than its token limit.
3. **Idle slots** (``--cache-idle-slots``, on by default; it needs the host cache). Once
   the request has its slot, every other slot (all idle: requests run one at a time) is
   saved to the host cache as in 2, then cleared when the KV cache is unified
   (``--kv-unified``, set by ``--parallel`` auto): only the slot that served the last
   request keeps its prompt in the KV cache, the others' prompts are in the host cache.
4. **Reuse** (``update_slots``). With ``cache_prompt`` (the request's, default true), the
   hit is the common prefix of the slot's tokens and the request, at most ``len - 1``
   (one token is always evaluated for the logits); without it, nothing. The request's
   prompt becomes the slot's tokens.

The in-process API of llama-cpp-python (``Llama``) is one slot without a host cache
(``slots=1, host_cache_tokens=0``); its optional ``LlamaRAMCache`` is not modelled.

Approximations: output token ids are not in a :class:`SimCall`, so a slot keeps the
prompt only (llama.cpp keeps prompt + output: an answer the next request sends back with
the same token ids is reused further). Requests run one at a time: every slot is free.
The host cache's limit is in tokens, where llama.cpp's ``--cache-ram`` is in MiB (at
least the context size in tokens); ``n_cache_reuse`` (KV shifting) is off, as by default.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from cacheviz._util.seq import common_prefix
from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._profile import ProviderProfile
from cacheviz.providers.vllm import prompt_tokens

SLOTS = 4  # llama-server's ``--parallel`` auto (-1): 4 slots, unified KV
SLOT_SIMILARITY = 0.1
KEEP_TO_SAVE = 0.5  # a similarity pick that keeps less of the slot's prompt saves it
KEEP_TO_LOAD = 0.25  # a cached prompt that would keep less of itself is not loaded


@dataclass(slots=True)
class _Slot:
    tokens: array[int] = field(default_factory=lambda: array("i"))
    last_used: int = -1


@dataclass
class _HostCache:
    """Saved prompts, oldest first, under a token limit (``None``: unbounded)."""

    limit: int | None
    prompts: list[array[int]] = field(default_factory=list)

    def save(self, tokens: array[int]) -> None:
        if not tokens:
            return
        if any(common_prefix(kept, tokens) == len(tokens) for kept in self.prompts):
            return
        self.prompts = [k for k in self.prompts if common_prefix(k, tokens) != len(k)]
        self.prompts.append(tokens)

    def load(self, slot: _Slot, request: array[int]) -> bool:
        """Load the better cached prompt into ``slot``; whether one was loaded."""
        lcp = common_prefix(slot.tokens, request)
        keep_best = lcp / len(slot.tokens) if slot.tokens else -1.0
        sim_best = lcp / len(request) if request else 0.0
        best = None
        for j, kept in enumerate(self.prompts):
            lcp = common_prefix(kept, request)
            keep, sim = lcp / len(kept), (lcp / len(request) if request else 0.0)
            if keep < KEEP_TO_LOAD:
                continue
            if keep_best < keep and sim_best < sim:
                keep_best, sim_best, best = keep, sim, j
        if best is None:
            return False
        slot.tokens = self.prompts.pop(best)
        return True

    def trim(self) -> None:
        if self.limit is None:
            return
        while self.prompts and sum(map(len, self.prompts)) > self.limit:
            self.prompts.pop(0)


@dataclass
class LlamaCppSimulator:
    """llama.cpp's server slots; every parameter defaults to ``llama-server``'s defaults.

    Parameters
    ----------
    slots
        Server slots (``--parallel``; 4 when left to auto).
    slot_similarity
        ``--slot-prompt-similarity`` (0.1; 0: least recently used slot only).
    cache_prompt
        Whether requests reuse their slot's tokens (a request's own ``cache_prompt``
        parameter overrides it).
    host_cache_tokens
        Token limit of the host prompt cache (``--cache-ram``); ``None``: unbounded,
        0: no host cache (the in-process ``Llama`` API).
    cache_idle_slots
        ``--cache-idle-slots``: idle slots are saved to the host cache when a request
        starts (no effect without the host cache).
    kv_unified
        ``--kv-unified`` (on with ``--parallel`` auto, off with an explicit ``--parallel
        N`` unless given): a saved idle slot is also cleared.
    """

    slots: int = SLOTS
    slot_similarity: float = SLOT_SIMILARITY
    cache_prompt: bool = True
    host_cache_tokens: int | None = None
    cache_idle_slots: bool = True
    kv_unified: bool = True
    provider: str = "llamacpp"

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError("slots must be at least 1")
        if not 0.0 <= self.slot_similarity <= 1.0:
            raise ValueError("slot_similarity must be between 0 and 1")
        if self.host_cache_tokens is not None and self.host_cache_tokens < 0:
            raise ValueError("host_cache_tokens must be 0 (off), positive, or None (unbounded)")

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the algorithm."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken."""
        slots = [_Slot() for _ in range(self.slots)]
        host = None if self.host_cache_tokens == 0 else _HostCache(self.host_cache_tokens)
        for tick, call in enumerate(calls):
            yield self._one(call, slots, host, tick)

    def _pick(self, slots: list[_Slot], request: array[int]) -> tuple[int, bool, str]:
        """The slot index, whether the host cache is updated, and how it was picked."""
        if self.slot_similarity:
            best, chosen = 0.0, None
            for j, slot in enumerate(slots):
                if not slot.tokens or not request:
                    continue
                sim = common_prefix(slot.tokens, request) / len(request)
                if sim > best and sim > self.slot_similarity:
                    best, chosen = sim, j
            if chosen is not None:
                keep = best * len(request) / len(slots[chosen].tokens)
                return chosen, keep < KEEP_TO_SAVE, "by similarity"
        oldest = 0
        for j, slot in enumerate(slots):
            if slot.last_used <= slots[oldest].last_used:
                oldest = j
        return oldest, True, "least recently used"

    def _one(
        self, call: SimCall, slots: list[_Slot], host: _HostCache | None, tick: int
    ) -> CallResult:
        total = call.total
        request = prompt_tokens(call)
        at, update, how = self._pick(slots, request)
        slot = slots[at]
        loaded = False
        if update and host is not None:
            host.save(slot.tokens)
            loaded = host.load(slot, request)
            host.trim()
        asked = call.params.get("cache_prompt")
        reuse = self.cache_prompt if asked is None else bool(asked)
        hit = min(common_prefix(slot.tokens, request), max(0, total - 1)) if reuse else 0
        slot.tokens, slot.last_used = request, tick
        if self.cache_idle_slots and host is not None:
            for idle in slots:
                if idle is slot:
                    continue
                host.save(idle.tokens)
                host.trim()
                if self.kv_unified:
                    idle.tokens = array("i")
        detail = f"slot {at} ({how}{', from the host cache' if loaded else ''}): "
        detail += f"{hit} of {total} tokens reused"
        return CallResult(
            total,
            cache_read_tokens=hit,
            detail=detail,
            extra={"prefill_tokens_saved": float(hit), "slot": float(at)},
        )


PROFILE = ProviderProfile(
    id="llamacpp",
    label="llama.cpp",
    module="llamacpp",
    simulator="LlamaCppSimulator",
    aliases=("llama.cpp", "llama-server", "llama_cpp"),
    self_hosted=True,
)
