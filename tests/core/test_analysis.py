import json

import polars as pl
import pytest

import cacheviz
from cacheviz import _schema

SYSTEM = [{"type": "text", "text": "You are a careful engineer. " * 20}]
TOOLS = [
    {
        "name": n,
        "description": f"The {n} tool does {n} things well.",
        "input_schema": {"type": "object"},
    }
    for n in ("read", "write", "grep")
]


def _msgs(n):
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "content": f"message number {i} about the parser and its cache"})
    return out


@pytest.fixture
def analyze(write_log, anthropic_body):
    def run(bodies, **kwargs):
        items = [b if isinstance(b, str) else anthropic_body(**b) for b in bodies]
        return cacheviz.load(write_log(items)).analyze(**kwargs)

    return run


def _line(body, **fields):
    return json.dumps(
        {"ts": None, "provider": "anthropic", "model": body["model"], **fields, "request": body}
    )


def test_frames_have_the_schema(analyze):
    a = analyze([{"messages": _msgs(1), "system": SYSTEM, "tools": TOOLS}])
    assert a.calls.schema == pl.Schema(_schema.CALLS)
    assert a.segments.schema == pl.Schema(_schema.SEGMENTS)
    assert a.drifts.schema == pl.Schema(_schema.DRIFTS)


def test_append_only_history_matches_the_whole_previous_call(analyze):
    a = analyze([{"messages": _msgs(n), "system": SYSTEM, "tools": TOOLS} for n in (1, 3, 5)])
    calls = a.calls
    assert calls["prefix_tokens"].to_list() == [0, *calls["input_tokens"].to_list()[:2]]
    assert (calls["new_tokens"] == calls["input_tokens"] - calls["prefix_tokens"]).all()
    assert not calls["drift"].any()
    assert a.drifts.height == 0
    seg = a.segments.filter(pl.col("call") == 2)
    offsets = seg["token_offset"].to_list()
    tokens = seg["tokens"].to_list()
    assert offsets == [sum(tokens[:i]) for i in range(len(tokens))]
    assert seg["status"].to_list()[-2:] == ["new", "new"]
    assert set(seg["status"].to_list()[:-2]) == {"same"}
    assert set(a.segments["stability"]) == {"immutable"}


def test_prefix_is_matched_against_any_earlier_call(analyze):
    base = _msgs(3)
    detour = [*base[:2], {"role": "user", "content": "a different question entirely"}]
    a = analyze(
        [
            {"messages": base, "system": SYSTEM},
            {"messages": detour, "system": SYSTEM},
            {"messages": [*base, *_msgs(2)], "system": SYSTEM},
        ]
    )
    first_total = a.calls["input_tokens"][0]
    assert a.calls["prefix_tokens"][2] == first_total  # call 0 is fully re-used by call 2
    assert a.calls["drift"].to_list() == [False, True, True]  # but both drift from the call before


def test_the_line_lands_inside_the_first_differing_block(analyze):
    msgs = _msgs(3)
    longer = [*msgs[:2], {"role": "user", "content": msgs[2]["content"] + " and more words here"}]
    a = analyze([{"messages": msgs, "system": SYSTEM}, {"messages": longer, "system": SYSTEM}])
    block = a.segments.filter((pl.col("call") == 1) & (pl.col("label") == "user#2")).row(
        0, named=True
    )
    prefix = a.calls["prefix_tokens"][1]
    assert block["token_offset"] < prefix < a.calls["input_tokens"][0]
    (drift,) = a.drifts.iter_rows(named=True)
    assert (drift["cause"], drift["label"], drift["prev_common_tokens"]) == (
        "content_edited",
        "user#2",
        prefix,
    )
    assert drift["tokens_lost"] == a.calls["input_tokens"][0] - prefix
    assert "text appended" in drift["detail"]


def _drift(a):
    assert a.drifts.height == 1, a.drifts
    return a.drifts.row(0, named=True)


def test_serialization_only_whitespace_change(analyze, anthropic_body):
    body = anthropic_body(_msgs(3), system=SYSTEM)
    compact = json.dumps(body, separators=(",", ":"))
    spaced = compact.replace('"content":"message number 1', '"content": "message number 1')
    a = analyze(
        [
            _line(json.loads(compact)).replace(json.dumps(body), compact),
            _line(body).replace(json.dumps(body), spaced),
        ]
    )
    d = _drift(a)
    assert (d["cause"], d["label"]) == ("serialization_only", "assistant#1")
    assert d["byte_offset"] == len('{"role":"assistant","content":')


def test_serialization_only_key_order_change(analyze):
    one = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"a": 1, "b": 2}}],
    }
    two = {
        "role": "assistant",
        "content": [{"type": "tool_use", "name": "read", "id": "t1", "input": {"a": 1, "b": 2}}],
    }
    first = [_msgs(1)[0], one, {"role": "user", "content": "ok"}]
    second = [_msgs(1)[0], two, {"role": "user", "content": "ok"}]
    d = _drift(
        analyze([{"messages": first, "system": SYSTEM}, {"messages": second, "system": SYSTEM}])
    )
    assert d["cause"] == "serialization_only"
    assert "keys in another order" in d["detail"]


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("Now: 2026-01-01T10:00:00Z.", "Now: 2026-01-01T10:05:13Z.", "timestamp"),
        ("Today is 2026-01-01.", "Today is 2026-01-02.", "date"),
        ("Today: Sun Jul 13 2026", "Today: Mon Jul 14 2026", "date"),
        (
            "Run 3f2b1c9a-1111-4222-8333-444455556666",
            "Run 9d9d1c9a-1111-4222-8333-444455556666",
            "uuid",
        ),
        ("Credits left: 41", "Credits left: 40", "counter"),
    ],
)
def test_volatile_values_in_the_system_prompt(analyze, old, new, kind):
    sys_old = [*SYSTEM, {"type": "text", "text": old}]
    sys_new = [*SYSTEM, {"type": "text", "text": new}]
    d = _drift(
        analyze(
            [{"messages": _msgs(1), "system": sys_old}, {"messages": _msgs(3), "system": sys_new}]
        )
    )
    assert (d["cause"], d["part"], d["label"]) == ("volatile_value", "system", "system[1]")
    assert d["detail"].startswith(f"system[1]: {kind} changed")


def test_reordered_tools(analyze):
    d = _drift(
        analyze(
            [
                {"messages": _msgs(1), "tools": TOOLS, "system": SYSTEM},
                {"messages": _msgs(3), "tools": [TOOLS[1], TOOLS[0], TOOLS[2]], "system": SYSTEM},
            ]
        )
    )
    assert (d["cause"], d["part"], d["position"], d["label"]) == ("reorder", "tools", 0, "write")
    assert d["block_token_offset"] == 0
    assert 0 < d["prev_common_tokens"] < 10  # only the shared `{"name":"` opening matches


def test_block_added_and_removed(analyze):
    added = _drift(
        analyze(
            [
                {"messages": _msgs(1), "system": SYSTEM},
                {"messages": _msgs(3), "system": [*SYSTEM, {"type": "text", "text": "New rule."}]},
            ]
        )
    )
    assert (added["cause"], added["label"]) == ("block_added", "system[1]")
    msgs = _msgs(7)
    removed = _drift(
        analyze(
            [
                {"messages": msgs, "system": SYSTEM},
                {"messages": [*msgs[:3], *msgs[5:]], "system": SYSTEM},
            ]
        )
    )
    assert (removed["cause"], removed["label"]) == ("block_removed", "assistant#3")
    assert "2 segment(s) removed: assistant#3, user#4" in removed["detail"]


def test_rewinding_to_an_earlier_state_is_a_removal_at_the_end(analyze):
    msgs = _msgs(5)
    d = _drift(
        analyze([{"messages": msgs, "system": SYSTEM}, {"messages": msgs[:3], "system": SYSTEM}])
    )
    assert (d["cause"], d["label"], d["tokens_lost"] > 0) == ("block_removed", "assistant#3", True)


def test_sliding_window_and_compaction(analyze, anthropic_body):
    msgs = _msgs(11)
    window = _drift(
        analyze(
            [{"messages": msgs[:9], "system": SYSTEM}, {"messages": msgs[2:11], "system": SYSTEM}]
        )
    )
    assert (window["cause"], window["label"]) == ("truncated_front", "user#0")
    summary = [{"role": "user", "content": "Summary: we fixed the parser."}]
    # a compacted history is a new conversation: a new thread under the old one, no drift
    a = analyze([{"messages": msgs, "system": SYSTEM}, {"messages": summary, "system": SYSTEM}])
    assert a.drifts.height == 0
    assert a.calls["parent_thread"][1] == a.calls["thread"][0] != a.calls["thread"][1]
    # within one thread named by the transcript it is a history swap
    hinted = [
        _line(anthropic_body(msgs, system=SYSTEM), meta={"thread": "main"}),
        _line(anthropic_body(summary, system=SYSTEM), meta={"thread": "main"}),
    ]
    assert _drift(analyze(hinted))["cause"] == "history_replaced"


def test_model_switch_in_an_explicit_thread(analyze, anthropic_body):
    one = anthropic_body(_msgs(1), system=SYSTEM)
    two = anthropic_body(_msgs(3), system=SYSTEM, model="claude-opus-4-1")
    a = analyze([_line(one, meta={"thread": "main"}), _line(two, meta={"thread": "main"})])
    d = _drift(a)
    assert d["cause"] == "model_switch"
    assert d["detail"].startswith(
        "model changed from anthropic/claude-sonnet-4-5 to anthropic/claude-opus-4-1"
    )
    assert (d["prev_common_tokens"], d["tokens_lost"]) == (0, a.calls["input_tokens"][0])


def test_stability_marks_the_changing_position_dynamic(analyze):
    a = analyze(
        [
            {
                "messages": _msgs(1),
                "system": [*SYSTEM, {"type": "text", "text": f"Now: 2026-01-01T10:0{i}:00Z"}],
            }
            for i in range(3)
        ]
    )
    by_label = dict(a.segments.filter(pl.col("call") == 0).select("label", "stability").iter_rows())
    assert by_label == {"system[0]": "immutable", "system[1]": "dynamic", "user#0": "immutable"}
    statuses = a.segments.filter(pl.col("call") == 2)["status"].to_list()
    assert statuses == ["same", "changed", "invalidated"]


def test_whale_summary_hashes(analyze):
    msgs = _msgs(12)
    a = analyze(
        [
            {"messages": msgs[:11], "system": SYSTEM, "tools": TOOLS},
            {"messages": msgs, "system": SYSTEM, "tools": TOOLS},
            {"messages": msgs, "system": SYSTEM},
        ]
    )
    c = a.calls
    assert c["prefix_hash"][0] == c["prefix_hash"][1] != c["prefix_hash"][2]
    assert c["log_head_hash"][0] != c["log_head_hash"][1]  # 3 vs 4 messages in the head
    assert c["log_tail_hash"][1] == c["log_tail_hash"][2]
    assert all(len(h) == 16 for h in c["prefix_hash"])


def test_threads_keep_a_drifting_thread_together_and_side_calls_apart(write_log, anthropic_body):
    def main(i):
        system = [*SYSTEM, {"type": "text", "text": f"Now: 2026-01-01T10:0{i}:00Z"}]
        return anthropic_body(_msgs(1 + 2 * i), system=system, tools=TOOLS)

    side = anthropic_body([{"role": "user", "content": "Write a title."}], model="claude-haiku-4-5")
    probe = anthropic_body([{"role": "user", "content": "quota"}], model="claude-haiku-4-5")
    bodies = [main(0), side, main(1), probe, main(2)]
    path = write_log(bodies)
    auto = cacheviz.load(path).analyze()
    # a side call is named by what its words say it is for (issue 33, item 7)
    assert auto.calls["thread"].to_list() == [
        "main",
        "side call: title",
        "main",
        "side call: quota probe",
        "main",
    ]
    assert auto.calls["parent_thread"].to_list() == [None, "main", None, "main", None]
    assert auto.calls["drift"].to_list() == [False, False, True, False, True]
    strict = cacheviz.load(path).analyze(thread="model+prefix")
    assert strict.calls["thread"].n_unique() == 4  # both Haiku calls have no tools/system
    assert strict.calls["drift"].to_list() == [False, False, False, True, False]
    single = cacheviz.load(path).analyze(thread="single")
    assert single.calls["thread"].n_unique() == 1
    with pytest.raises(ValueError, match="thread='x'; expected one of auto"):
        cacheviz.load(path).analyze(thread="x")


def test_explicit_threads_are_never_mixed(analyze, anthropic_body):
    main = [anthropic_body(_msgs(n), system=SYSTEM) for n in (1, 3, 5)]
    sub = [
        anthropic_body([{"role": "user", "content": f"sub task {i}"}], system=SYSTEM)
        for i in range(2)
    ]
    a = analyze(
        [
            _line(main[0]),
            _line(sub[0], meta={"thread": "agent-1"}),
            _line(main[1]),
            _line(sub[1], meta={"thread": "agent-2"}),
            _line(main[2]),
        ]
    )
    assert a.calls["thread"].to_list() == ["main", "agent-1", "main", "agent-2", "main"]
    assert not a.calls["drift"].any()


def test_encodings_per_model_and_forced(write_log, anthropic_body):
    gpt4 = {"model": "gpt-4", "messages": [{"role": "user", "content": "hello world"}]}
    claude = anthropic_body([{"role": "user", "content": "hello world"}])
    path = write_log([gpt4, claude])
    calls = cacheviz.load(path).analyze().calls
    assert calls.select("encoding", "tokens_exact").rows() == [
        ("cl100k_base", True),
        ("o200k_base", False),
    ]
    forced = cacheviz.load(path).analyze(encoding="cl100k_base").calls
    assert forced.select("encoding", "tokens_exact").rows() == [
        ("cl100k_base", True),
        ("cl100k_base", False),
    ]
    # message framing: start marker + role + content + end marker
    assert calls["input_tokens"][0] == 2 + 1 + 2


def test_moving_cache_control_is_not_a_drift(analyze):
    msgs = _msgs(3)
    marked = [
        *msgs[:2],
        {
            "role": "user",
            "content": [{"type": "text", "text": "go", "cache_control": {"type": "ephemeral"}}],
        },
    ]
    unmarked = [*msgs[:2], {"role": "user", "content": [{"type": "text", "text": "go"}]}]
    later = [
        *unmarked,
        {"role": "assistant", "content": "done"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "next", "cache_control": {"type": "ephemeral"}}],
        },
    ]
    a = analyze([{"messages": marked, "system": SYSTEM}, {"messages": later, "system": SYSTEM}])
    assert a.drifts.height == 0
    assert a.calls["prefix_tokens"][1] == a.calls["input_tokens"][0]


def test_a_changed_field_outside_the_text_is_an_edit(analyze):
    one = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a1", "content": "ok"}]}
    ]
    two = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b2", "content": "ok"}]}
    ]
    d = _drift(
        analyze(
            [
                {"messages": one, "system": SYSTEM},
                {"messages": [*two, *_msgs(2)[1:]], "system": SYSTEM},
            ]
        )
    )
    assert d["cause"] == "content_edited"
    assert "same text, other JSON fields" in d["detail"]


def test_dropped_thinking_blocks_are_named(analyze):
    thinking = {"type": "thinking", "thinking": "Let me look.", "signature": "c2ln"}
    answer = {"type": "text", "text": "Done."}
    first = [
        _msgs(1)[0],
        {"role": "assistant", "content": [thinking, answer]},
        {"role": "user", "content": "next"},
    ]
    second = [
        _msgs(1)[0],
        {"role": "assistant", "content": [answer]},
        {"role": "user", "content": "next"},
    ]
    d = _drift(
        analyze([{"messages": first, "system": SYSTEM}, {"messages": second, "system": SYSTEM}])
    )
    assert (d["cause"], d["label"]) == ("content_edited", "assistant#1")
    assert "thinking block(s) dropped" in d["detail"]


def test_a_string_turned_text_block_is_serialization_only(analyze):
    first = [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}]
    second = [
        {"role": "user", "content": [{"type": "text", "text": "hello there"}]},
        {"role": "assistant", "content": "hi"},
    ]
    d = _drift(
        analyze([{"messages": first, "system": SYSTEM}, {"messages": second, "system": SYSTEM}])
    )
    assert (d["cause"], d["label"]) == ("serialization_only", "user#0")
    assert "once as a string and once as a text block" in d["detail"]


def test_the_main_conversation_is_the_root_even_after_side_calls(analyze, anthropic_body):
    # a raw Claude Code capture: Haiku side calls (one of them a short conversation of
    # its own) come first, then the main Sonnet conversation (issue 20, item 3)
    quota = anthropic_body([{"role": "user", "content": "quota"}], model="claude-haiku-4-5")
    topic = [
        anthropic_body(_msgs(n)[:n], model="claude-haiku-4-5", system=[]) for n in (1, 3, 5, 7)
    ]
    main = [anthropic_body(_msgs(n), system=SYSTEM, tools=TOOLS) for n in (1, 3, 5)]
    a = analyze([_line(quota), *map(_line, topic), *map(_line, main), _line(quota)])
    threads = a.calls["thread"].to_list()
    parents = dict(zip(threads, a.calls["parent_thread"].to_list(), strict=True))
    assert threads[5:8] == ["main"] * 3  # fewer calls, but the conversation that matters
    assert parents["main"] is None
    assert all(parents[t] == "main" for t in set(threads) - {"main"})
    # the quota probe sent twice is one side call; the topic conversation another
    # (the topic conversation's words say nothing of its purpose: named by its model)
    assert {t for t in threads if t != "main"} == {
        "side call: quota probe",
        "side call claude-haiku-4-5",
    }
