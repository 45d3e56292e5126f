from array import array
from itertools import accumulate

from hypothesis import given, settings
from hypothesis import strategies as st

from cacheviz._seq import common_prefix
from cacheviz.prefix import PrefixIndex, differing_block_common

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


requests = st.lists(st.lists(st.sampled_from(sorted(TOKENS)), max_size=12), min_size=1, max_size=12)


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
        if i:
            assert previous.tokens == min(
                _brute_force([requests[i - 1]], keys), _offsets(requests[i - 1])[-1]
            )
        else:
            assert previous is None


def test_identical_tokens_with_other_bytes_stop_before_the_last_token():
    assert differing_block_common(array("i", [1, 2, 3]), array("i", [1, 2, 3])) == 2
    assert differing_block_common(array("i", [1, 2, 3]), array("i", [1, 2, 4])) == 2
    assert differing_block_common(array("i", [1, 2]), array("i", [1, 2, 3])) == 2
