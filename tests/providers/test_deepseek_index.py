"""The indexed DeepSeek unit search against a brute-force reference (providers.md §3, §7).

The reference below keeps every unit, with the tokens it covers inside its last block, in
one list per chain of whole blocks before it, and looks at all of them on every call: for
each block boundary of the call, from the last, every unit filed after those whole blocks
(the expired ones among them are gone for good, as the simulator's search drops them), and the longest visible one that is a complete prefix of the prompt wins
and is refreshed. The pending outputs are likewise one list, every one checked on every
call. The common-prefix length is :class:`cacheviz.providers._cache.LivePrompts`'s (not
changed by the index; it has its own reference in ``test_token_scale.py``). The simulator
must give the same read and the same detail (the unit's kind and writer, the common
prefix persisted) on every call.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sim_sessions import real_sim_calls

from cacheviz.providers._base import HandBuilt, SimCall
from cacheviz.providers._cache import LivePrompts
from cacheviz.providers.deepseek import DeepSeekSimulator

OUTPUT_ROLES = ("assistant", "model")


@dataclass
class Unit:
    parent: bytes  # chain digest of the whole blocks before it (b"": none)
    r: int  # its tokens into the next block (0: it ends at a block boundary)
    tokens: tuple[int, ...]  # those tokens (as the block's token array holds them)
    length: int
    kind: str
    writer: int
    expires_at: float
    visible_at: float
    gone: str = ""  # why it is no longer stored: expired (seen so by a search), replaced


@dataclass
class Pending:
    key: bytes
    blocks: int
    tokens: int | None
    clock: float
    build: float
    index: int


STATS: dict[str, int] = {}


def count(what: str, n: int = 1) -> None:
    STATS[what] = STATS.get(what, 0) + n


def identity(call: SimCall, length: int) -> tuple[bytes, int, tuple[int, ...]]:
    """The first ``length`` tokens of ``call`` as (whole blocks before, r, their tokens)."""
    j = bisect.bisect_left(call.offsets, length)
    if j < len(call.offsets) and call.offsets[j] == length:
        return (call.chain[j - 1] if j else b""), 0, ()
    j -= 1
    r = length - call.offsets[j]
    return (call.chain[j - 1] if j else b""), r, tuple(call.tokens(call.hashes[j])[:r])


class Reference:
    """One model's units and pending outputs, every one looked at on every call."""

    def __init__(self, rules: DeepSeekSimulator) -> None:
        self.rules = rules
        self.units: dict[bytes, list[Unit]] = {}  # by the whole blocks before them
        self.pending: list[Pending] = []
        self.prompts = LivePrompts(rules.expiry_seconds)

    def persist(self, call, length, written, build, kind, writer) -> None:
        if length <= 0:
            return
        parent, r, tokens = identity(call, length)
        ttl = self.rules.expiry_seconds
        filed = self.units.setdefault(parent, [])
        for unit in filed:
            if unit.gone or (unit.r, unit.tokens) != (r, tokens):
                continue
            if unit.expires_at > written:
                count("re-persisted")
                unit.expires_at = max(unit.expires_at, written + ttl)
                unit.visible_at = min(unit.visible_at, written + build)
                return
            count("replaced after expiry")
            unit.gone = "replaced"
        filed.append(Unit(parent, r, tokens, length, kind, writer, written + ttl, written + build))

    def longest(self, call: SimCall, now: float) -> tuple[int, str, int]:
        n = len(call.hashes)
        for j in range(n, -1, -1):
            parent = call.chain[j - 1] if j else b""
            everything = self.units.get(parent, [])
            filed = [u for u in everything if not u.gone]
            gone = (u for u in everything if u.gone == "expired")
            count(
                "expired at a later clock, live at this one", any(u.expires_at > now for u in gone)
            )
            for unit in filed:
                if unit.expires_at <= now:
                    count("expired")
                    unit.gone = "expired"
            usable = []
            for unit in filed:
                if unit.gone:
                    continue
                if unit.r:
                    if j == n or unit.r > call.offsets[j + 1] - call.offsets[j]:
                        continue
                    if tuple(call.tokens(call.hashes[j])[: unit.r]) != unit.tokens:
                        continue
                if unit.visible_at > now:
                    count("matching but not visible yet")
                    continue
                usable.append(unit)
            if usable:
                best = max(usable, key=lambda u: u.r)
                best.expires_at = now + self.rules.expiry_seconds
                count("inside a block", best.r > 0)
                return call.offsets[j] + best.r, best.kind, best.writer
        return 0, "", -1

    def outputs(self, call: SimCall, now: float) -> None:
        rules = self.rules
        n = len(call.hashes)
        for pending in sorted(self.pending, key=lambda p: p.blocks):
            if pending.clock + rules.expiry_seconds <= now:
                count("pending expired")
                self.pending.remove(pending)
                continue
            j = pending.blocks
            if not 0 < j < n or call.chain[j - 1] != pending.key:
                continue
            if call.roles[j] not in OUTPUT_ROLES:
                continue
            self.pending.remove(pending)
            end = j
            while end < n and call.roles[end] in OUTPUT_ROLES:
                end += 1
            start, run = call.offsets[j], call.offsets[end] - call.offsets[j]
            out = run if pending.tokens is None else pending.tokens
            if out <= 0 or out > run + max(8, math.ceil(rules.output_slack * run)):
                count("output not re-sent as generated")
                continue
            count("output materialised")
            length = start + min(out, run)
            at = (pending.clock, pending.build)
            self.persist(call, length, *at, "prompt+output", pending.index)
            cut = (start // rules.interval_tokens + 1) * rules.interval_tokens
            while cut < length:
                self.persist(call, cut, *at, "interval", pending.index)
                cut += rules.interval_tokens

    def step(self, call: SimCall) -> tuple[int, str]:
        rules, now = self.rules, call.clock
        build = 0.0 if call.ts is None else rules.build_seconds
        self.outputs(call, now)
        hit, kind, writer = self.longest(call, now)
        if hit:
            count(f"hit {kind}")
        detail = f"hit the {kind} unit of call #{writer}" if hit else "no unit is a prefix"
        shared = self.prompts.common(call, now, visible=False)
        if hit < shared < call.total:
            self.persist(call, shared, now, build, "common-prefix", call.index)
            detail += f"; common prefix {shared} persisted"
        self.persist(call, call.total, now, build, "prompt", call.index)
        for length in range(rules.interval_tokens, call.total, rules.interval_tokens):
            self.persist(call, length, now, build, "interval", call.index)
        if call.hashes and call.output_tokens != 0:
            key = call.chain[-1]
            self.pending = [p for p in self.pending if p.key != key]
            self.pending.append(
                Pending(key, len(call.hashes), call.output_tokens, now, build, call.index)
            )
        self.prompts.record(call, now, build)
        return hit, detail


def reference(calls: list[SimCall], rules: DeepSeekSimulator) -> list[tuple[int, str]]:
    models: dict[str, Reference] = {}
    out = []
    for call in calls:
        model = models.get(call.model)
        if model is None:
            model = models[call.model] = Reference(rules)
        out.append(model.step(call))
    return out


def simulated(calls: list[SimCall], rules: DeepSeekSimulator) -> list[tuple[int, str]]:
    return [(r.cache_read_tokens, r.detail) for r in rules.run(calls)]


def generated(seed: int) -> tuple[list[SimCall], DeepSeekSimulator]:
    """A random tree of conversations: earlier prompts cut, edited, answered and extended."""
    rng = random.Random(seed)
    build = HandBuilt()
    alphabet = rng.choice([2, 5, 1000])  # few token ids: units sharing their first tokens
    interval = rng.choice([16, 50, 128, 4096])
    rules = DeepSeekSimulator(
        interval_tokens=interval,
        expiry_seconds=rng.choice([10.0, 30.0, 120.0, 21600.0]),
        build_seconds=rng.choice([0.0, 5.0, 5.0]),
    )
    timed = rng.random() < 0.7  # a timestamp: the build delay applies
    scaled = rng.random() < 0.25  # calibrated offsets: sizes scaled per call
    models = ["deepseek-chat"] if rng.random() < 0.8 else ["deepseek-chat", "deepseek-reasoner"]
    head = [rng.randrange(alphabet) for _ in range(rng.choice([5, 40, 130]))]

    def block(n: int) -> list[int]:
        return [rng.randrange(alphabet) for _ in range(n)]

    prompts: list[tuple[list[list[int]], list[str | None]]] = []
    calls: list[SimCall] = []
    clock = 0.0
    for index in range(rng.randrange(15, 45)):
        if prompts and rng.random() < 0.85:
            base_blocks, base_roles = rng.choice(prompts[-6:] if rng.random() < 0.7 else prompts)
            keep = rng.randrange(1, len(base_blocks) + 1)
            blocks = [list(b) for b in base_blocks[:keep]]
            roles = list(base_roles[:keep])
            if rng.random() < 0.25 and len(blocks) > 1:  # an edit inside the last kept block
                last = blocks[-1]
                cut = rng.randrange(len(last) + 1)
                blocks[-1] = last[:cut] + block(rng.randrange(0, 40))
                if not blocks[-1]:
                    blocks.pop()
                    roles.pop()
        else:
            blocks, roles = ([list(head)], [None]) if rng.random() < 0.7 else ([], [])
        for _ in range(rng.randrange(0 if blocks else 1, 4)):
            role = rng.choice(["user", "user", "assistant", "assistant", "model"])
            blocks.append(block(rng.choice([0, 1, 3, 10, 20, 60, 150])))
            roles.append(role)
        prompts.append((blocks, roles))
        step = rng.choice([0, 0, 1, 2, 3, 5, 8, 20, -3, -12, -30])
        if rng.random() < 0.06:  # a pause past the expiry
            step = rng.choice([200, 30000])
        elif rng.random() < 0.05:  # exactly the expiry after the last call (a boundary)
            step = rules.expiry_seconds
        clock = max(0.0, clock + step)
        output = rng.choice([None, 0, 0, 5, 12, 30, 60, 150, 400])
        call = build.call(
            index, blocks, clock=clock, model=rng.choice(models), roles=roles, output_tokens=output
        )
        if timed:
            call = replace(call, ts=datetime.fromtimestamp(1.7e9 + clock, UTC))
        if scaled:
            factor = rng.uniform(0.7, 1.3)
            call = replace(
                call,
                local_offsets=call.offsets,
                offsets=[round(o * factor) for o in call.offsets],
            )
        calls.append(call)
    return calls, rules


@pytest.mark.parametrize("seed", range(300))
def test_the_index_finds_what_looking_at_every_unit_finds(seed: int) -> None:
    calls, rules = generated(seed)
    assert simulated(calls, rules) == reference(calls, rules)


def test_the_generated_sessions_reach_the_cases_that_matter() -> None:
    """Every kind of unit hits, inside blocks too; units expire, are re-persisted, replaced."""
    STATS.clear()
    for seed in range(300):
        reference(*generated(seed))
    for what, least in {
        "hit prompt": 300,
        "hit prompt+output": 100,
        "hit interval": 100,
        "hit common-prefix": 100,
        "inside a block": 300,
        "expired": 300,
        "re-persisted": 300,
        "replaced after expiry": 5,
        "expired at a later clock, live at this one": 100,
        "matching but not visible yet": 100,
        "pending expired": 100,
        "output materialised": 100,
        "output not re-sent as generated": 30,
    }.items():
        assert STATS.get(what, 0) >= least, (what, STATS)


def test_the_real_sessions_read_what_looking_at_every_unit_reads(realdata: Path) -> None:
    checked = 0
    for calls in real_sim_calls(realdata):
        if not calls:
            continue
        for interval in (4096, 2048):
            rules = DeepSeekSimulator(interval_tokens=interval)
            assert simulated(calls, rules) == reference(calls, rules)
            checked += len(calls)
    assert checked > 1000
