import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cacheviz._util.seq import common_prefix
from cacheviz.request._jsonspan import JSONSyntaxError, digest, scan_object

KEYS = frozenset({"tools", "system", "messages"})


def test_blocks_keep_the_bytes_as_sent():
    text = '{"model": "m", "messages": [ {"role":"user",  "content":"h\\u00e9"} , {"b": 1}]}'
    scan = scan_object(text, 0, KEYS)
    first, second = scan.blocks["messages"]
    assert first.raw == b'{"role":"user",  "content":"h\\u00e9"}'
    assert first.value == {"role": "user", "content": "hé"}
    assert first.hash == digest(first.raw)
    assert second.raw == b'{"b": 1}'
    assert scan.value("model") == "m"
    assert scan.end == len(text)


def test_a_string_valued_block_member_is_one_block():
    scan = scan_object('{"system": "be brief", "messages": []}', 0, KEYS)
    assert [e.value for e in scan.blocks["system"]] == ["be brief"]
    assert scan.blocks["messages"] == []


def test_whitespace_and_escaping_changes_change_the_hash():
    a = scan_object('{"messages":[{"a":"é"}]}', 0, KEYS).blocks["messages"][0]
    b = scan_object('{"messages":[{"a":"\\u00e9"}]}', 0, KEYS).blocks["messages"][0]
    c = scan_object('{"messages":[{"a": "é"}]}', 0, KEYS).blocks["messages"][0]
    assert a.value == b.value == c.value
    assert len({a.hash, b.hash, c.hash}) == 3


def test_resume_reuses_blocks_inside_the_common_prefix():
    one = '{"messages":[{"n":1},{"n":2}],"stream":true}'
    two = '{"messages":[{"n":1},{"n":2},{"n":3}],"stream":true}'
    ref = scan_object(one, 0, KEYS)
    scan = scan_object(two, 0, KEYS, [ref])
    assert scan.reused_chars > 0
    assert scan.blocks["messages"][0] is ref.blocks["messages"][0]
    assert [e.value for e in scan.blocks["messages"]] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert scan.value("stream") is True


def test_a_number_cut_by_the_common_prefix_is_not_reused():
    ref = scan_object('{"messages":[1,2]}', 0, KEYS)
    scan = scan_object('{"messages":[1,23]}', 0, KEYS, [ref])
    assert [e.value for e in scan.blocks["messages"]] == [1, 23]


@pytest.mark.parametrize(
    "text",
    ['{"messages": [1,]}', '{"messages" 1}', '{"a": tru}', "[1]", '{"a":1} x', '{"a":1'],
)
def test_invalid_json_raises_with_a_position(text):
    with pytest.raises(JSONSyntaxError) as info:
        scan = scan_object(text, 0, KEYS)
        if text[scan.end :].strip():
            raise JSONSyntaxError("trailing", scan.end)
    assert 0 <= info.value.pos <= len(text)


def test_common_prefix_length_is_exact():
    a = "x" * 10_000 + "abc"
    assert common_prefix(a, "x" * 10_000 + "abd") == 10_002
    assert common_prefix("zz" + a, a, 2, 0) == len(a)
    assert common_prefix("", a) == 0
    assert common_prefix(list(range(5000)), [*range(4999), 7]) == 4999


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)
bodies = st.fixed_dictionaries(
    {"messages": st.lists(json_values, max_size=6)},
    optional={"system": st.text(max_size=6) | st.lists(json_values, max_size=2), "x": json_values},
)


@settings(max_examples=200, deadline=None)
@given(first=bodies, second=bodies, indent=st.sampled_from([None, 1]), keep=st.integers(0, 6))
@pytest.mark.slow
def test_a_resumed_scan_equals_a_fresh_scan(first, second, indent, keep):
    # the second body shares a prefix of messages with the first, as agent sessions do
    second = {**second, "messages": first["messages"][:keep] + second["messages"]}
    one = json.dumps(first, indent=indent)
    two = json.dumps(second, indent=indent)
    ref = scan_object(one, 0, KEYS)
    fresh = scan_object(two, 0, KEYS)
    resumed = scan_object(two, 0, KEYS, [ref])
    for key in KEYS:
        a = [(e.start, e.end, e.hash, e.raw) for e in fresh.blocks.get(key, [])]
        b = [(e.start, e.end, e.hash, e.raw) for e in resumed.blocks.get(key, [])]
        assert a == b
    assert [(m.key, m.value) for m in fresh.members] == [(m.key, m.value) for m in resumed.members]
    assert fresh.end == resumed.end
