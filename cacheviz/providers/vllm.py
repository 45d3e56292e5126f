"""vLLM automatic prefix caching (V1 engine; providers.md §5.7 and §7).

The prompt is cut into ``block_size`` token blocks (the deployment's: 16 on GPU, 128 on
vLLM's CPU build, whose attention takes multiples of 32 only; ``device`` picks the
default, ``block_size`` any other, and a log that says its engine's block size, in
``meta.engine.block_size``, gives it); each full block is keyed by a
chain hash, ``sha256(parent key + the block's token ids)``, rooted in the model name and
the request's ``cache_salt`` (vLLM puts the salt into block 0; a server serves one
model). The hit is the run of leading blocks whose keys are cached, capped at
``floor((len - 1) / block_size) * block_size`` (the last token is always recomputed for
its logits, so a full match recomputes the last block; vLLM 0.32's
``KVCacheManager.get_computed_blocks``, checked against a real vLLM in
docs/simulation.md). There is no TTL and no write fee; the result is reported as read
tokens and as ``extra["prefill_tokens_saved"]``.

Memory follows vLLM's block pool when ``capacity_blocks`` is set: free blocks wait in a
queue, least recently used first. A request takes its hit blocks out of the queue, then
allocates ``ceil((len + output) / 16) - hit`` blocks from the head of the queue (never
used blocks first), evicting whatever cached blocks they held. When it finishes, its
blocks go back to the tail in reverse order, so its tail blocks are evicted before its
head. Full prompt blocks keep their keys (they are the cache); the partial last block and
the output's blocks go back as empty blocks.

Approximations: output token ids are not in a :class:`SimCall`, so the output is never
cached by itself: it counts for hits only through the next request's prompt, and for
memory only while its request runs (then as empty free blocks). Requests run one at a
time (no concurrent references, no preemption); a request larger than the pool caches
only the blocks it could allocate. A recomputed block whose key is still cached (the
capped last block of a full match) replaces the older copy, which becomes an empty block.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from cacheviz._util.seq import common_prefix
from cacheviz.providers._base import CallResult, SimCall
from cacheviz.providers._profile import ProviderProfile

BLOCK_SIZE = 16
DEVICE_BLOCK_SIZES = {"gpu": BLOCK_SIZE, "cpu": 128}
"""vLLM's default ``--block-size`` per device (vLLM 0.32: GPU 16; the CPU build 128)."""


def prompt_tokens(call: SimCall, start: int = 0) -> array[int]:
    """The request's token ids from token ``start`` on (its blocks' arrays, joined)."""
    first = max(0, bisect.bisect_right(call.offsets, start) - 1)
    joined: array[int] | None = None
    for h in call.hashes[first:]:
        tokens = call.tokens(h)
        if joined is None:
            joined = array(tokens.typecode)
        if tokens.typecode == joined.typecode:
            joined.extend(tokens)
        else:
            joined.extend(tokens.tolist())
    if joined is None:
        return array("i")
    skip = start - call.offsets[first] if first < len(call.offsets) else 0
    return joined[skip:] if skip > 0 else joined


def _root(call: SimCall) -> bytes:
    salt = call.params.get("cache_salt")
    text = f"{call.model}\0{'' if salt is None else salt}"
    return hashlib.sha256(text.encode()).digest()


class _Hasher:
    """Block keys of each request, reusing those of the previous request's shared prefix."""

    def __init__(self, block_size: int) -> None:
        self.size = block_size
        self._previous: tuple[bytes, list[str], list[bytes]] | None = None

    def keys(self, call: SimCall) -> list[bytes]:
        root, size = _root(call), self.size
        full = call.total // size
        reuse = 0
        keys: list[bytes] = []
        if self._previous is not None and self._previous[0] == root:
            _, hashes, previous = self._previous
            depth = common_prefix(hashes, call.hashes)
            reuse = min(call.offsets[depth] // size, len(previous), full)
            keys = previous[:reuse]
        if reuse < full:
            tokens = prompt_tokens(call, reuse * size)
            parent = keys[-1] if keys else root
            for j in range(full - reuse):
                chunk = tokens[j * size : (j + 1) * size]
                parent = hashlib.sha256(parent + chunk.tobytes()).digest()
                keys.append(parent)
        self._previous = (root, call.hashes, keys)
        return keys


class _BlockPool:
    """Cached and free blocks: a queue, least recently used first (head)."""

    def __init__(self, capacity: int | None) -> None:
        self.capacity = capacity
        self.queue: OrderedDict[bytes | int, None] = OrderedDict()  # bytes: cached key
        self.fresh = capacity or 0  # never-used (or emptied) blocks, ahead of the queue
        self._empty = itertools.count()  # ids of empty blocks in the queue

    def leading(self, keys: list[bytes]) -> int:
        """How many leading blocks are cached."""
        return next((j for j, key in enumerate(keys) if key not in self.queue), len(keys))

    def serve(self, keys: list[bytes], hit: int, needed: int) -> tuple[int, int]:
        """Run one request: hold ``hit`` cached blocks, allocate the rest, free all.

        Returns the number of cached blocks evicted and of blocks that could not be had.
        """
        for key in keys[:hit]:
            del self.queue[key]
        evicted = 0
        held = max(needed, hit)
        if self.capacity is not None:
            want, got = max(0, needed - hit), 0
            take = min(want, self.fresh)
            self.fresh -= take
            got += take
            while got < want and self.queue:
                oldest, _ = self.queue.popitem(last=False)
                evicted += isinstance(oldest, bytes)
                got += 1
            held = hit + got
        for j in range(held - 1, -1, -1):
            if j < len(keys):
                key = keys[j]
                if j >= hit and key in self.queue:  # an older copy: it becomes empty
                    del self.queue[key]
                    if self.capacity is not None:
                        self.fresh += 1
                self.queue[key] = None
            elif self.capacity is not None:
                self.queue[next(self._empty)] = None
        return evicted, max(needed, hit) - held


@dataclass
class VLLMSimulator:
    """vLLM's automatic prefix caching; every parameter defaults to vLLM's defaults.

    Parameters
    ----------
    block_size
        Tokens per KV block (``--block-size``); ``None``: the ``device``'s default.
    device
        ``gpu`` (16-token blocks) or ``cpu`` (128, vLLM's CPU build).
    capacity_blocks
        KV blocks in the pool (``num_gpu_blocks``); ``None``: unbounded, never evicts.
    """

    block_size: int | None = None  # set to the device's when not given
    device: str = "gpu"
    capacity_blocks: int | None = None
    provider: str = "vllm"
    DEFAULT_OF: ClassVar[dict[str, str]] = {"device": "block_size"}
    """``device`` only picks ``block_size``'s default: not a parameter used once it is given."""

    def __post_init__(self) -> None:
        if self.device not in DEVICE_BLOCK_SIZES:
            msg = f"device must be one of {', '.join(DEVICE_BLOCK_SIZES)}, not {self.device!r}"
            raise ValueError(msg)
        if self.block_size is None:
            self.block_size = DEVICE_BLOCK_SIZES[self.device]
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int):
            msg = f"block_size must be a whole number, not {self.block_size!r}"
            raise ValueError(msg)
        if self.block_size < 1:
            raise ValueError("block_size must be at least 1")
        if self.capacity_blocks is not None and self.capacity_blocks < 1:
            raise ValueError("capacity_blocks must be at least 1 (or None)")

    @property
    def size(self) -> int:
        """The block size in use (``block_size``, else the device's)."""
        return self.block_size or DEVICE_BLOCK_SIZES[self.device]

    def run(self, calls: Sequence[SimCall]) -> list[CallResult]:
        """Replay the calls; see the module docstring for the algorithm."""
        return list(self.stream(calls))

    def stream(self, calls: Iterable[SimCall]) -> Iterator[CallResult]:
        """Replay the calls one by one: each result as soon as its call is taken.

        The live inspector feeds the calls as they are logged (:mod:`cacheviz.live._incremental`).
        """
        pool = _BlockPool(self.capacity_blocks)
        hasher = _Hasher(self.size)
        for call in calls:
            yield self._one(call, pool, hasher)

    def _one(self, call: SimCall, pool: _BlockPool, hasher: _Hasher) -> CallResult:
        size, total = self.size, call.total
        keys = hasher.keys(call)
        found = pool.leading(keys)
        hit_blocks = min(found, max(0, (total - 1) // size))
        output = call.output_tokens or 0
        needed = -(-(total + output) // size)
        evicted, short = pool.serve(keys, hit_blocks, needed)
        hit = hit_blocks * size
        detail = f"{hit_blocks} of {len(keys)} full block(s) hit"
        if found > hit_blocks:
            detail += ", last block recomputed"
        if evicted:
            detail += f", {evicted} evicted"
        if short:
            detail += f", {short} block(s) beyond the pool"
        return CallResult(
            total,
            cache_read_tokens=hit,
            detail=detail,
            extra={"prefill_tokens_saved": float(hit), "evicted_blocks": float(evicted)},
        )


PROFILE = ProviderProfile(
    id="vllm",
    label="vLLM",
    module="vllm",
    simulator="VLLMSimulator",
    self_hosted=True,
)
