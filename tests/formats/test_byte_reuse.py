"""The byte-prefix re-use in the reader must give exactly what a from-scratch read gives."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning
from cacheviz.request._blocks import BLOCK_KEYS, BlockStore, blocks_from_scan
from cacheviz.request._jsonspan import scan_object

ALL = frozenset().union(*BLOCK_KEYS.values())
text = st.text(alphabet='ab é\n"\\', max_size=6)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer"]), "content": text},
    optional={"cache_control": st.just({"type": "ephemeral"})},  # a breakpoint that moves
)
tool = st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "c"]), "x": st.integers(0, 3)})


@st.composite
def sessions(draw):
    api = draw(st.sampled_from(["messages", "chat.completions", "responses"]))
    history = draw(st.lists(message, min_size=1, max_size=4))
    bodies = []
    for _ in range(draw(st.integers(1, 5))):
        action = draw(st.sampled_from(["append", "append", "edit", "drop", "system"]))
        if action == "append":
            history = history + draw(st.lists(message, min_size=1, max_size=2))
        elif action == "edit":
            i = draw(st.integers(0, len(history) - 1))
            history = [*history[:i], draw(message), *history[i + 1 :]]
        elif action == "drop" and len(history) > 1:
            history = history[1:]
        body = {"model": "m", "tools": draw(st.lists(tool, max_size=2))}
        if api == "messages":
            body["system"] = draw(
                st.one_of(text, st.lists(st.just({"type": "text", "text": "s"}), max_size=2))
            )
            body["messages"] = history
        elif api == "responses":
            body["instructions"] = draw(text)
            body["input"] = history
        else:
            body["messages"] = history
        bodies.append(body)
    return api, bodies


def _fresh(api, line, store=None):
    start = line.index('"request":') + len('"request":')
    return blocks_from_scan(api, scan_object(line, start, ALL), store or BlockStore())


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=sessions(), indent=st.sampled_from([None, 1]))
def test_reused_blocks_equal_fresh_blocks(tmp_path, case, indent):
    api, bodies = case
    lines = [
        json.dumps({"api": api, "model": "m", "request": b}, indent=indent).replace("\n", " ")
        for b in bodies
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    session = cacheviz.load(path, format="cacheviz")
    for call, line in zip(session.calls, lines, strict=True):
        store = BlockStore()
        rendered = _fresh(api, line, store)
        fresh = [(b.part, b.position, b.label, b.hash) for b in rendered.blocks]
        kinds = [store.contents[b.hash].kind for b in rendered.blocks]
        assert [session.contents[b.hash].kind for b in call.blocks] == kinds
        assert [(b.part, b.position, b.label, b.hash) for b in call.blocks] == fresh
        assert call.breakpoints == rendered.breakpoints
        assert call.hashes == [h for *_, h in fresh]
        assert call.message_start == next(
            (i for i, b in enumerate(fresh) if b[0] == "messages"), len(fresh)
        )


def test_a_bad_block_is_refused_again_when_the_line_before_failed(tmp_path):
    """Blocks taken over from a line that failed its checks are checked again."""
    good = {"role": "user", "content": "hi"}
    lines = [
        json.dumps({"api": "messages", "model": "m", "request": {"messages": m}})
        for m in ([good, 5, good], [good, 5, good, good], [good, good])  # line 2 takes 5 over
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(CacheVizWarning, match="skipped 2 bad line"):
        session = cacheviz.load(path, format="cacheviz", errors="skip")
    assert [s.line for s in session.skipped] == [1, 2]
    assert all("request.messages[1]" in s.reason for s in session.skipped)
    assert [c.line for c in session.calls] == [3]


def test_same_leading_counts_identical_objects_up_to_the_first_difference():
    from cacheviz.request._blocks import _same_leading

    a, b, c, x, y = (object() for _ in range(5))
    assert _same_leading([a, b, c], [a, b, c]) == 3
    assert _same_leading([a, b, x], [a, b, c, y]) == 2
    assert _same_leading([a, x, c], [a, y, c]) == 1
    assert _same_leading([x, b, c], [y, b, c]) == 0  # identical after a difference: not shared
    assert _same_leading([], [a]) == 0
