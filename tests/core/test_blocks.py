import pytest

from cacheviz.model import Content
from cacheviz.request._blocks import (
    BLOCK_KEYS,
    BlockStore,
    RenderError,
    blocks_from_scan,
    infer_api,
    render_text,
)
from cacheviz.request._jsonspan import scan_object

ALL = frozenset().union(*BLOCK_KEYS.values())


def _blocks(api, text):
    store = BlockStore()
    return blocks_from_scan(api, scan_object(text, 0, ALL), store).blocks, store.contents


def test_anthropic_order_is_tools_system_messages():
    text = (
        '{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}],'
        '"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}],'
        '"tools":[{"name":"bash","input_schema":{}}]}'
    )
    blocks, _ = _blocks("messages", text)
    assert [(b.part, b.position, b.label) for b in blocks] == [
        ("tools", 0, "bash"),
        ("system", 0, "system[0]"),
        ("system", 1, "system[1]"),
        ("messages", 0, "user#0"),
        ("messages", 1, "assistant#1"),
    ]


def test_openai_chat_leading_system_messages_come_before_tools():
    text = (
        '{"messages":[{"role":"system","content":"s"},{"role":"developer","content":"d"},'
        '{"role":"user","content":"u"},{"role":"system","content":"late"}],'
        '"tools":[{"type":"function","function":{"name":"f"}}]}'
    )
    blocks, _ = _blocks("chat.completions", text)
    assert [(b.part, b.label) for b in blocks] == [
        ("system", "system[0]"),
        ("system", "system[1]"),
        ("tools", "f"),
        ("messages", "user#0"),
        ("messages", "system#1"),
    ]


def test_responses_instructions_tools_then_input_items():
    text = (
        '{"instructions":"be brief","tools":[{"type":"function","name":"g"}],'
        '"input":[{"role":"user","content":"q"},{"type":"function_call","name":"g","arguments":"{}"}]}'
    )
    blocks, contents = _blocks("responses", text)
    assert [(b.part, b.label) for b in blocks] == [
        ("system", "system[0]"),
        ("tools", "g"),
        ("messages", "user#0"),
        ("messages", "function_call#1"),
    ]
    assert render_text(contents[blocks[0].hash]) == (None, "be brief")
    assert render_text(contents[blocks[3].hash]) == ("function_call", "g\n{}")


def test_a_string_input_is_one_user_message():
    blocks, contents = _blocks("responses", '{"input":"hello"}')
    assert [(b.part, b.label) for b in blocks] == [("messages", "user#0")]
    assert render_text(contents[blocks[0].hash]) == ("user", "hello")


@pytest.mark.parametrize(
    ("api", "text", "field"),
    [
        ("messages", '{"model":"m","system":"x"}', "request.messages"),
        ("messages", '{"messages":[]}', "request.messages"),
        ("chat.completions", '{"model":"m","tools":[]}', "request.messages"),
        ("responses", '{"instructions":"x"}', "request.input"),
    ],
)
def test_a_request_without_a_conversation_names_the_field(api, text, field):
    with pytest.raises(RenderError) as info:
        _blocks(api, text)
    assert info.value.field == field


def test_tool_use_input_keeps_its_key_order_in_the_rendered_text():
    value = {
        "role": "assistant",
        "content": [{"type": "tool_use", "name": "t", "input": {"b": 1, "a": 2}}],
    }
    assert render_text(Content(b"", value, "message:messages")) == ("assistant", 't\n{"b":1,"a":2}')


def test_tool_results_images_and_thinking_render_as_text():
    value = {
        "role": "user",
        "content": [
            {"type": "tool_result", "content": [{"type": "text", "text": "out"}]},
            {"type": "image", "source": {"data": "AAAA"}},
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        ],
    }
    assert render_text(Content(b"", value, "message:messages")) == ("user", "out\n[image]\nhmm")


def test_infer_api_from_body_keys():
    assert infer_api("openai", {"input", "model"}) == "responses"
    assert infer_api("anthropic", {"messages"}) == "messages"
    assert infer_api("openai", {"messages"}) == "chat.completions"
    assert infer_api("unknown", {"system", "messages"}) == "messages"
