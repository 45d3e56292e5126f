"""SGLang simulator, rules the first mutation run found untested (providers.md §5.8, §7).

Expectations by hand from the spec (hit = min(LCP, len - 1) floored to ``page_size``; LRU
eviction of unlocked leaves, recursively, at the token capacity) and the module's
documented approximations (only the page-aligned prompt is inserted; a request larger than
the pool is served, then the tree is trimmed back to the capacity).
"""

import pytest
from engine_calls import call, hits, results, run

from cacheviz.providers.sglang import SGLangSimulator


def test_every_input_token_is_read_or_uncached():
    out = results(SGLangSimulator(), [[run(10)], [run(12)]])
    assert [r.input_tokens for r in out] == [10, 12]
    assert [r.cache_read_tokens for r in out] == [0, 10]
    assert [r.uncached_tokens for r in out] == [10, 2]
    assert [r.cache_write_tokens for r in out] == [0, 0]  # no write fee


def test_a_one_token_prompt_never_hits():
    # len - 1 = 0 tokens can come from the cache
    assert hits(SGLangSimulator(), [[run(1)], [run(1)]]) == [0, 0]


def test_an_empty_request_hits_nothing():
    out = results(SGLangSimulator(capacity_tokens=10), [[run(10)], [], [run(10), run(1, 50)]])
    assert [r.cache_read_tokens for r in out] == [0, 0, 10]
    assert out[1].input_tokens == 0


def test_a_repeated_branch_is_capped_at_len_minus_one():
    shared = run(6)
    a, b = [shared, run(4, 100)], [shared, run(4, 200)]
    # a again: 10 tokens in common, below the shared inner node too; capped at 9
    assert hits(SGLangSimulator(), [a, b, a]) == [0, 6, 9]


def test_a_prefix_of_a_cached_prompt_leaves_the_longer_one_cached():
    # run(5) matches 4 (len - 1); inserting it splits the cached run(10) after 5 tokens
    prompts = [[run(10)], [run(5)], [run(10)], [run(5), run(1, 100)]]
    assert hits(SGLangSimulator(), prompts) == [0, 4, 9, 5]


def test_a_branch_inside_a_page_caches_the_page_apart():
    sim = SGLangSimulator(page_size=2)
    b = [run(5), [99, 99, 99]]  # leaves run(8) inside the page of tokens 4-5
    prompts = [[run(8)], b, [*b, run(1, 500)], [run(8), run(1, 500)]]
    # b: 5 in common, floored to 4; then both 8-token prompts are whole pages in the tree
    assert hits(sim, prompts) == [0, 4, 8, 8]


def test_different_salts_never_share_and_the_same_salt_does():
    calls = [
        call(0, [run(10)], cache_salt="a"),
        call(1, [run(10)], cache_salt="b"),
        call(2, [run(10), run(1, 50)], cache_salt="a"),
    ]
    assert [r.cache_read_tokens for r in SGLangSimulator().run(calls)] == [0, 0, 10]


def test_eviction_goes_on_until_the_request_fits():
    a, b, c = [run(6)], [run(10, 100)], [run(10, 200)]
    # the pool holds a (6) + b (10) = 16; c needs 10: a alone is not enough, b goes too
    sim = SGLangSimulator(capacity_tokens=16)
    out = results(sim, [a, b, c])
    assert out[2].extra["evicted_tokens"] == 16
    assert out[2].detail.startswith("0 of 10 tokens matched")
    assert "16 evicted" in out[2].detail
    assert hits(sim, [a, b, c, [*b, run(1)]]) == [0, 0, 0, 0]


def test_the_matched_path_is_locked_while_the_request_runs():
    a = [run(10)]
    # a + w does not fit even with every unlocked leaf gone: the matched a is kept, the
    # request is served past the pool, and the trim takes w alone
    sim = SGLangSimulator(capacity_tokens=15)
    out = results(sim, [a, [*a, run(10, 500)]])
    assert out[1].cache_read_tokens == 10
    assert out[1].extra["evicted_tokens"] == 10
    assert hits(sim, [a, [*a, run(10, 500)], [*a, run(1, 900)]]) == [0, 10, 10]


def test_a_split_prompt_loses_the_tail_only_the_longer_one_used():
    # run(5) fits (it needs 1 more token) and splits the cached run(10) after 5 tokens; an
    # unrelated prompt then evicts the least recently used leaf, tokens 5-9: what run(5)
    # shares with run(10) stays
    sim = SGLangSimulator(capacity_tokens=11)
    assert hits(sim, [[run(10)], [run(5)], [run(5, 100)], [run(10)]]) == [0, 4, 0, 5]


def test_a_matched_inner_node_outlives_its_evicted_children():
    x, y = run(10), run(5, 100)
    # x -> y fills the pool; x + w matches x (locked), evicts y, is served past the pool,
    # and the trim takes w, never x
    sim = SGLangSimulator(capacity_tokens=15)
    assert hits(sim, [[x], [x, y], [x, run(10, 500)], [x, run(1, 900)]]) == [0, 10, 10, 10]


def test_an_inner_node_is_evicted_only_once_it_is_a_leaf():
    shared = run(6)
    a, b = [shared, run(4, 100)], [shared, run(4, 200)]
    # c needs 8 of the 14 tokens: the leaves a and b go, the shared prefix stays
    sim = SGLangSimulator(capacity_tokens=14)
    assert hits(sim, [a, b, [run(8, 300)], [shared, run(1, 900)]]) == [0, 6, 0, 6]


def test_a_parent_left_childless_is_evicted_in_lru_order():
    x, y, z = run(10), run(5, 100), run(5, 200)
    # x -> y (last used at call 1), then z (call 2): q needs 15 of the 20 tokens; y goes,
    # then x (now a leaf, older than z), and z stays
    sim = SGLangSimulator(capacity_tokens=20)
    prompts = [[x], [x, y], [z], [run(15, 300)], [z, run(1, 900)]]
    assert hits(sim, prompts) == [0, 10, 0, 0, 5]


def test_the_whole_tree_can_be_recycled():
    shared = run(6)
    a, b, c = [shared, run(4, 100)], [shared, run(4, 200)], [run(14, 300)]
    sim = SGLangSimulator(capacity_tokens=14)
    out = results(sim, [a, b, c])
    assert out[2].extra["evicted_tokens"] == 14  # a, b, then the shared node
    assert hits(sim, [a, b, c, [*c, run(1, 900)]]) == [0, 6, 0, 14]


def test_a_request_larger_than_the_pool_is_trimmed_back():
    sim = SGLangSimulator(capacity_tokens=10)
    out = results(sim, [[run(15)], [run(15), run(1, 50)]])
    assert [r.cache_read_tokens for r in out] == [0, 0]
    assert out[0].extra["evicted_tokens"] == 15
    assert "15 evicted" in out[0].detail


def test_a_pool_of_one_token_is_valid():
    assert hits(SGLangSimulator(capacity_tokens=1), [[run(5)], [run(5)]]) == [0, 0]
    with pytest.raises(ValueError, match="capacity_tokens must be at least 1"):
        SGLangSimulator(capacity_tokens=0)
    with pytest.raises(ValueError, match="page_size must be at least 1"):
        SGLangSimulator(page_size=0)
