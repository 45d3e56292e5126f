from array import array
from itertools import accumulate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheviz._util.seq import common_prefix, differing_block_common
from cacheviz.prefix._index import PrefixIndex, match_pair

# a small alphabet of blocks; each block's tokens share leading tokens with its neighbours
TOKENS = {f"h{i}": array("i", [1, 2, i % 3, i, i + 100, *range(i % 4)]) for i in range(8)}


def _offsets(keys):
    return [0, *accumulate(len(TOKENS[k]) for k in keys)]


def _brute_force(history, keys):
    best = 0
    offsets = _offsets(keys)
    for earlier in history:
        depth = common_prefix(earlier, keys)
        tokens = offsets[depth]
        if depth < min(len(keys), len(earlier)):
            tokens += differing_block_common(TOKENS[keys[depth]], TOKENS[earlier[depth]])
        best = max(best, tokens)
    return best


blocks = st.lists(st.sampled_from(sorted(TOKENS)), max_size=12)
requests = st.lists(blocks, min_size=1, max_size=12)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(requests=requests, grow=st.booleans())
def test_the_trie_finds_the_longest_prefix_of_any_earlier_request(requests, grow):
    if grow:  # agent-like: each request extends or edits the previous one
        requests = [requests[0]] + [
            requests[i - 1][: len(r) // 2] + r for i, r in enumerate(requests) if i
        ]
    index = PrefixIndex()
    for i, keys in enumerate(requests):
        best, previous = index.add(list(keys), _offsets(keys), TOKENS.__getitem__)
        assert best.tokens == _brute_force(requests[:i], keys)
        # whole blocks matched: the longest block run shared with any earlier request
        assert best.blocks == max((common_prefix(e, keys) for e in requests[:i]), default=0)
        if i:
            assert previous.tokens == min(
                _brute_force([requests[i - 1]], keys), _offsets(requests[i - 1])[-1]
            )
            assert previous.blocks == common_prefix(requests[i - 1], keys)
        else:
            assert previous is None


def test_identical_tokens_with_other_bytes_stop_before_the_last_token():
    assert differing_block_common(array("i", [1, 2, 3]), array("i", [1, 2, 3])) == 2
    assert differing_block_common(array("i", [1, 2, 3]), array("i", [1, 2, 4])) == 2
    assert differing_block_common(array("i", [1, 2]), array("i", [1, 2, 3])) == 2
    # a one-token (or empty) block whose bytes changed matches nothing of it
    assert differing_block_common(array("i", [7]), array("i", [7])) == 0
    assert differing_block_common(array("i"), array("i")) == 0


@settings(max_examples=300, deadline=None)
@given(before=blocks, keys=blocks)
def test_a_pair_matches_to_the_first_differing_token_capped_at_the_earlier_total(before, keys):
    match = match_pair(before, _offsets(before)[-1], keys, _offsets(keys), TOKENS.__getitem__)
    assert match.blocks == common_prefix(before, keys)
    assert match.tokens == min(_brute_force([before], keys), _offsets(before)[-1])


def test_a_pair_reads_the_earlier_block_with_the_earlier_requests_tokens():
    # the earlier request was tokenized on its own (another model's encoding): inside the
    # first differing block its tokens, not this request's, are the ones compared
    earlier = {"h1": TOKENS["h1"], "h2": array("i", [1, 2, 0, 3, 7])}
    keys, offsets = ["h1", "h3"], _offsets(["h1", "h3"])
    mine = match_pair(["h1", "h2"], 100, keys, offsets, TOKENS.__getitem__)
    theirs = match_pair(["h1", "h2"], 100, keys, offsets, TOKENS.__getitem__, earlier.get)
    assert mine.tokens == len(TOKENS["h1"]) + common_prefix(TOKENS["h3"], TOKENS["h2"])
    assert theirs.tokens == len(TOKENS["h1"]) + 4  # [1, 2, 0, 3] shared with h3
    assert mine.blocks == theirs.blocks == 1
    # never more than the earlier request held
    assert match_pair(["h1", "h2"], 3, keys, offsets, TOKENS.__getitem__).tokens == 3
