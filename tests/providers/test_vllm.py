"""vLLM simulator: one test per rule of providers.md §5.7 / §7, expectations by hand."""

import pytest
from engine_calls import call, hits, run

from cacheviz.providers.vllm import VLLMSimulator


def test_hits_come_in_whole_16_token_blocks():
    # 40 tokens in common: blocks 0 and 1 (32 tokens) hit, block 2 differs at token 40
    first = [run(40), run(8, 100)]
    second = [run(40), run(10, 200)]
    assert hits(VLLMSimulator(), [first, second]) == [0, 32]


def test_block_boundaries_ignore_segment_boundaries():
    # the same 48 tokens cut into segments differently hash to the same blocks
    assert hits(VLLMSimulator(), [[run(10), run(38, 10)], [run(30), run(18, 30), run(5, 500)]]) == [
        0,
        48,
    ]


def test_a_full_match_recomputes_the_last_block():
    prompt = [run(48)]
    # floor((48 - 1) / 16) * 16 = 32: the last block is recomputed for the logits
    assert hits(VLLMSimulator(), [prompt, prompt]) == [0, 32]
    # one more token and the three blocks all count
    assert hits(VLLMSimulator(), [prompt, [run(49)]]) == [0, 48]


def test_the_partial_last_block_is_not_cached():
    # 40 tokens leave blocks 0, 1 and a partial block; the next request can reuse 32
    assert hits(VLLMSimulator(), [[run(40)], [run(60)]]) == [0, 32]


def test_the_chain_hash_needs_every_earlier_block():
    # block 1 has the same tokens but a different parent: no hit past block 0
    assert hits(VLLMSimulator(), [[run(32)], [run(16, 900), run(16, 16), run(1)]]) == [0, 0]


def test_cache_salt_and_model_separate_caches():
    prompt = [run(48)]
    calls = [
        call(0, prompt),
        call(1, prompt, cache_salt="tenant-b"),
        call(2, prompt, model="other"),
    ]
    assert [r.cache_read_tokens for r in VLLMSimulator().run(calls)] == [0, 0, 0]


def test_least_recently_used_blocks_are_evicted_at_capacity():
    a, b, c = [run(32)], [run(32, 1000)], [run(32, 2000)]
    sim = VLLMSimulator(capacity_blocks=4)
    # a and b fill the pool; c evicts a's two blocks; b is still there
    assert hits(sim, [a, b, c, [*b, run(1)]]) == [0, 0, 0, 32]
    assert hits(sim, [a, b, c, [*a, run(1)]]) == [0, 0, 0, 0]
    results = sim.run([call(i, p) for i, p in enumerate([a, b, c])])
    assert results[2].extra["evicted_blocks"] == 2


def test_a_finished_request_loses_its_tail_blocks_first():
    a, b, c = [run(32)], [run(32, 1000)], [run(32, 2000)]
    # 5 blocks: c takes the last never-used block and evicts one of a's: its tail (block 1)
    assert hits(VLLMSimulator(capacity_blocks=5), [a, b, c, [run(48)]]) == [0, 0, 0, 16]


def test_a_hit_protects_and_refreshes_its_blocks():
    a, b, c = [run(32)], [run(32, 1000)], [run(32, 2000)]
    # a is reused after b, so b's blocks are the least recently used: the reuse's partial
    # block and c evict them instead of a's
    prompts = [a, b, [*a, run(1)], c, [*a, run(1)]]
    assert hits(VLLMSimulator(capacity_blocks=4), prompts) == [0, 0, 32, 0, 32]


def test_output_blocks_take_room_while_the_request_runs():
    x, a = [run(32, 5000)], [run(32)]

    def reads_with(output):
        calls = [call(0, x), call(1, a, output_tokens=output), call(2, [*x, run(1)])]
        return [r.cache_read_tokens for r in VLLMSimulator(capacity_blocks=4).run(calls)]

    assert reads_with(None) == [0, 0, 32]
    assert reads_with(32) == [0, 0, 0]  # a's two output blocks evicted x's blocks


def test_invalid_sizes_are_refused():
    with pytest.raises(ValueError, match="block_size"):
        VLLMSimulator(block_size=0)
