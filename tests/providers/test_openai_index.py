"""The indexed classic OpenAI search against a brute-force reference (providers.md §2, §7).

The reference below compares the call with every live, visible prompt of its routing
bucket, token by token, with no cap: the cached part is the longest common prefix with
any of them (ties: the most recently used), the sweep drops every entry expired by the
call's clock, a hit refreshes the entry it read, and the whole prompt is stored. The
simulator must give the same read, and name the same writer, on every call.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import random
import re
from array import array
from dataclasses import dataclass, replace
from itertools import accumulate
from pathlib import Path

import pytest
from sim_sessions import real_sim_calls

from cacheviz.providers._base import HandBuilt, SimCall
from cacheviz.providers.openai import OpenAISimulator

SALT_KEYS = (
    "parallel_tool_calls",
    "response_format",
    "text",
    "reasoning",
    "reasoning_effort",
    "verbosity",
    "context_management",
)
WRITER = re.compile(r"match call (\d+)")


@dataclass
class Stored:
    prompt: SimCall
    expires_at: float
    ttl: float
    written_by: int
    visible_at: float
    used: int  # recency: larger is more recently written or refreshed


def bucket_of(call: SimCall) -> tuple[str, str]:
    params = {k: call.params[k] for k in SALT_KEYS if k in call.params}
    salt = json.dumps([call.model, params], sort_keys=True, default=str)
    key = call.params.get("prompt_cache_key")
    if key is not None:
        return salt, f"key:{key}"
    last = bisect.bisect_left(call.offsets, 256) - 1
    return salt, "prefix:" + call.chain[min(max(last, 0), len(call.chain) - 1)].hex()


def common(call: SimCall, other: SimCall) -> int:
    """Whole equal blocks, one by one, then the tokens of the first differing block."""
    k = 0
    while k < min(len(call.hashes), len(other.hashes)) and call.hashes[k] == other.hashes[k]:
        k += 1
    tokens = call.offsets[k]
    if k < len(call.hashes) and k < len(other.hashes):
        a, b = list(call.tokens(call.hashes[k])), list(other.tokens(other.hashes[k]))
        run = 0
        while run < min(len(a), len(b)) and a[run] == b[run]:
            run += 1
        if a == b:  # same tokens, different bytes: never hide the change
            run -= 1
        tokens += call.partial(k, run)
    return min(tokens, call.total, other.total)


STATS: dict[str, int] = {}


def count(what: str, n: int = 1) -> None:
    STATS[what] = STATS.get(what, 0) + n


def reference(calls: list[SimCall], retention: str | None, granularity: int) -> list[tuple]:
    """(read, writer) per call, every live prompt compared (:data:`STATS` counts cases)."""
    buckets: dict[tuple[str, str], dict[bytes, Stored]] = {}
    used = 0
    out: list[tuple] = []
    for call in calls:
        now = call.clock
        if call.total < 1024 or not call.hashes:
            out.append((0, None))
            continue
        chosen = retention or str(call.params.get("prompt_cache_retention") or "in_memory")
        ttl = 1800.0 if chosen == "24h" else 300.0
        store = buckets.setdefault(bucket_of(call), {})
        for key in [k for k, s in store.items() if s.expires_at <= now]:
            del store[key]
            count("expired")
        count("not yet visible", sum(1 for s in store.values() if s.visible_at > now))
        scored = [
            (common(call, s.prompt), s.used, s) for s in store.values() if s.visible_at <= now
        ]
        best = max((length for length, _, _ in scored), default=0)
        count("compared", len(scored))
        if best >= 1024:
            count("read")
            count("tie", sum(1 for n, _, _ in scored if n == best) > 1)
            count("inside a block", best not in call.offsets)
            count("clipped by a shorter prompt", any(n == s.prompt.total for n, _, s in scored))
        winner = max(((u, s) for n, u, s in scored if n == best and best > 0), default=None)
        cached = best // granularity * granularity
        if cached < 1024:
            cached = 0
        if winner is not None and cached:
            entry = winner[1]
            entry.ttl = max(entry.ttl, ttl)
            entry.expires_at = now + entry.ttl
            used += 1
            entry.used = used
        used += 1
        store[call.chain[-1]] = Stored(call, now + ttl, ttl, call.index, now, used)
        out.append((cached, winner[1].written_by if winner and cached else None))
    return out


def simulated(calls: list[SimCall], retention: str | None, granularity: int) -> list[tuple]:
    results = OpenAISimulator(retention=retention, granularity=granularity).run(calls)
    out = []
    for r in results:
        found = WRITER.search(r.detail or "")
        out.append((r.cache_read_tokens, int(found[1]) if found else None))
    return out


def generated(seed: int) -> tuple[list[SimCall], str | None, int]:
    """A random tree of prompts: each one an earlier prompt cut, edited and extended."""
    rng = random.Random(seed)
    build = HandBuilt()
    alphabet = rng.choice([3, 8, 1000])  # few token ids: long partial matches
    prompts: list[list[list[int]]] = []
    calls: list[SimCall] = []
    clock = 0.0
    scaled = rng.random() < 0.3  # calibrated offsets: sizes scaled per call
    keyed = rng.random() < 0.4  # routed by prompt_cache_key, else by the first tokens

    def block(n: int) -> list[int]:
        return [rng.randrange(alphabet) for _ in range(n)]

    head = block(rng.choice([300, 600]))  # covers the 256 routing tokens
    for index in range(rng.randrange(20, 70)):
        if prompts and rng.random() < 0.85:
            base = rng.choice(prompts[-8:] if rng.random() < 0.7 else prompts)
            blocks = [list(b) for b in base[: rng.randrange(1, len(base) + 1)]]
            if rng.random() < 0.3 and len(blocks) > 1:  # an edit inside the last kept block
                last = blocks[-1]
                cut = rng.randrange(len(last) + 1)
                blocks[-1] = last[:cut] + block(rng.randrange(0, 300))
                if not blocks[-1]:
                    blocks.pop()
        else:
            blocks = [list(head)] if rng.random() < 0.7 else []
        blocks += [block(rng.randrange(1, 900)) for _ in range(rng.randrange(0, 4))]
        if not blocks:
            blocks = [block(300)]
        prompts.append(blocks)
        step = rng.choice([0, 0, 1, 2, 5, 10, 20, 30, -20, -100])
        if rng.random() < 0.06:  # a pause past the TTLs
            step = rng.choice([310, 2000])
        clock = max(0.0, clock + step)
        params: dict = {}
        if keyed:
            params["prompt_cache_key"] = rng.choice(["a", "a", "a", "b"])
        if rng.random() < 0.3:
            params["prompt_cache_retention"] = "24h"
        if rng.random() < 0.03:
            params["reasoning_effort"] = "high"
        call = build.call(index, blocks, clock=clock, model="gpt-5", **params)
        if scaled:
            factor = rng.uniform(0.7, 1.3)
            call = replace(
                call,
                local_offsets=call.offsets,
                offsets=[round(o * factor) for o in call.offsets],
            )
        calls.append(call)
    retention = rng.choice([None, None, "24h", "in_memory"])
    return calls, retention, rng.choice([128, 128, 2048, 1])


@pytest.mark.parametrize("seed", range(300))
def test_the_index_finds_what_comparing_every_live_prompt_finds(seed: int) -> None:
    calls, retention, granularity = generated(seed)
    assert simulated(calls, retention, granularity) == reference(calls, retention, granularity)


def test_the_generated_sessions_reach_the_cases_that_matter() -> None:
    """Reads inside a block, ties, expiry and out-of-order clocks all occur."""
    STATS.clear()
    for seed in range(300):
        reference(*generated(seed))
    assert STATS["read"] > 1000, STATS
    assert STATS["tie"] > 200, STATS
    assert STATS["inside a block"] > 300, STATS
    assert STATS["expired"] > 2000, STATS
    assert STATS["not yet visible"] > 5000, STATS
    assert STATS["clipped by a shorter prompt"] > 300, STATS


def test_the_real_sessions_read_what_comparing_every_live_prompt_reads(realdata: Path) -> None:
    checked = 0
    for calls in real_sim_calls(realdata):
        if not calls:
            continue
        calls = [replace(c, model="gpt-5") for c in calls]  # the classic generation
        for retention in (None, "24h"):
            for granularity in (128, 2048):
                want = reference(calls, retention, granularity)
                assert simulated(calls, retention, granularity) == want
                checked += len(calls)
    assert checked > 1000


def test_a_block_of_the_same_tokens_but_other_bytes_is_not_the_longest_match() -> None:
    """Identical tokens under another hash share all but the last; a longer block wins."""
    tokens: dict[str, list[int]] = {}

    def request(index: int, blocks: list[tuple[str, list[int]]]) -> SimCall:
        tokens.update(blocks)
        chain, state = [], b""
        for name, _ in blocks:
            state = hashlib.sha256(state + name.encode()).digest()
            chain.append(state)
        return SimCall(
            index=index,
            thread="main",
            ts=None,
            model="gpt-5",
            hashes=[name for name, _ in blocks],
            chain=chain,
            offsets=[0, *accumulate(len(t) for _, t in blocks)],
            parts=["messages"] * len(blocks),
            roles=["user"] * len(blocks),
            tokens=lambda h: array("i", tokens[h]),
            breakpoints=[],
            auto_breakpoint=None,
            params={"prompt_cache_key": "k"},
            output_tokens=None,
            reported=None,
            clock=float(index),
        )

    head = ("head", list(range(1200)))
    body = list(range(5000, 5300))
    calls = [
        request(0, [head, ("longer", [*body, 7, 8, 9])]),
        request(1, [head, ("same tokens", body)]),
        request(2, [head, ("before", [4000])]),
        request(3, [head, ("call", body)]),
    ]
    want = reference(calls, None, 1)
    assert want[3] == (1500, 0)
    assert simulated(calls, None, 1) == want
