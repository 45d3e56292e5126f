"""vLLM simulator, rules the first mutation run found untested (providers.md §5.7, §7).

Expectations by hand from the spec (16-token chain-hashed blocks, hit capped at
``floor((len - 1) / 16) * 16``, an LRU free queue where a finished request's tail blocks go
first) and the module's documented approximations (a recomputed block replaces its older
copy; a request larger than the pool caches only the blocks it could allocate).
"""

from array import array
from dataclasses import replace

import pytest
from engine_calls import call, hits, results, run

from cacheviz.providers.vllm import VLLMSimulator, prompt_tokens


def test_prompt_tokens_from_any_token_on():
    c = call(0, [run(10), run(10, 10), run(5, 20)])
    assert prompt_tokens(c) == array("i", range(25))
    assert prompt_tokens(c, 1) == array("i", range(1, 25))
    assert prompt_tokens(c, 16) == array("i", range(16, 25))  # inside the second segment
    assert prompt_tokens(c, 20) == array("i", range(20, 25))  # at a segment boundary
    assert prompt_tokens(call(1, [])) == array("i")


def test_prompt_tokens_join_blocks_of_any_integer_typecode():
    c = call(0, [run(3), run(3, 3)])
    short = {h: array("H", c.tokens(h)) for h in c.hashes[1:]}
    mixed = replace(c, tokens=lambda h: short.get(h) or c.tokens(h))
    assert prompt_tokens(mixed).tolist() == list(range(6))


def test_every_input_token_is_read_or_uncached():
    out = results(VLLMSimulator(), [[run(40)], [run(40), run(2, 100)]])
    assert [r.input_tokens for r in out] == [40, 42]
    assert [r.cache_read_tokens for r in out] == [0, 32]
    assert [r.uncached_tokens for r in out] == [40, 10]
    assert [r.cache_write_tokens for r in out] == [0, 0]  # no write fee


def test_a_one_block_prompt_repeated_hits_nothing():
    # floor((16 - 1) / 16) * 16 = 0: the only block is recomputed
    assert hits(VLLMSimulator(), [[run(16)], [run(16)]]) == [0, 0]
    assert hits(VLLMSimulator(), [[run(16)], [run(17)]]) == [0, 16]


def test_blocks_straddling_segments_hash_by_their_tokens_across_requests():
    # the second request shares two segments (20 tokens) with the first; its block 1
    # (tokens 16-31) straddles the shared and the new segments and is still the same block
    first = [run(10), run(10, 10), run(28, 20)]
    second = [run(10), run(10, 10), run(12, 20), run(17, 500)]
    out = results(VLLMSimulator(), [first, second])
    assert [r.cache_read_tokens for r in out] == [0, 32]
    assert out[1].detail == "2 of 3 full block(s) hit"


def test_different_salts_never_share_and_the_same_salt_does():
    calls = [
        call(0, [run(32)], cache_salt="a"),
        call(1, [run(32)], cache_salt="b"),
        call(2, [run(32), run(1)], cache_salt="a"),
    ]
    assert [r.cache_read_tokens for r in VLLMSimulator().run(calls)] == [0, 0, 32]


def test_a_full_match_says_its_last_block_is_recomputed():
    out = results(VLLMSimulator(), [[run(48)], [run(48)]])
    assert out[1].cache_read_tokens == 32
    assert out[1].detail.startswith("2 of 3 full block(s) hit")
    assert "last block recomputed" in out[1].detail


def test_a_hit_allocates_only_the_blocks_it_does_not_hold():
    a, b = [run(32)], [run(16, 1000)]
    # a + 1 token reuses its two blocks and takes the last free one: b is not evicted
    sim = VLLMSimulator(capacity_blocks=4)
    out = results(sim, [a, b, [*a, run(1)]])
    assert out[2].extra["evicted_blocks"] == 0
    assert hits(sim, [a, b, [*a, run(1)], [*b, run(1)]]) == [0, 0, 32, 16]


def test_a_recomputed_block_replaces_its_older_copy():
    a, b = [run(48)], [run(48, 1000)]
    # a again recomputes block 2: the new copy is kept and the old one freed, so b takes
    # the two free blocks and evicts only a's block 2 (the head of the queue)
    sim = VLLMSimulator(capacity_blocks=5)
    out = results(sim, [a, a, b])
    assert out[2].extra["evicted_blocks"] == 1
    assert "1 evicted" in out[2].detail
    assert out[2].detail.startswith("0 of 3 full block(s) hit")
    assert hits(sim, [a, a, b, [run(48), run(1)]]) == [0, 32, 0, 32]


def test_requests_shorter_than_a_block_give_their_block_back():
    s, a, b = [run(5, 900)], [run(48)], [run(16, 5000)]
    # s takes one block and frees it empty: a takes the 2 fresh and that one, then b
    # evicts a's tail block
    assert hits(VLLMSimulator(capacity_blocks=3), [s, a, b, [run(48), run(1)]]) == [0, 0, 0, 32]


def test_an_empty_request_takes_no_block():
    a = [run(32)]
    sim = VLLMSimulator(capacity_blocks=2)
    out = results(sim, [a, [], [*a, run(1)]])
    assert [r.cache_read_tokens for r in out] == [0, 0, 32]
    assert out[1].input_tokens == 0
    assert out[1].extra["evicted_blocks"] == 0


def test_a_request_larger_than_the_pool_caches_what_it_could_allocate():
    sim = VLLMSimulator(capacity_blocks=2)
    out = results(sim, [[run(64)], [run(64), run(1)]])
    assert [r.cache_read_tokens for r in out] == [0, 32]  # blocks 0 and 1 only
    assert out[0].detail.startswith("0 of 4 full block(s) hit")
    assert "2 block(s) beyond the pool" in out[0].detail


def test_blocks_of_one_token_and_a_pool_of_one_block_are_valid():
    assert hits(VLLMSimulator(block_size=1), [[run(10)], [run(10)]]) == [0, 9]
    assert hits(VLLMSimulator(capacity_blocks=1), [[run(16)], [run(17)]]) == [0, 16]
    with pytest.raises(ValueError, match="capacity_blocks must be at least 1"):
        VLLMSimulator(capacity_blocks=0)
    with pytest.raises(ValueError, match="block_size must be at least 1"):
        VLLMSimulator(block_size=0)
