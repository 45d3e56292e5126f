"""Simulation proportional to new blocks, checked against eager oracles."""

import hashlib
import random
from collections import OrderedDict
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheviz._util.seq import differing_block_common
from cacheviz.providers._base import HandBuilt
from cacheviz.providers._cache import MAX_SIBLINGS, LivePrompts
from cacheviz.providers.deepseek import DeepSeekSimulator, PrefixDigests, token_digest


class NaiveLivePrompts:
    """The oracle: every prompt refreshes every edge of its path, eagerly (O(length))."""

    def __init__(self, ttl):
        self.ttl = ttl
        self.edges = OrderedDict()  # (parent, hash) -> [expires_at, visible_at]
        self.children = {}

    def _usable(self, parent, h, now, visible):
        expires, shown = self.edges[(parent, h)]
        if expires <= now:
            del self.edges[(parent, h)]
            del self.children[parent][h]
            return False
        return not visible or shown <= now

    def common(self, call, now, visible=True):
        parent = b""
        for j, h in enumerate(call.hashes):
            kids = self.children.get(parent)
            if not kids:
                return call.offsets[j]
            if h in kids and self._usable(parent, h, now, visible):
                parent = call.chain[j]
                continue
            best = 0
            for other in list(islice(reversed(kids), MAX_SIBLINGS)):
                if self._usable(parent, other, now, visible):
                    best = max(best, differing_block_common(call.tokens(h), call.tokens(other)))
            return call.offsets[j] + best
        return call.total

    def record(self, call, now, build):
        parent = b""
        for j, h in enumerate(call.hashes):
            kids = self.children.setdefault(parent, {})
            edge = self.edges.get((parent, h))
            if edge is not None and edge[0] > now:
                edge[0] = now + self.ttl
            else:
                self.edges[(parent, h)] = [now + self.ttl, now + build]
                kids[h] = True
            parent = call.chain[j]


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.integers(0, 3),  # which thread
            st.integers(0, 2),  # 0: append, 1: edit a block, 2: restart the thread
            st.sampled_from([1.0, 30.0, 60.0, 200.0]),  # seconds since the previous call
            st.sampled_from([0.0, 5.0, 50.0]),  # build time
            st.booleans(),  # query visible-only
        ),
        min_size=1,
        max_size=40,
    ),
    seed=st.integers(0, 10**6),
)
def test_the_lazy_trie_answers_as_the_eager_one(steps, seed):
    rng = random.Random(seed)
    build = HandBuilt()
    shared = [[1, 2, 3, 4], [5, 6, 7]]
    threads = {}
    lazy, eager = LivePrompts(100.0), NaiveLivePrompts(100.0)
    clock = 0.0
    for index, (thread, action, gap, build_time, visible) in enumerate(steps):
        blocks = threads.get(thread, list(shared))
        if action == 0 or len(blocks) <= 2:
            blocks = [*blocks, [rng.randint(10, 60) for _ in range(rng.randint(1, 5))]]
        elif action == 1:
            at = rng.randrange(len(blocks))  # keep part of the block: a token-exact overlap
            edited = [*blocks[at][: rng.randint(0, len(blocks[at]))], rng.randint(10, 60)]
            blocks = [*blocks[:at], edited, *blocks[at + 1 :]]
        else:
            blocks = list(shared)
        threads[thread] = blocks
        clock += gap
        call = build.call(index, blocks, clock=clock)
        assert lazy.common(call, clock, visible=visible) == eager.common(call, clock, visible)
        assert lazy.common(call, clock, visible=False) == eager.common(call, clock, False)
        lazy.record(call, clock, build_time)
        eager.record(call, clock, build_time)


def test_prefix_digests_equal_one_shot_digests_in_any_order():
    from array import array

    tokens = array("i", range(50_000))
    digests = PrefixDigests()
    for r in [4096, 8192, 100, 49_999, 12_288, 1, 50_000]:
        assert digests.prefix("b", tokens, r) == token_digest(tokens[:r])


def _one_block_session(tokens):
    build = HandBuilt()
    block = list(range(tokens))
    return [
        build.call(0, [block], output_tokens=10),
        build.call(1, [block, [7] * 20], output_tokens=10),
    ]


def test_deepseek_hashes_a_huge_block_once_per_interval_pass(monkeypatch):
    """Digest work grows linearly with a single block's size (it was quadratic)."""
    hashed = []
    real = hashlib.blake2b

    class Counting:
        def __init__(self, data=b"", **kwargs):
            hashed.append(len(data))
            self.inner = real(data, **kwargs)

        def update(self, data):
            hashed.append(len(data))
            self.inner.update(data)

        def copy(self):
            twin = Counting.__new__(Counting)
            twin.inner = self.inner.copy()
            return twin

        def digest(self):
            return self.inner.digest()

    monkeypatch.setattr(hashlib, "blake2b", Counting)
    sizes = {}
    for tokens in (200_000, 400_000):
        hashed.clear()
        results = DeepSeekSimulator(interval_tokens=4096).run(_one_block_session(tokens))
        assert results[1].cache_read_tokens >= tokens  # the re-sent block hits
        sizes[tokens] = sum(hashed)
    assert 0 < sizes[400_000] <= 2.2 * sizes[200_000]  # linear, not 4x


@pytest.mark.parametrize("tokens", [4096 * 3, 4096 * 3 + 5])
def test_deepseek_interval_units_inside_one_block_still_hit(tokens):
    build = HandBuilt()
    block = list(range(tokens))
    calls = [
        build.call(0, [block], clock=0.0, output_tokens=0),
        build.call(1, [block[: 4096 * 2 + 7], [99] * 50], clock=100.0, output_tokens=0),
    ]
    results = DeepSeekSimulator(build_seconds=0).run(calls)
    assert results[1].cache_read_tokens == 4096 * 2  # the longest interval unit inside


def _growing(n):
    build = HandBuilt()
    blocks = [[1] * 50, [2] * 50]
    calls = []
    for i in range(n):
        blocks = [*blocks, [i % 97 + 3] * 5]
        calls.append(build.call(i, blocks, clock=float(i), output_tokens=5))
    return calls


@pytest.mark.parametrize("provider", ["gemini", "deepseek"])
def test_a_growing_thread_costs_work_in_proportion_to_new_blocks(provider, monkeypatch):
    from cacheviz.money._simulate import make_simulator
    from cacheviz.providers import _cache

    steps = []
    touch, put = _cache.EntryStore.touch, _cache.EntryStore.put
    monkeypatch.setattr(
        _cache.EntryStore, "touch", lambda *a, **k: steps.append(1) or touch(*a, **k)
    )
    monkeypatch.setattr(_cache.EntryStore, "put", lambda *a, **k: steps.append(1) or put(*a, **k))

    class Nodes(dict):  # the trie's nodes: one lookup per block step of LivePrompts
        def get(self, *args):
            steps.append(1)
            return super().get(*args)

    init = _cache.LivePrompts.__init__

    def counted(self, ttl):
        init(self, ttl)
        self._children = Nodes()

    monkeypatch.setattr(_cache.LivePrompts, "__init__", counted)
    work = {}
    for n in (100, 200):
        steps.clear()
        make_simulator(provider).run(_growing(n))
        work[n] = len(steps)
    assert work[100] > 100  # every call takes steps
    assert work[200] <= 2.5 * work[100]  # linear (it was ~4x: every block of every call)


def test_sim_calls_reads_each_new_block_once(write_log, monkeypatch):
    import cacheviz
    from cacheviz.money import _simulate as simulate

    seen = []
    real = simulate._role
    monkeypatch.setattr(simulate, "_role", lambda label: seen.append(label) or real(label))
    counts = {}
    for n in (20, 40):
        messages, bodies = [], []
        for i in range(n):
            messages = [*messages, {"role": "user", "content": f"step {i}"}]
            bodies.append({"model": "gpt-4o", "messages": messages})
            messages = [*messages, {"role": "assistant", "content": f"done {i}"}]
        analysis = cacheviz.load(
            write_log(bodies, name=f"g{n}.jsonl", provider="openai", api="chat.completions")
        ).analyze()
        seen.clear()
        simulate.sim_calls(analysis)
        counts[n] = len(seen)
    assert counts[40] <= 2.5 * counts[20]
