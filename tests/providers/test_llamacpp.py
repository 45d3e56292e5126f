"""llama.cpp simulator: one test per rule of llama-server's slots, expectations by hand."""

import pytest
from engine_calls import call, hits

from cacheviz.providers.llamacpp import LlamaCppSimulator

ONE_SLOT = LlamaCppSimulator(slots=1, host_cache_tokens=0)  # the in-process Llama API


def run(n, start=0):
    return list(range(start, start + n))


def test_a_slot_reuses_its_previous_prompt_capped_at_length_minus_one():
    assert hits(ONE_SLOT, [[run(10)], [run(10)]]) == [0, 9]
    assert hits(ONE_SLOT, [[run(10)], [run(7), run(5, 100)]]) == [0, 7]
    assert hits(ONE_SLOT, [[run(10)], [run(12)]]) == [0, 10]


def test_one_slot_keeps_only_the_last_prompt():
    # a, b, a: the slot holds b when a comes back; a and b share 3 tokens
    a, b = [run(3), run(20, 100)], [run(3), run(20, 200)]
    assert hits(ONE_SLOT, [a, b, [*a, run(1, 900)]]) == [0, 3, 3]


def test_interleaved_threads_keep_their_own_slot_by_similarity():
    # 1 of 21 tokens in common (< 0.1): b takes the other slot, each thread keeps its own
    a, b = [run(1), run(20, 100)], [run(1), run(20, 200)]
    two = LlamaCppSimulator(slots=2, host_cache_tokens=0)
    assert hits(two, [a, b, [*a, run(1, 900)], [*b, run(1, 900)]]) == [0, 0, 21, 21]


def test_a_similar_enough_request_takes_over_another_threads_slot():
    # 3 of 23 tokens in common (> 0.1): b is served by a's slot, and a has lost it
    a, b = [run(3), run(20, 100)], [run(3), run(20, 200)]
    two = LlamaCppSimulator(slots=2, host_cache_tokens=0)
    assert hits(two, [a, b, [*a, run(1, 900)]]) == [0, 3, 3]


def test_without_similarity_the_least_recently_used_slot_serves():
    a, b = [run(3), run(20, 100)], [run(3), run(20, 200)]
    lru = LlamaCppSimulator(slots=2, slot_similarity=0.0, host_cache_tokens=0)
    # a -> the last slot (1), b -> slot 0, a again -> slot 1 (older): it still holds a
    assert hits(lru, [a, b, [*a, run(1, 900)]]) == [0, 0, 23]
    # a, b, then c takes a's slot, and a comes back to b's: 3 shared tokens
    c = [run(3), run(20, 300)]
    assert hits(lru, [a, b, c, [*a, run(1, 900)]]) == [0, 0, 3, 3]


def test_the_slot_with_the_larger_share_wins_above_the_threshold():
    three = LlamaCppSimulator(slots=3, host_cache_tokens=0)
    a, b = [run(50)], [run(50, 1000)]  # nothing in common: a in slot 2, b in slot 1
    c, d = [run(40, 1000), run(5, 900)], [run(30), run(5, 900)]
    results = three.run([call(i, p) for i, p in enumerate([a, b, c, d])])
    assert [r.cache_read_tokens for r in results] == [0, 0, 40, 30]
    assert [r.detail.split(" (")[0] for r in results] == ["slot 2", "slot 1", "slot 1", "slot 2"]
    assert "by similarity" in results[3].detail
    # 1 of 20 tokens in common is under 0.1: the least recently used slot, an empty one
    low = three.run([call(0, [run(20)]), call(1, [run(1), run(19, 500)])])
    assert "least recently used" in low[1].detail and low[1].cache_read_tokens == 0


def test_the_host_cache_brings_back_a_prompt_a_slot_lost():
    a, b = [run(3), run(20, 100)], [run(3), run(20, 200)]
    host = LlamaCppSimulator(slots=1)
    results = host.run([call(i, p) for i, p in enumerate([a, b, [*a, run(1, 900)]])])
    # b's pick keeps 3/23 of a's prompt (< 0.5): a is saved; a's return loads it back
    assert [r.cache_read_tokens for r in results] == [0, 3, 23]
    assert "from the host cache" in results[2].detail


def test_the_host_cache_drops_the_oldest_prompts_beyond_its_limit():
    a, b, c = [run(20, 100)], [run(20, 200)], [run(20, 300)]
    assert hits(LlamaCppSimulator(slots=1, host_cache_tokens=20), [a, b, c, a]) == [0, 0, 0, 0]
    assert hits(LlamaCppSimulator(slots=1, host_cache_tokens=40), [a, b, c, a]) == [0, 0, 0, 19]


def test_idle_slots_move_to_the_host_cache_and_leave_the_kv_cache():
    # each request shares 1 head token of 21 (< 0.1): the least recently used slot
    # serves. a's slot is idle when b starts: saved to the host cache and, with a unified
    # KV cache (llama-server's defaults), cleared; c finds it empty, and the host cache
    # loads no prompt that would keep less than a quarter of itself (1/21)
    a, b, c = [run(1), run(20, 100)], [run(1), run(20, 200)], [run(1), run(20, 300)]
    assert hits(LlamaCppSimulator(slots=2), [a, b, c]) == [0, 0, 0]
    # without clearing (an explicit --parallel N), c's slot still holds a: the head is reused
    assert hits(LlamaCppSimulator(slots=2, kv_unified=False), [a, b, c]) == [0, 0, 1]
    assert hits(LlamaCppSimulator(slots=2, cache_idle_slots=False), [a, b, c]) == [0, 0, 1]
    # without the host cache there is nowhere to save them: nothing is cleared
    assert hits(LlamaCppSimulator(slots=2, host_cache_tokens=0), [a, b, c]) == [0, 0, 1]
    # a thread that comes back finds its cleared prompt in the host cache
    assert hits(LlamaCppSimulator(slots=2), [a, b, [*a, run(1, 900)]]) == [0, 0, 21]


def test_cache_prompt_off_reuses_nothing():
    assert hits(LlamaCppSimulator(cache_prompt=False), [[run(10)], [run(10)]]) == [0, 0]
    calls = [call(0, [run(10)]), call(1, [run(10)], cache_prompt=False)]
    assert [r.cache_read_tokens for r in ONE_SLOT.run(calls)] == [0, 0]


@pytest.mark.parametrize(
    "rules",
    [{"slots": 0}, {"slot_similarity": 1.5}, {"host_cache_tokens": -1}],
)
def test_bad_rules_are_refused(rules):
    with pytest.raises(ValueError):
        LlamaCppSimulator(**rules)
