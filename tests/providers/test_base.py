"""What every simulator sees and returns (providers/_base.py): SimCall, CallResult, HandBuilt."""

from array import array
from dataclasses import replace

from cacheviz.providers._base import Breakpoint, CallResult, HandBuilt


def test_identical_runs_share_a_hash_and_their_tokens():
    build = HandBuilt()
    first = build.call(0, [[1, 2, 3], [4, 5]])
    second = build.call(1, [[1, 2, 3], [6]])
    assert first.hashes[0] == second.hashes[0]
    assert first.hashes[1] != second.hashes[1]
    assert first.tokens(first.hashes[1]) == array("i", [4, 5])
    assert second.tokens(second.hashes[1]) == array("i", [6])


def test_offsets_count_the_tokens_before_each_block():
    c = HandBuilt().call(0, [[1, 2, 3], [4, 5], [6]])
    assert c.offsets == [0, 3, 5, 6]
    assert c.total == 6
    assert HandBuilt().call(0, []).total == 0


def test_the_chain_is_the_identity_of_each_prefix():
    build = HandBuilt()
    a = build.call(0, [[1], [2], [3]])
    b = build.call(1, [[1], [2], [4]])
    c = build.call(2, [[9], [2], [3]])
    assert len(a.chain) == 3
    assert a.chain[:2] == b.chain[:2] and a.chain[2] != b.chain[2]
    # the same block after a different one is a different prefix
    assert all(x != y for x, y in zip(a.chain, c.chain, strict=True))
    assert len(set(a.chain)) == 3


def test_the_clock_defaults_to_the_index_in_seconds():
    build = HandBuilt()
    assert build.call(3, [[1]]).clock == 3.0
    assert build.call(3, [[1]], clock=0.0).clock == 0.0
    assert build.call(3, [[1]], clock=12.5).clock == 12.5


def test_parts_roles_and_the_request_are_kept():
    bp = Breakpoint(block=1, ttl_seconds=300)
    c = HandBuilt().call(
        4,
        [[1], [2]],
        model="m",
        parts=["system", "messages"],
        roles=[None, "assistant"],
        breakpoints=[bp],
        output_tokens=7,
        thread="sub",
        cache_salt="s",
    )
    assert (c.index, c.model, c.thread, c.output_tokens) == (4, "m", "sub", 7)
    assert c.parts == ["system", "messages"]
    assert c.roles == [None, "assistant"]
    assert c.breakpoints == [bp]
    assert c.params == {"cache_salt": "s"}
    assert c.ts is None and c.reported is None and c.auto_breakpoint is None
    plain = HandBuilt().call(0, [[1], [2]])
    assert plain.parts == ["messages", "messages"]
    assert plain.roles == ["user", "user"]
    assert plain.breakpoints == [] and plain.params == {}


def test_a_run_inside_a_block_is_the_run_without_calibration():
    c = HandBuilt().call(0, [list(range(100)), list(range(100, 150))])
    assert c.partial(0, 37) == 37
    assert c.partial(1, 0) == 0


def test_a_run_inside_a_calibrated_block_scales_with_that_block():
    c = HandBuilt().call(0, [list(range(100)), list(range(100, 150))])
    # provider tokens: block 0 is 200 (2x the local 100), block 1 is 100 (2x the local 50)
    scaled = replace(c, offsets=[0, 200, 300], local_offsets=[0, 100, 150])
    assert scaled.partial(0, 50) == 100
    assert scaled.partial(1, 25) == 50
    assert scaled.partial(1, 1) == 2
    # the whole local block (or more) is the whole calibrated block
    assert scaled.partial(0, 100) == 200
    assert scaled.partial(1, 80) == 100
    # a block past the calibrated ones is not scaled
    assert scaled.partial(2, 5) == 5


def test_a_calibrated_run_rounds_to_the_nearest_token():
    c = HandBuilt().call(0, [list(range(3))])
    scaled = replace(c, offsets=[0, 4], local_offsets=[0, 3])
    assert [scaled.partial(0, n) for n in range(4)] == [0, 1, 3, 4]  # 0, 1.33, 2.67, all


def test_a_one_token_local_block_scales_too():
    c = HandBuilt().call(0, [[1], [2, 3]])
    scaled = replace(c, offsets=[0, 3, 5], local_offsets=[0, 1, 3])
    assert (scaled.partial(0, 0), scaled.partial(0, 1)) == (0, 3)


def test_an_empty_local_block_is_its_calibrated_size():
    c = HandBuilt().call(0, [[], [1]])
    scaled = replace(c, offsets=[0, 2, 3], local_offsets=[0, 0, 1])
    assert scaled.partial(0, 0) == 2


def test_uncached_tokens_are_neither_read_nor_written():
    assert CallResult(100, cache_read_tokens=60, cache_write_tokens=30).uncached_tokens == 10
    assert CallResult(100).uncached_tokens == 100
    assert CallResult(100).extra == {} and CallResult(100).detail == ""
