"""SGLang simulator: one test per rule of providers.md §5.8 / §7, expectations by hand."""

import pytest
from engine_calls import call, hits, run

from cacheviz.providers.sglang import SGLangSimulator


def test_matches_are_token_exact_with_pages_of_one():
    # 7 tokens in common, inside the second segment
    assert hits(SGLangSimulator(), [[run(5), run(5, 5)], [run(7), run(3, 100)]]) == [0, 7]


def test_a_full_match_recomputes_the_last_token():
    assert hits(SGLangSimulator(), [[run(10)], [run(10)]]) == [0, 9]
    assert hits(SGLangSimulator(), [[run(10)], [run(11)]]) == [0, 10]


def test_matches_are_floored_to_whole_pages():
    sim = SGLangSimulator(page_size=4)
    # 7 tokens in common -> 4
    assert hits(sim, [[run(10)], [run(7), run(5, 100)]]) == [0, 4]
    # only the page-aligned 8 of 10 tokens were inserted; min(8, 9) -> 8
    assert hits(sim, [[run(10)], [run(10)]]) == [0, 8]
    # 12 tokens in common, capped at len - 1 = 11, floored to 8
    assert hits(sim, [[run(12)], [run(12)]]) == [0, 8]


def test_branches_share_their_common_prefix():
    prompts = [
        [run(6), run(4, 100)],
        [run(6), run(4, 200)],
        [run(6), run(4, 300)],
        [run(6), run(4, 200), run(1)],
    ]
    assert hits(SGLangSimulator(), prompts) == [0, 6, 6, 10]


def test_cache_salt_and_model_separate_trees():
    calls = [
        call(0, [run(10)]),
        call(1, [run(10)], cache_salt="b"),
        call(2, [run(10)], model="other"),
    ]
    assert [r.cache_read_tokens for r in SGLangSimulator().run(calls)] == [0, 0, 0]


def test_least_recently_used_leaves_are_evicted_at_capacity():
    a, b, c = [run(10)], [run(10, 100)], [run(10, 200)]
    sim = SGLangSimulator(capacity_tokens=20)
    # a and b fill the pool; c needs 10 tokens: a, the least recently used leaf, goes
    assert hits(sim, [a, b, c, [*b, run(1)]]) == [0, 0, 0, 10]
    assert hits(sim, [a, b, c, [*a, run(1)]]) == [0, 0, 0, 0]
    results = sim.run([call(i, p) for i, p in enumerate([a, b, c])])
    assert results[2].extra["evicted_tokens"] == 10


def test_a_hit_refreshes_its_path():
    a, b, c = [run(10)], [run(10, 100)], [run(10, 200)]
    # a reused after b: b is now the least recently used leaf and is evicted for c
    prompts = [a, b, a, c, [*a, run(1)], [*b, run(1)]]
    assert hits(SGLangSimulator(capacity_tokens=21), prompts) == [0, 0, 9, 0, 10, 0]


def test_only_leaves_are_evicted_and_the_matched_path_is_locked():
    shared = run(6)
    a, b, c = [shared, run(4, 100)], [shared, run(4, 200)], [shared, run(4, 300)]
    # tree: shared(6) -> a(4), b(4) = 14 tokens. c matches shared (locked) and needs 4 more:
    # leaf a (least recently used) is evicted, never the shared inner node
    sim = SGLangSimulator(capacity_tokens=14)
    assert hits(sim, [a, b, c, [shared, run(4, 100), run(1)]]) == [0, 6, 6, 6]
    assert hits(sim, [a, b, c, [shared, run(4, 200), run(1)]]) == [0, 6, 6, 10]


def test_output_tokens_need_room_while_the_request_runs():
    x, a = [run(10, 500)], [run(10)]

    def reads_with(output):
        calls = [call(0, x), call(1, a, output_tokens=output), call(2, [*x, run(1)])]
        return [r.cache_read_tokens for r in SGLangSimulator(capacity_tokens=25).run(calls)]

    assert reads_with(None) == [0, 0, 10]
    assert reads_with(10) == [0, 0, 0]  # a (10) + its output (10) + x (10) > 25: x goes


def test_invalid_sizes_are_refused():
    with pytest.raises(ValueError, match="page_size"):
        SGLangSimulator(page_size=0)
