"""The drift causes and their details as docs/analysis.md ("Drifts") states them.

Each case is a two-call Anthropic thread whose second request changes one thing; the
cause and the detail are the documented ones: tools compared by name (removed, added,
another order, at most four names shown), a changed segment's old → new text cut to a
short window, volatile values named by their kind. These were found untested by mutation
(docs/performance.md, "Mutation testing").
"""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.prefix._diagnose import _VOLATILE, _volatile

MODEL = "claude-sonnet-4-5"
NAMES = ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "WebFetch"]
SNIPPET = 40  # characters of old and new text a detail quotes


def _tool(name: str, note: str = "") -> dict:
    return {
        "name": name,
        "description": f"{name} tool. {note}",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }


TASK = {"role": "user", "content": "Please fix the parser in src/parse.py."}


def _body(tools=None, messages=None, system="You are a coding agent.") -> dict:
    body = {"model": MODEL, "max_tokens": 1024, "system": system}
    if tools is not None:
        body["tools"] = tools
    body["messages"] = messages or [TASK]
    return body


def _drift(tmp_path, first: dict, second: dict) -> dict:
    """The one drift of call 1 of the thread ``first`` → ``second``."""
    # one thread as the transcript says (the grouping is not under test here)
    lines = [
        json.dumps(
            {
                "ts": f"2026-05-04T09:00:{s:02d}Z",
                "provider": "anthropic",
                "model": MODEL,
                "request": b,
                "meta": {"thread": "main"},
            }
        )
        for s, b in ((0, first), (30, second))
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    analysis = cacheviz.load(path).analyze()
    assert analysis.calls["thread"].n_unique() == 1
    (drift,) = analysis.drifts.iter_rows(named=True)
    assert drift["call"] == 1
    return drift


# -- tools, compared by name -----------------------------------------------------------------


def test_the_same_tools_in_another_order_are_a_reorder_naming_the_first_out_of_place(tmp_path):
    tools = [_tool(n) for n in NAMES]
    shuffled = [tools[0], tools[2], tools[1], *tools[3:]]
    drift = _drift(tmp_path, _body(tools), _body(shuffled))
    assert (drift["cause"], drift["part"]) == ("reorder", "tools")
    assert drift["detail"] == "the same 8 tools in another order (first out of place: Glob)"


def test_reordered_tools_of_which_one_was_also_edited_say_so(tmp_path):
    tools = [_tool(n) for n in NAMES]
    shuffled = [tools[0], tools[2], _tool("Bash", "Now with a timeout."), *tools[3:]]
    drift = _drift(tmp_path, _body(tools), _body(shuffled))
    assert drift["cause"] == "reorder"
    assert drift["detail"] == (
        "the same 8 tools in another order (and edited) (first out of place: Glob)"
    )


def test_up_to_four_removed_tools_are_all_named_more_are_cut_with_an_ellipsis(tmp_path):
    tools = [_tool(n) for n in NAMES]
    four = _drift(tmp_path, _body(tools), _body([*tools[:4]]))
    assert four["cause"] == "block_removed"
    assert four["detail"] == "4 tool(s) removed (Read, Edit, Write, WebFetch): 8 → 4 tools"
    five = _drift(tmp_path, _body(tools), _body([*tools[:3]]))
    assert five["detail"] == "5 tool(s) removed (Grep, Read, Edit, Write, …): 8 → 3 tools"


def test_added_tools_are_a_block_added_with_their_names(tmp_path):
    tools = [_tool(n) for n in NAMES[:5]]
    more = [tools[0], _tool("Edit"), _tool("Write"), *tools[1:]]
    drift = _drift(tmp_path, _body(tools), _body(more))
    assert (drift["cause"], drift["part"]) == ("block_added", "tools")
    assert drift["detail"] == "2 tool(s) added (Edit, Write): 5 → 7 tools"


def test_a_renamed_tool_is_one_removed_and_one_added(tmp_path):
    tools = [_tool(n) for n in NAMES[:4]]
    renamed = [tools[0], _tool("Shell"), *tools[2:]]
    drift = _drift(tmp_path, _body(tools), _body(renamed))
    assert drift["cause"] == "block_removed"  # as many removed as added
    assert drift["detail"] == "1 tool(s) removed (Bash); 1 tool(s) added (Shell): 4 → 4 tools"
    two_for_one = [tools[0], _tool("Shell"), _tool("Zsh"), *tools[2:]]
    assert _drift(tmp_path, _body(tools), _body(two_for_one))["cause"] == "block_added"


# -- a changed segment: old → new, cut to a short window -------------------------------------


def _said(text: str) -> list[dict]:
    return [TASK, {"role": "assistant", "content": text}, {"role": "user", "content": "go on"}]


LONG = "The parser fails on nested brackets because the stack is reset too early in the loop."


def test_an_edit_quotes_forty_characters_of_each_side_from_the_edit_on(tmp_path):
    edited = LONG.replace("nested", "unbalanced")
    drift = _drift(tmp_path, _body(messages=_said(LONG)), _body(messages=_said(edited)))
    assert drift["cause"] == "content_edited"
    at = LONG.index("nested")
    assert drift["byte_offset"] == json.dumps(_said(LONG)[1]).index("nested")
    assert drift["detail"] == (
        f"assistant#1: edited at character {at}: "
        f"{LONG[at : at + SNIPPET] + '…'!r} → {edited[at : at + SNIPPET] + '…'!r}"
    )


def test_a_short_rest_is_quoted_whole_without_an_ellipsis(tmp_path):
    old, new = LONG + " Fix it.", LONG + " Done."
    drift = _drift(tmp_path, _body(messages=_said(old)), _body(messages=_said(new)))
    at = len(LONG) + 1
    assert drift["detail"] == f"assistant#1: edited at character {at}: 'Fix it.' → 'Done.'"


def test_text_appended_and_text_removed_inside_a_segment(tmp_path):
    tail = " Then rerun the whole test suite with the coverage report switched on."
    grown = _drift(tmp_path, _body(messages=_said(LONG)), _body(messages=_said(LONG + tail)))
    assert grown["detail"] == (
        f"assistant#1: text appended inside the segment: {tail[:SNIPPET] + '…'!r}"
    )
    cut = _drift(tmp_path, _body(messages=_said(LONG + " Done.")), _body(messages=_said(LONG)))
    assert cut["detail"] == "assistant#1: trailing text removed: ' Done.'"


# -- volatile values, named by their kind ----------------------------------------------------


def test_a_date_replaced_by_a_number_is_an_edit_not_a_volatile_value(tmp_path):
    old, new = "Report for 2026-05-04: all green.", "Report for 42: all green."
    drift = _drift(tmp_path, _body(messages=_said(old)), _body(messages=_said(new)))
    assert drift["cause"] == "content_edited"
    same_kind = _drift(
        tmp_path,
        _body(messages=_said(old)),
        _body(messages=_said(old.replace("05-04", "05-05"))),
    )
    assert same_kind["cause"] == "volatile_value"
    assert same_kind["detail"] == "assistant#1: date changed: '2026-05-04' → '2026-05-05'"
    # the first differing byte of the message as sent (its JSON), where "05-04" became "05-05"
    raw = json.dumps(_said(old)[1])
    assert same_kind["byte_offset"] == raw.index("05-04") + 4


def _whole_text_answer(old: str, new: str) -> str | None:
    """The volatile-value answer from masking both texts whole (no window)."""

    def mask(text: str) -> str:
        return _VOLATILE.sub(lambda m: f"\x00{m.lastgroup}\x00", text)

    if mask(old) != mask(new):
        return None
    for a, b in zip(_VOLATILE.finditer(old), _VOLATILE.finditer(new), strict=True):
        if a.group() != b.group():
            return f"{a.lastgroup} changed: {a.group()!r} → {b.group()!r}"
    return None


PIECES = [
    "cache",
    "prefix ",
    " ",
    "\n",
    "x" * 70,  # longer than the window's margin
    "word " * 15,
    "7",
    "42",
    "09:15",
    "2026-05-04",
    "2026-05-04T09:15:00Z",
    "1/2/26",
    "deadbeefdeadbeef00",
    "123e4567-e89b-12d3-a456-426614174000",
]
texts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=14)


@settings(max_examples=400, deadline=None)
@given(pieces=texts, at=st.integers(0, 13), other=st.sampled_from(PIECES))
def test_the_window_gives_the_answer_of_masking_the_whole_texts(pieces, at, other):
    # masking only the differing region (plus a margin) is an optimization: the answer is
    # the one masking both texts whole gives
    old = "".join(pieces)
    changed = [*pieces]
    changed[at % len(pieces)] = other
    new = "".join(changed)
    if old == new:
        return
    assert _volatile(old, new) == _whole_text_answer(old, new)


def test_the_window_keeps_a_value_at_the_very_start_and_end_whole():
    assert _volatile("2026-05-04T09:15:00Z ok", "2026-05-04T09:16:00Z ok") == (
        "timestamp changed: '2026-05-04T09:15:00Z' → '2026-05-04T09:16:00Z'"
    )
    assert _volatile("ok " + "y" * 80 + " 1234", "ok " + "y" * 80 + " 1299") == (
        "counter changed: '1234' → '1299'"
    )
    assert re.fullmatch(
        r"uuid changed: .*", _volatile("id deadbeefdeadbeef1", "id deadbeefdeadbeef2")
    )


# -- same content in other bytes, dropped thinking, stripped tails ---------------------------


def test_a_string_turned_into_one_text_block_is_serialization_only(tmp_path):
    as_string = _said(LONG)
    as_block = [
        TASK,
        {"role": "assistant", "content": [{"type": "text", "text": LONG}]},
        _said("")[2],
    ]
    drift = _drift(tmp_path, _body(messages=as_string), _body(messages=as_block))
    assert drift["cause"] == "serialization_only"
    assert drift["detail"] == (
        "assistant#1: the same content, once as a string and once as a text block"
    )


THINKING = {"type": "thinking", "thinking": "The stack resets early.", "signature": "c2lnbmF0dXJl"}


def _answered(*content: dict) -> list[dict]:
    return [
        TASK,
        {"role": "assistant", "content": list(content)},
        {"role": "user", "content": "ok"},
    ]


def test_thinking_dropped_from_an_earlier_assistant_turn(tmp_path):
    text = {"type": "text", "text": LONG}
    drift = _drift(
        tmp_path, _body(messages=_answered(THINKING, text)), _body(messages=_answered(text))
    )
    assert drift["cause"] == "content_edited"
    assert drift["detail"] == (
        "assistant#1: thinking block(s) dropped from an earlier assistant turn (Haiku, and "
        "Opus/Sonnet before 4.5/4.6, strip them after a new user turn)"
    )
    # dropped and the text edited too: an edit, not the thinking rule
    other = {"type": "text", "text": LONG.replace("nested", "unbalanced")}
    edited = _drift(
        tmp_path, _body(messages=_answered(THINKING, text)), _body(messages=_answered(other))
    )
    assert "thinking" not in edited["detail"]
    # nothing dropped, a block added: not the thinking rule either
    grown = _drift(
        tmp_path, _body(messages=_answered(text)), _body(messages=_answered(THINKING, text))
    )
    assert "thinking" not in grown["detail"]


def _user_then(content_before, content_after):
    later = [{"role": "assistant", "content": "Looking."}, {"role": "user", "content": "go on"}]
    first = [{"role": "user", "content": content_before}]
    second = [{"role": "user", "content": content_after}, *later]
    return _body(messages=first), _body(messages=second)


ASK = {"type": "text", "text": "Please fix the parser in src/parse.py."}


def test_a_stripped_tagged_tail_is_named_by_its_tag_even_when_the_rest_became_a_string(tmp_path):
    reminder = {"type": "text", "text": "<system-reminder>\nToday is Monday.\n</system-reminder>"}
    first, second = _user_then([ASK, reminder], ASK["text"])
    drift = _drift(tmp_path, first, second)
    assert drift["cause"] == "env_details_stripped"
    assert drift["detail"] == (
        "user#0: <system-reminder> was the tail of this message when it was sent last and is "
        "gone now (move volatile details into a new last block instead of editing history)"
    )


def test_a_stripped_untagged_tail_block_is_a_trailing_block(tmp_path):
    note = {"type": "text", "text": "Current directory: /src"}
    drift = _drift(tmp_path, *_user_then([ASK, note], [ASK]))
    assert drift["cause"] == "env_details_stripped"
    assert drift["detail"].startswith("user#0: a trailing block was the tail of this message")


def test_a_stripped_tagged_tail_inside_one_string_is_named_by_its_tag(tmp_path):
    text = ASK["text"]
    drift = _drift(
        tmp_path, *_user_then(text + "\n<environment_details>\nnow\n</environment_details>", text)
    )
    assert drift["cause"] == "env_details_stripped"
    assert drift["detail"].startswith("user#0: <environment_details> was the tail")


def _raw_drift(tmp_path, first: str, second: str) -> dict:
    """The drift between two requests given as raw JSON text (bytes are what a provider sees)."""
    lines = [
        f'{{"ts": "2026-05-04T09:00:{s:02d}Z", "provider": "anthropic", "model": "{MODEL}", '
        f'"request": {raw}}}'
        for s, raw in ((0, first), (30, second))
    ]
    path = tmp_path / "raw.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (drift,) = cacheviz.load(path).analyze().drifts.iter_rows(named=True)
    return drift


def _raw_body(message: str) -> str:
    return (
        f'{{"model": "{MODEL}", "max_tokens": 1024, "system": "You are a coding agent.", '
        f'"messages": [{json.dumps(TASK)}, {message}, {{"role": "user", "content": "go on"}}]}}'
    )


def test_other_bytes_for_the_same_json_name_the_first_differing_byte(tmp_path):
    ascii_escaped = '{"role": "assistant", "content": "Caf\\u00e9 fixed."}'
    plain = '{"role": "assistant", "content": "Café fixed."}'
    drift = _raw_drift(tmp_path, _raw_body(ascii_escaped), _raw_body(plain))
    assert drift["cause"] == "serialization_only"
    at = ascii_escaped.index("\\u00e9")
    assert drift["byte_offset"] == at
    assert drift["detail"] == (
        f"assistant#1: same JSON, other bytes (whitespace or escaping) from byte {at}"
    )


def test_the_same_message_with_its_keys_in_another_order(tmp_path):
    one = '{"role": "assistant", "content": "Fixed."}'
    other = '{"content": "Fixed.", "role": "assistant"}'
    drift = _raw_drift(tmp_path, _raw_body(one), _raw_body(other))
    assert drift["cause"] == "serialization_only"
    assert drift["detail"] == "assistant#1: same JSON, keys in another order"
    assert drift["byte_offset"] == 2  # '{"' is shared, then "role" vs "content"


def test_a_field_added_next_to_the_same_content_is_an_edit_of_other_json_fields(tmp_path):
    content = [{"type": "text", "text": LONG}]
    plain = [TASK, {"role": "assistant", "content": content}, _said("")[2]]
    named = [TASK, {"role": "assistant", "content": content, "name": "bot"}, _said("")[2]]
    drift = _drift(tmp_path, _body(messages=plain), _body(messages=named))
    assert drift["cause"] == "content_edited"
    # quoted from where the compact JSON of the two differs: the new field before the "}"
    assert drift["detail"] == (
        "assistant#1: same text, other JSON fields: '}' → ',\"name\":\"bot\"}'"
    )


def test_a_shorter_message_whose_first_block_changed_is_not_a_stripped_tail(tmp_path):
    note = {"type": "text", "text": "<system-reminder>\nToday is Monday.\n</system-reminder>"}
    other = {"type": "text", "text": "Please fix the lexer in src/lex.py."}
    reply = {"role": "assistant", "content": "Looking."}
    first = [TASK, reply, {"role": "user", "content": [ASK, note]}]
    second = [TASK, reply, {"role": "user", "content": [other]}, reply, _said("")[2]]
    drift = _drift(tmp_path, _body(messages=first), _body(messages=second))
    assert drift["label"] == "user#2"
    assert drift["cause"] == "content_edited"


def test_a_stripped_trailing_image_is_a_trailing_block(tmp_path):
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    drift = _drift(tmp_path, *_user_then([ASK, image], [ASK]))
    assert drift["cause"] == "env_details_stripped"
    assert drift["detail"].startswith("user#0: a trailing block was the tail")


# -- segments removed, inserted, reordered, replaced -----------------------------------------


def _turn(i: int) -> dict:
    role = "user" if i % 2 == 0 else "assistant"
    return {"role": role, "content": f"turn {i}: " + " ".join(f"w{i}x{j}" for j in range(12))}


def _messages(*turns: int) -> dict:
    return _body(messages=[_turn(i) for i in turns])


def test_a_request_that_stops_early_names_the_segments_gone(tmp_path):
    drift = _drift(tmp_path, _messages(0, 1, 2, 3, 4), _messages(0, 1, 2))
    assert drift["cause"] == "block_removed"
    assert drift["detail"] == (
        "the request stops where the previous one went on: 2 segment(s) from assistant#3 on "
        "are gone"
    )


def test_one_message_removed_from_the_middle(tmp_path):
    drift = _drift(tmp_path, _messages(0, 1, 2, 3, 4), _messages(0, 1, 3, 4, 5, 6))
    assert (drift["cause"], drift["detail"]) == ("block_removed", "1 segment(s) removed: user#2")


def test_one_message_inserted_in_the_middle(tmp_path):
    drift = _drift(tmp_path, _messages(0, 1, 2, 3, 4), _messages(0, 1, 9, 2, 3, 4, 5, 6))
    assert (drift["cause"], drift["detail"]) == (
        "block_added",
        "1 segment(s) inserted: assistant#2",
    )


def test_messages_in_another_order_are_a_reorder(tmp_path):
    drift = _drift(tmp_path, _messages(0, 1, 2, 3, 4), _messages(0, 1, 4, 3, 2, 5, 6))
    assert drift["cause"] == "reorder"
    assert drift["detail"] == (
        "3 messages segments are the same but in another order (first out of place: user#2)"
    )


def test_messages_dropped_from_the_front(tmp_path):
    drift = _drift(tmp_path, _messages(0, 1, 2, 3, 4), _messages(2, 3, 4, 5, 6))
    assert drift["cause"] == "truncated_front"
    assert drift["detail"] == (
        "2 message(s) dropped from the front of the history (user#0, assistant#1…)"
    )


def test_every_message_from_the_break_on_replaced_is_history_replaced(tmp_path):
    drift = _drift(tmp_path, _messages(0, 1, 2, 3, 4), _messages(0, 11, 12, 13))
    assert drift["cause"] == "history_replaced"
    assert drift["detail"] == (
        "4 message(s) from assistant#1 on were replaced by 3 other(s) (compaction or a new "
        "conversation)"
    )
    # one of them kept: not a replaced history
    kept = _drift(tmp_path, _messages(0, 1, 2, 3, 4), _messages(0, 11, 12, 3))
    assert kept["cause"] != "history_replaced"
