"""Cut a provider request body into ordered blocks, in the provider's cache order.

* Anthropic Messages: ``tools`` → ``system`` → ``messages`` (documented cache order).
* OpenAI Chat Completions and Responses: leading system/developer instructions →
  ``tools`` → the conversation. OpenAI does not document the order it renders tools in;
  its harmony format puts the instructions before the tool namespace, so we do too.

Every block keeps the bytes it was sent with (see :mod:`cacheviz.request._jsonspan`); the text
handed to the tokenizer is the provider-visible content (message text, tool call
arguments, tool schemas as compact JSON in their own key order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cacheviz import providers
from cacheviz._util.seq import common_prefix
from cacheviz.errors import RenderError as RenderError  # re-exported: readers catch it
from cacheviz.model import Block, Content, Part
from cacheviz.request._jsonspan import Element, ObjectScan, json_type

APIS = ("messages", "chat.completions", "responses")
BLOCK_KEYS: dict[str, frozenset[str]] = {
    "messages": frozenset({"tools", "system", "messages"}),
    "chat.completions": frozenset({"tools", "messages"}),
    "responses": frozenset({"tools", "instructions", "input"}),
}
_SYSTEM_ROLES = frozenset({"system", "developer"})
_MEDIA_TYPES = frozenset(
    {"image", "image_url", "input_image", "document", "file", "input_file", "input_audio"}
)


def infer_api(provider: str, keys: set[str]) -> str:
    """Guess the API of a request body from its provider and top-level keys."""
    if "input" in keys and "messages" not in keys:
        return "responses"
    found = providers.find(provider)
    if (found is not None and found.api == "messages") or "system" in keys:
        return "messages"
    return "chat.completions"


DIRECTIVES = frozenset({"cache_control", "prompt_cache_breakpoint"})


def without_directives(value: Any) -> Any:
    """``value`` with cache directives removed at any depth (see ``_jsonspan.digest``)."""
    if isinstance(value, dict):
        return {k: without_directives(v) for k, v in value.items() if k not in DIRECTIVES}
    if isinstance(value, list):
        return [without_directives(v) for v in value]
    return value


def compact_json(value: Any) -> str:
    """Serialize ``value`` compactly, keeping its key order (which providers do see)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tool_label(value: Any, position: int) -> str:
    if isinstance(value, dict):
        function = value.get("function")
        if isinstance(function, dict) and isinstance(name := function.get("name"), str):
            return name
        for key in ("name", "type"):
            if isinstance(label := value.get(key), str):
                return label
    return f"tool[{position}]"


def _message_role(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("role", "type"):
            if isinstance(role := value.get(key), str):
                return role
    return "item"


@dataclass
class BlockStore:
    """The session's distinct block contents (by hash) and Block objects (by id)."""

    contents: dict[str, Content] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)

    def add(self, part: Part, position: int, label: str, element: Element, kind: str) -> Block:
        """Register a new Block (and its content, if unseen)."""
        if element.hash not in self.contents:
            self.contents[element.hash] = Content(element.raw, element.value, kind)
        block = Block(len(self.blocks), part, position, label, element.hash)
        self.blocks.append(block)
        return block


# part, its elements, their kinds (one for all, or one each), and the block member whose
# element list the part is as a whole (its first ``scan.reused[key]`` elements are then
# those of the reference)
_Sources = list[tuple[Part, list[Element], str | list[str], str | None]]
# a rendered part: its elements, where its blocks start in the call's list, and the
# (position, TTL) of its directives
_RenderedPart = tuple[list[Element], int, list[tuple[int, int]]]
# what a rendered request leaves for the next: its parts, blocks and hashes
_Rendered = tuple[dict[str, _RenderedPart], list[Block], list[str]]


_OBJECTS_ONLY = ("tools", "messages")  # arrays of objects, never a bare string or number
_TEXT_ALLOWED = ("system", "instructions", "input")
_ALL_BLOCK_KEYS = frozenset().union(*BLOCK_KEYS.values())


def _check_types(scan: ObjectScan, trusted: bool) -> None:
    """Refuse block members of the wrong JSON type instead of dropping or mis-reading them.

    ``trusted``: the scan's reference passed this check, so the elements taken over
    from it (``scan.reused``) are not looked at again.
    """
    for member in scan.members:
        if not member.is_block and member.key in _ALL_BLOCK_KEYS and member.value is not None:
            text = "a string or " if member.key in _TEXT_ALLOWED else ""
            got = json_type(member.value)
            msg = f"field `request.{member.key}` is {got}; expected {text}an array"
            raise RenderError(msg, f"request.{member.key}")
    for key in _OBJECTS_ONLY:
        elements = scan.blocks.get(key, [])
        for position in range(scan.reused.get(key, 0) if trusted else 0, len(elements)):
            element = elements[position]
            if isinstance(element.value, dict):
                continue
            whole = any(m.key == key and m.start == element.start for m in scan.members)
            where = key if whole else f"{key}[{position}]"
            wanted = "an array of objects" if whole else "an object"
            msg = f"field `request.{where}` is {json_type(element.value)}; expected {wanted}"
            raise RenderError(msg, f"request.{where}")


def _sources(api: str, scan: ObjectScan, trusted: bool) -> _Sources:
    _check_types(scan, trusted)
    tools = scan.blocks.get("tools", [])
    if api == "messages":
        messages = scan.blocks.get("messages")
        if not messages:
            msg = "request has no `messages` (an Anthropic Messages body needs at least one)"
            raise RenderError(msg, "request.messages")
        system = scan.blocks.get("system", [])
        return [
            ("tools", tools, "tool", "tools"),
            ("system", system, "system", "system"),
            ("messages", messages, "message:messages", "messages"),
        ]
    key = "messages" if api == "chat.completions" else "input"
    conversation = scan.blocks.get(key, [])
    if not conversation:
        msg = f"request has no `{key}` (a {api} body needs at least one message)"
        raise RenderError(msg, f"request.{key}")
    kind = f"message:{api}"
    leading = 0
    while (
        leading < len(conversation) and _message_role(conversation[leading].value) in _SYSTEM_ROLES
    ):
        leading += 1
    instructions = scan.blocks.get("instructions", [])
    system = instructions + conversation[:leading]
    kinds = ["system"] * len(instructions) + [kind] * leading
    rest = conversation[leading:]
    return [
        ("system", system, kinds, None),
        ("tools", tools, "tool", "tools"),
        ("messages", rest, kind, None),
    ]


def _label(part: Part, position: int, element: Element) -> str:
    if part == "tools":
        return _tool_label(element.value, position)
    if part == "system":
        return f"system[{position}]"
    role = "user" if isinstance(element.value, str) else _message_role(element.value)
    return f"{role}#{position}"


@dataclass(slots=True)
class Rendered:
    """A request's blocks, their hashes, and where the conversation starts."""

    blocks: list[Block]
    hashes: list[str]
    message_start: int
    breakpoints: list[tuple[int, int]]  # (block index, TTL seconds) of cache directives


def _same_leading(new: list[Element], old: list[Element]) -> int:
    """How many leading elements of ``new`` are the very objects of ``old``.

    The scanner takes elements over in order, so identity holds up to a point and fails
    after it: the point is found by halving and confirmed with one C-speed compare (a
    list compares its elements by identity first, and elements equal only themselves);
    the general search runs when the guess is not confirmed.
    """
    n = min(len(new), len(old))
    low, high = 0, n
    while low < high:
        mid = (low + high + 1) // 2
        if new[mid - 1] is old[mid - 1]:
            low = mid
        else:
            high = mid - 1
    if (low == n or new[low] is not old[low]) and new[:low] == old[:low]:
        return low
    return common_prefix(new, old)


def blocks_from_scan(api: str, scan: ObjectScan, store: BlockStore) -> Rendered:
    """Return the request's blocks in cache order, registering new ones in ``store``.

    Blocks whose elements the scanner re-used from its reference request are taken
    from that request's blocks (same objects), so the work per request grows with its
    new blocks only.

    Parameters
    ----------
    api
        One of :data:`APIS`.
    scan
        The scanned request body (its block members split by :data:`BLOCK_KEYS`).
    store
        The session's block store.

    Returns
    -------
    Rendered

    Raises
    ------
    RenderError
        When the body has no conversation (no ``messages``/``input``).
    """
    # the reference's parts, set once it rendered (so its elements passed the checks)
    ref = scan.ref
    previous: _Rendered | None = ref.rendered if ref is not None else None
    scan.ref = None  # keep no chain of scans alive
    old_parts, old_blocks, old_hashes = previous if previous is not None else ({}, [], [])
    parts: dict[str, _RenderedPart] = {}
    # The call's blocks start with the reference's first ``prefix`` blocks while every
    # part so far was taken over whole at the same place (the usual case: tools and
    # system unchanged): one slice of the reference's list then, made when that ends.
    prefix = 0
    blocks: list[Block] | None = None
    hashes: list[str] = []
    breakpoints: list[tuple[int, int]] = []
    message_start = 0
    for part, elements, kinds, key in _sources(api, scan, previous is not None):
        offset = prefix if blocks is None else len(blocks)
        shared = 0
        marks: list[tuple[int, int]] = []  # (position in the part, TTL) of directives
        if part in old_parts:
            old_elements, old_offset, old_marks = old_parts[part]
            if key is not None and ref is not None and old_elements is ref.blocks.get(key):
                shared = scan.reused.get(key, 0)  # taken over in order; the rest is new
            else:
                shared = _same_leading(elements, old_elements)
            marks = [mark for mark in old_marks if mark[0] < shared]
            if blocks is None and old_offset == offset:
                prefix += shared
            else:
                if blocks is None:
                    blocks, hashes = old_blocks[:prefix], old_hashes[:prefix]
                blocks += old_blocks[old_offset : old_offset + shared]
                hashes += old_hashes[old_offset : old_offset + shared]
        if shared < len(elements):
            fresh: list[Block] = []
            for position in range(shared, len(elements)):
                element = elements[position]
                kind = kinds if isinstance(kinds, str) else kinds[position]
                label = _label(part, position, element)
                fresh.append(store.add(part, position, label, element, kind))
                if element.ttl:
                    marks.append((position, element.ttl))
            if blocks is None:  # lists of the exact size (appends over-allocate, by 1/8)
                blocks = old_blocks[:prefix] + fresh
                hashes = old_hashes[:prefix] + [block.hash for block in fresh]
            else:
                blocks += fresh
                hashes += [block.hash for block in fresh]
        parts[part] = (elements, offset, marks)
        breakpoints += [(offset + j, ttl) for j, ttl in marks]
        if part == "messages":
            message_start = offset
    if blocks is None:
        blocks, hashes = old_blocks[:prefix], old_hashes[:prefix]
    scan.rendered = (parts, blocks, hashes)
    return Rendered(blocks, hashes, message_start, breakpoints)


def _text_of_part(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return compact_json(part)
    kind = part.get("type")
    if not isinstance(kind, str):
        return compact_json(part)
    if kind in ("text", "input_text", "output_text", "summary_text", "reasoning_text"):
        return str(part.get("text", ""))
    if kind in ("tool_use", "server_tool_use"):
        return f"{part.get('name', '')}\n{compact_json(part.get('input'))}"
    if kind == "tool_result" or kind == "function_call_output":
        return _text_of_content(part.get("content", part.get("output")))
    if kind == "function_call":
        return f"{part.get('name', '')}\n{part.get('arguments', '')}"
    if kind == "thinking":
        return str(part.get("thinking", ""))
    if kind == "redacted_thinking":
        return ""
    if kind == "reasoning":
        return _text_of_content(part.get("summary"))
    if kind in _MEDIA_TYPES:
        return f"[{kind}]"
    return compact_json(part)


def _text_of_gemini_part(part: Any) -> str:
    """What the tokenizer sees of one part of a Gemini ``Content`` (``{role, parts}``)."""
    if not isinstance(part, dict) or "type" in part:
        return _text_of_part(part)
    text = part.get("text")
    if isinstance(text, str):
        return text
    for key, payload in (("functionCall", "args"), ("functionResponse", "response")):
        call = part.get(key)
        if isinstance(call, dict):
            return f"{call.get('name', '')}\n{compact_json(call.get(payload))}"
    for key in ("inlineData", "fileData"):
        if isinstance(part.get(key), dict):
            return f"[{key}]"
    return compact_json(part)


def _text_of_content(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        return "\n".join(_text_of_part(p) for p in content)
    return _text_of_part(content)


def render_text(content: Content) -> tuple[str | None, str]:
    """Return ``(role, text)``: what the tokenizer sees of one block.

    ``role`` is set for conversation messages (the tokenizer wraps them in message
    markers) and ``None`` for tools and system text.
    """
    value = content.value
    if content.kind == "tool":
        return None, compact_json(value)
    if content.kind == "system":
        return None, _text_of_part(value)
    if isinstance(value, str):
        return "user", value
    if not isinstance(value, dict):
        return "item", compact_json(value)
    role = _message_role(value)
    if "role" in value:
        if "content" not in value and isinstance(value.get("parts"), list):
            return role, "\n".join(_text_of_gemini_part(p) for p in value["parts"])
        pieces = [_text_of_content(value.get("content"))]
        calls = value.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function", {}) if isinstance(call, dict) else {}
            if isinstance(function, dict):
                pieces.append(f"{function.get('name', '')}\n{function.get('arguments', '')}")
        if isinstance(value.get("function_call"), dict):
            function = value["function_call"]
            pieces.append(f"{function.get('name', '')}\n{function.get('arguments', '')}")
        return role, "\n".join(p for p in pieces if p)
    return role, _text_of_part(value)
