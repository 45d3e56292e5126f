"""The byte-prefix re-use in the reader must give exactly what a from-scratch read gives."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz._jsonspan import scan_object
from cacheviz.segment import BLOCK_KEYS, BlockStore, blocks_from_scan

ALL = frozenset().union(*BLOCK_KEYS.values())
text = st.text(alphabet='ab é\n"\\', max_size=6)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer"]), "content": text}
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


def _fresh(api, line):
    start = line.index('"request":') + len('"request":')
    return blocks_from_scan(api, scan_object(line, start, ALL), BlockStore()).blocks


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
        fresh = [(b.part, b.position, b.label, b.hash) for b in _fresh(api, line)]
        assert [(b.part, b.position, b.label, b.hash) for b in call.blocks] == fresh
        assert call.hashes == [h for *_, h in fresh]
        assert call.message_start == next(
            (i for i, b in enumerate(fresh) if b[0] == "messages"), len(fresh)
        )
