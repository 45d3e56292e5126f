"""A call's blocks as OpenAI chat messages: what ``cacheviz replay`` and the lab send an engine.

The system blocks and the tool definitions (as JSON lines under ``# Tools``) make the
system message; each message block becomes one message of its role (``user`` for roles
a chat template may refuse: ``tool``, ``developer``, ...), its text as the tokenizer sees
it (:func:`cacheviz.request._blocks.render_text`). The same block gives the same text on
every call, so a prefix that was stable in the session stays stable on the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cacheviz.request._blocks import render_text

if TYPE_CHECKING:
    from cacheviz.model import Call, Content

CHAT_ROLES = frozenset({"system", "user", "assistant"})


def chat_messages(call: Call, contents: dict[str, Content]) -> list[dict[str, str]]:
    """The call's blocks as chat messages (see the module docstring)."""
    system: list[str] = []
    tools: list[str] = []
    messages: list[dict[str, str]] = []
    for block in call.blocks:
        role, text = render_text(contents[block.hash])
        if block.part == "tools":
            tools.append(text)
        elif block.part == "system" and role in (None, "system", "developer"):
            system.append(text)
        else:
            messages.append({"role": role if role in CHAT_ROLES else "user", "content": text})
    head = "\n\n".join(system)
    if tools:
        head = (head + "\n\n" if head else "") + "# Tools\n" + "\n".join(tools)
    return ([{"role": "system", "content": head}] if head else []) + messages
