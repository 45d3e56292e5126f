"""The cache-entry model the simulators share (providers/_cache.py; providers.md §7).

Entries ``(key, length, expires_at)``: live while ``expires_at > now``, usable once
visible (a written entry only from ``t + ttft``), refreshed on use (the TTL restarts and
the entry becomes the most recently used), evicted least recently used first beyond a
token capacity.
"""

from dataclasses import replace

from cacheviz.providers._base import HandBuilt
from cacheviz.providers._cache import MAX_SIBLINGS, EntryStore, LivePrompts


def test_an_entry_lives_until_its_expiry_and_is_then_dropped():
    store = EntryStore()
    entry = store.put("a", 100, now=10.0, ttl=300.0, written_by=3)
    assert (entry.tokens, entry.expires_at, entry.ttl, entry.written_by) == (100, 310.0, 300.0, 3)
    assert store.get("a", 309.9) is entry
    assert store.get("a", 310.0) is None  # expires_at > now, strictly
    assert len(store) == 0
    assert store.get("missing", 0.0) is None


def test_an_entry_is_usable_only_once_visible():
    store = EntryStore()
    entry = store.put("a", 100, now=0.0, ttl=300.0, written_by=0)
    assert store.get("a", 0.0) is entry  # visible from its write on
    entry.visible_at = 5.0  # the writer's response began 5 s later
    assert store.get("a", 4.0) is None
    assert len(store) == 1  # not yet visible is not gone
    assert store.get("a", 5.0) is entry


def test_a_use_restarts_the_ttl_and_keeps_the_longest():
    store = EntryStore()
    entry = store.put("a", 100, now=0.0, ttl=300.0, written_by=0)
    store.touch(entry, 200.0)
    assert entry.expires_at == 500.0
    store.touch(entry, 250.0, ttl=3600.0)
    assert (entry.ttl, entry.expires_at) == (3600.0, 3850.0)
    store.touch(entry, 300.0, ttl=300.0)  # a shorter TTL never shortens the entry's
    assert (entry.ttl, entry.expires_at) == (3600.0, 3900.0)


def test_the_least_recently_used_entry_is_evicted_at_capacity():
    store = EntryStore(capacity_tokens=100)
    a = store.put("a", 40, 0.0, 300.0, written_by=0)
    store.put("b", 40, 1.0, 300.0, written_by=1)
    store.touch(a, 2.0)  # a is now more recent than b
    store.put("c", 40, 3.0, 300.0, written_by=2)
    assert [e.key for e in store.live(3.0)] == ["a", "c"]


def test_eviction_goes_on_until_the_entries_fit():
    store = EntryStore(capacity_tokens=100)
    store.put("a", 30, 0.0, 300.0, written_by=0)
    store.put("b", 30, 1.0, 300.0, written_by=1)
    store.put("c", 30, 2.0, 300.0, written_by=2)
    store.put("d", 70, 3.0, 300.0, written_by=3)  # 160 tokens: a and b go
    assert [e.key for e in store.live(3.0)] == ["c", "d"]


def test_an_entry_larger_than_the_capacity_is_kept_alone():
    store = EntryStore(capacity_tokens=50)
    store.put("a", 30, 0.0, 300.0, written_by=0)
    big = store.put("b", 60, 1.0, 300.0, written_by=1)
    assert [e.key for e in store.live(1.0)] == ["b"]
    assert store.get("b", 1.0) is big


def test_a_rewrite_replaces_the_entry_and_its_size():
    store = EntryStore(capacity_tokens=50)
    store.put("a", 40, 0.0, 300.0, written_by=0)
    rewritten = store.put("a", 10, 1.0, 60.0, written_by=1)
    assert len(store) == 1
    assert (rewritten.tokens, rewritten.expires_at, rewritten.written_by) == (10, 61.0, 1)
    store.put("b", 40, 2.0, 300.0, written_by=2)  # 10 + 40 fit: nothing is evicted
    assert [e.key for e in store.live(2.0)] == ["a", "b"]


def test_live_lists_unexpired_entries_most_recently_used_last():
    store = EntryStore()
    a = store.put("a", 10, 0.0, 100.0, written_by=0)
    store.put("b", 10, 0.0, 50.0, written_by=1)
    store.put("c", 10, 0.0, 100.0, written_by=2)
    store.touch(a, 10.0)
    assert [e.key for e in store.live(20.0)] == ["b", "c", "a"]
    assert [e.key for e in store.live(50.0)] == ["c", "a"]
    assert store.live(110.0) == []


BUILD = HandBuilt()
X, Y, Z, W = list(range(10)), list(range(10, 30)), [10, 11, 12, 99, 98], list(range(50, 58))


def test_a_recorded_prompt_is_shared_while_live():
    prompts = LivePrompts(ttl=100.0)
    a = BUILD.call(0, [X, Y])
    assert prompts.common(a, 0.0) == 0
    prompts.record(a, 0.0, build=0.0)
    assert prompts.common(BUILD.call(1, [X, Y, W]), 99.0) == 30
    assert prompts.common(BUILD.call(2, [X, Y]), 100.0) == 0  # expired after the TTL


def test_a_differing_block_is_compared_token_by_token():
    prompts = LivePrompts(ttl=100.0)
    prompts.record(BUILD.call(0, [X, Y]), 0.0, build=0.0)
    # Z shares its first 3 tokens with Y: 10 + 3
    assert prompts.common(BUILD.call(1, [X, Z]), 1.0) == 13
    assert prompts.common(BUILD.call(2, [W]), 1.0) == 0


def test_a_prompt_is_usable_once_its_response_began():
    prompts = LivePrompts(ttl=100.0)
    a = BUILD.call(0, [X, Y])
    prompts.record(a, 0.0, build=5.0)
    assert prompts.common(a, 4.0) == 0
    assert prompts.common(a, 4.0, visible=False) == 30
    assert prompts.common(a, 5.0) == 30


def test_a_prompt_through_an_edge_refreshes_it():
    prompts = LivePrompts(ttl=100.0)
    prompts.record(BUILD.call(0, [X, Y]), 0.0, build=0.0)
    prompts.record(BUILD.call(1, [X, W]), 80.0, build=0.0)
    # X was refreshed at 80, Y was not: at 150 only X (and the live sibling W) are there
    assert prompts.common(BUILD.call(2, [X, Y]), 150.0) == 10
    assert prompts.common(BUILD.call(3, [X, W]), 150.0) == 18


def test_the_last_path_counts_as_refreshed_when_another_prompt_leaves_it():
    prompts = LivePrompts(ttl=100.0)
    prompts.record(BUILD.call(0, [X, Y]), 0.0, build=0.0)
    prompts.record(BUILD.call(1, [X, Y, W]), 50.0, build=0.0)
    prompts.record(BUILD.call(2, [Z]), 120.0, build=0.0)
    # X, Y and W were last used at 50: live until 150
    assert prompts.common(BUILD.call(3, [X, Y, W]), 149.0) == 38
    assert prompts.common(BUILD.call(4, [X, Y, W]), 150.0) == 0


def test_an_edge_off_the_last_path_is_usable_from_its_visible_time_on():
    prompts = LivePrompts(ttl=100.0)
    a = BUILD.call(0, [X, Y])
    prompts.record(a, 0.0, build=5.0)
    prompts.record(BUILD.call(1, [W]), 1.0, build=0.0)  # a is no longer the last path
    assert prompts.common(a, 4.9) == 0
    assert prompts.common(a, 5.0) == 30


def test_an_extension_is_usable_only_once_its_whole_prefix_is():
    prompts = LivePrompts(ttl=100.0)
    prompts.record(BUILD.call(0, [X]), 0.0, build=10.0)  # X usable from 10
    prompts.record(BUILD.call(1, [X, Y]), 1.0, build=0.0)  # Y written at 1, after X
    assert prompts.common(BUILD.call(2, [X, Y]), 5.0) == 0
    assert prompts.common(BUILD.call(3, [X, Y]), 10.0) == 30


def test_an_edge_sent_at_its_expiry_is_written_anew():
    prompts = LivePrompts(ttl=100.0)
    a = BUILD.call(0, [X, Y])
    prompts.record(a, 0.0, build=0.0)
    prompts.record(a, 100.0, build=5.0)  # expired at 100: a new entry, usable from 105
    assert prompts.common(a, 104.0) == 0
    assert prompts.common(a, 105.0) == 30


def test_only_the_latest_variants_of_a_block_are_compared_token_by_token():
    prompts = LivePrompts(ttl=1000.0)
    query = [X, [1000, 1001, 1002, 1003, 1004, 0]]
    # the oldest variant shares 5 tokens with the query's second block, the others none
    variants = [[1000, 1001, 1002, 1003, 1004, 9]] + [[2000 + i] for i in range(MAX_SIBLINGS)]
    for i, v in enumerate(variants[:MAX_SIBLINGS]):
        prompts.record(BUILD.call(i, [X, v]), float(i), build=0.0)
    assert prompts.common(BUILD.call(90, query), 500.0) == 15
    prompts.record(BUILD.call(91, [X, variants[MAX_SIBLINGS]]), 501.0, build=0.0)
    assert prompts.common(BUILD.call(92, query), 502.0) == 10  # the oldest is past the cap


def test_a_run_inside_a_calibrated_block_is_scaled():
    prompts = LivePrompts(ttl=100.0)
    prompts.record(BUILD.call(0, [X, Y]), 0.0, build=0.0)
    c = BUILD.call(1, [X, Z])  # 3 of Z's 5 local tokens in common
    calibrated = replace(c, offsets=[0, 20, 30], local_offsets=[0, 10, 15])
    assert prompts.common(calibrated, 1.0) == 20 + 6


def test_a_prompt_that_only_reads_keeps_the_last_path_live():
    prompts = LivePrompts(ttl=100.0)
    prompts.record(BUILD.call(0, [X, Y]), 0.0, build=0.0)
    prompts.record(BUILD.call(1, [X, Y, W]), 80.0, build=0.0)  # X, Y, W used at 80
    assert prompts.common(BUILD.call(2, [Z]), 120.0) == 0  # compares Z with X
    prompts.record(BUILD.call(3, [list(range(70, 75))]), 140.0, build=0.0)
    assert prompts.common(BUILD.call(4, [X, Y, W]), 150.0) == 38  # live until 180


def test_a_refresh_keeps_the_edge_usable_from_its_first_write():
    prompts = LivePrompts(ttl=100.0)
    a = BUILD.call(0, [X, Y])
    prompts.record(a, 0.0, build=0.0)
    prompts.record(BUILD.call(1, [W]), 1.0, build=0.0)
    prompts.record(a, 10.0, build=5.0)  # both edges live: refreshed, not written anew
    assert prompts.common(a, 11.0) == 30
