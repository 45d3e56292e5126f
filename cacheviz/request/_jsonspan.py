"""Locate the exact source span of every block of a JSON request body.

A provider sees the bytes a client sent, not a re-serialization of them. To hash each
block "as sent", we walk the JSON text ourselves and let the C-accelerated scanner of the
standard library parse one value at a time: ``scan_once(text, pos)`` returns the parsed
value *and* the index where it ends, so every block comes with its source span for free.

Agent sessions repeat themselves: request N is mostly request N-1 plus a few new messages.
:func:`scan_object` therefore accepts a *reference* scan (usually the previous request) and
resumes after the longest common text prefix, re-using the spans, values and digests of
the blocks that lie entirely inside it. The parse is left-to-right and deterministic, so a
block whose source ends inside the common prefix is byte-identical in both requests.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cacheviz._util.seq import common_prefix
from cacheviz.errors import JSONSyntaxError as JSONSyntaxError  # re-exported: readers catch it
from cacheviz.providers.anthropic import automatic_ttl
from cacheviz.providers.openai import BREAKPOINT_TTL

_WS = re.compile(r"[ \t\n\r]*")
# JSONDecoder sets scan_once in __init__; typeshed does not declare it
_SCANNER: Callable[[str, int], tuple[Any, int]] = json.decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]


# Cache directives steer caching but are not part of the cached prefix: Anthropic moves
# `cache_control` to the newest message on every call and still hits. Their values are
# flat objects ({"type": "ephemeral", "ttl": "1h"}); a quote inside a string is escaped,
# so an unescaped quoted key is a real member.
_DIRECTIVE = re.compile(
    rb'\s*,\s*(?<!\\)"(?:cache_control|prompt_cache_breakpoint)"\s*:\s*\{[^{}]*\}'
    rb'|(?<!\\)"(?:cache_control|prompt_cache_breakpoint)"\s*:\s*\{[^{}]*\}\s*,?'
)


def digest(raw: bytes) -> str:
    """Return a block's hash: 16 hex digits of SHA-256 (Whale-compatible) over its bytes.

    The bytes are taken as sent, except cache directives (``cache_control``,
    ``prompt_cache_breakpoint``), which mark where to cache rather than what is cached.
    """
    if b"cache_control" in raw or b"prompt_cache_breakpoint" in raw:
        raw = _DIRECTIVE.sub(b"", raw)
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(slots=True, eq=False)
class Element:
    """One element of a block array (or a block-valued string), with its source span.

    Equality is identity: a re-used element is the very object of the reference scan,
    so lists of elements compare at C speed.
    """

    start: int  # relative to the start of the scanned object
    end: int
    value: Any
    hash: str
    raw: bytes  # the source bytes, exactly as sent
    ttl: int | None = None  # seconds, when the element carries a cache directive


@dataclass(slots=True)
class Member:
    """One member of the scanned object: ``key`` and where its value lies."""

    key: str
    key_pos: int  # relative position of the key's opening quote
    start: int
    end: int
    value: Any  # parsed value; None for block members (see ``ObjectScan.blocks``)
    is_block: bool


@dataclass(slots=True)
class ObjectScan:
    """The result of :func:`scan_object` for one JSON object."""

    text: str
    start: int  # absolute index of ``{`` in ``text``
    end: int  # absolute index just after ``}``
    members: list[Member] = field(default_factory=list)
    blocks: dict[str, list[Element]] = field(default_factory=dict)
    reused_chars: int = 0
    ref: ObjectScan | None = None  # the reference scan whose elements were re-used
    # per block member: how many leading elements are the very elements of ``ref``
    reused: dict[str, int] = field(default_factory=dict)
    rendered: Any = None  # room for a consumer to cache what it derived from this scan

    def value(self, key: str, default: Any = None) -> Any:
        """Return the parsed value of the last non-block member called ``key``."""
        for member in reversed(self.members):
            if member.key == key and not member.is_block:
                return member.value
        return default


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type ("a string", "an array", "null", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def skip_ws(text: str, pos: int) -> int:
    """Return the index of the first non-whitespace character at or after ``pos``."""
    return _WS.match(text, pos).end()  # type: ignore[union-attr]  # `[...]*` always matches


def scan_value(text: str, pos: int) -> tuple[Any, int]:
    """Parse one JSON value at ``pos``; return it and the index just after it."""
    try:
        return _SCANNER(text, pos)
    except StopIteration as exc:
        msg = "expected a JSON value"
        raise JSONSyntaxError(msg, exc.value) from None
    except json.JSONDecodeError as exc:
        raise JSONSyntaxError(exc.msg, exc.pos) from None
    except RecursionError:
        msg = "JSON nested too deeply"
        raise JSONSyntaxError(msg, pos) from None


def expect(text: str, pos: int, chars: str, what: str) -> tuple[str, int]:
    pos = skip_ws(text, pos)
    if pos >= len(text) or text[pos] not in chars:
        got = repr(text[pos]) if pos < len(text) else "end of line"
        msg = f"expected {what}, found {got}"
        raise JSONSyntaxError(msg, pos)
    return text[pos], pos + 1


def directive_ttl(value: Any) -> int | None:
    """TTL (seconds) of a cache breakpoint on a block or on one of its content parts.

    Anthropic's ``cache_control`` (5m unless ``ttl: "1h"``) and OpenAI's
    ``prompt_cache_breakpoint`` (GPT-5.6+, 30m) are recognised.
    """
    found = None
    candidates = [value]
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        candidates += value["content"]
    for item in candidates:
        if not isinstance(item, dict):
            continue
        control = item.get("cache_control")
        if isinstance(control, dict):
            found = automatic_ttl(control)
        if isinstance(item.get("prompt_cache_breakpoint"), dict):
            found = BREAKPOINT_TTL
    return found


def _new_element(text: str, start: int, end: int, value: Any, base: int) -> Element:
    raw = text[start:end].encode("utf-8", "surrogatepass")
    marked = b"cache_control" in raw or b"prompt_cache_breakpoint" in raw
    ttl = directive_ttl(value) if marked else None
    return Element(start - base, end - base, value, digest(raw), raw, ttl)


def _scan_array(text: str, pos: int, base: int, out: list[Element], after_element: bool) -> int:
    """Scan array elements into ``out``; ``pos`` is just after ``[`` or after an element."""
    if not after_element:
        pos = skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]":
            return pos + 1
        value, end = scan_value(text, pos)
        out.append(_new_element(text, pos, end, value, base))
        pos = end
    while True:
        char, pos = expect(text, pos, ",]", "',' or ']' in an array")
        if char == "]":
            return pos
        pos = skip_ws(text, pos)
        value, end = scan_value(text, pos)
        out.append(_new_element(text, pos, end, value, base))
        pos = end


def _element_end(element: Element) -> int:
    return element.end


def _resume_point(
    ref: ObjectScan, lcp: int
) -> tuple[list[Member], dict[str, list[Element]], int, Member | None, int]:
    """Return what of ``ref`` can be re-used when the first ``lcp`` chars are identical.

    Returns (members, blocks, resume_pos, open_block_member, reused_chars) with
    ``resume_pos`` relative to the object's start; ``open_block_member`` is set when the
    scan resumes inside a block array (just after its last re-used element).
    """
    members: list[Member] = []
    blocks: dict[str, list[Element]] = {}
    resume = 1  # just after "{"
    for member in ref.members:
        if member.end < lcp:  # the whole member and the byte after it are identical
            members.append(member)
            if member.is_block:
                blocks[member.key] = list(ref.blocks[member.key])
            resume = member.end
            continue
        if member.is_block and member.start < lcp and ref.text[ref.start + member.start] == "[":
            elements = ref.blocks[member.key]
            kept = elements[: bisect.bisect_left(elements, lcp, key=_element_end)]
            if kept:
                partial = Member(member.key, member.key_pos, member.start, -1, None, True)
                members.append(partial)
                blocks[member.key] = kept
                return members, blocks, kept[-1].end, partial, kept[-1].end
        break
    return members, blocks, resume, None, resume


def scan_object(
    text: str,
    pos: int,
    block_keys: frozenset[str],
    refs: Sequence[ObjectScan] = (),
    nested: Mapping[str, Callable[[str, int], tuple[Any, int]]] | None = None,
) -> ObjectScan:
    """Scan the JSON object starting at ``text[pos]``, splitting ``block_keys`` into blocks.

    Parameters
    ----------
    text
        The text holding the object (e.g. one JSONL line).
    pos
        Index of the object's ``{`` (leading whitespace allowed).
    block_keys
        Members whose array elements (or string value) become blocks with spans and hashes.
    refs
        Earlier scans of similar objects; the blocks of the one sharing the longest text
        prefix are re-used up to that prefix instead of being parsed and hashed again.
    nested
        Members scanned by a function of their own, ``fn(text, pos) -> (value, end)``.

    Returns
    -------
    ObjectScan

    Raises
    ------
    JSONSyntaxError
        When the text is not a valid JSON object at ``pos``.
    """
    pos = skip_ws(text, pos)
    if pos >= len(text) or text[pos] != "{":
        msg = "expected a JSON object"
        raise JSONSyntaxError(msg, pos)
    base = pos
    scan = ObjectScan(text, base, -1)
    open_member: Member | None = None
    cursor = base + 1
    best = None
    for candidate in refs:  # most recent first; stop once one covers most of its text
        lcp = common_prefix(text, candidate.text, base, candidate.start)
        if best is None or lcp > best[0]:
            best = (lcp, candidate)
        if 2 * lcp >= candidate.end - candidate.start:
            break
    if best is not None:
        lcp, ref = best
        scan.ref = ref
        members, blocks, rel, open_member, reused = _resume_point(ref, lcp)
        scan.members, scan.blocks, scan.reused_chars = members, blocks, reused
        scan.reused = {key: len(elements) for key, elements in blocks.items()}
        cursor = base + rel
    if open_member is not None:
        end = _scan_array(text, cursor, base, scan.blocks[open_member.key], after_element=True)
        open_member.end = end - base
        cursor = end
    first = not scan.members
    while True:
        if first:
            cursor = skip_ws(text, cursor)
            if cursor < len(text) and text[cursor] == "}":
                scan.end = cursor + 1
                return scan
            first = False
        else:
            char, cursor = expect(text, cursor, ",}", "',' or '}' in an object")
            if char == "}":
                scan.end = cursor
                return scan
        cursor = skip_ws(text, cursor)
        key_pos = cursor
        if cursor >= len(text) or text[cursor] != '"':
            msg = "expected a member name in double quotes"
            raise JSONSyntaxError(msg, cursor)
        key, cursor = scan_value(text, cursor)
        _, cursor = expect(text, cursor, ":", "':' after a member name")
        cursor = skip_ws(text, cursor)
        if key in block_keys:
            elements: list[Element] = []
            start = cursor
            if cursor < len(text) and text[cursor] == "[":
                cursor = _scan_array(text, cursor + 1, base, elements, after_element=False)
            else:
                value, cursor = scan_value(text, cursor)
                if isinstance(value, str):
                    elements.append(_new_element(text, start, cursor, value, base))
                elif value is not None:
                    scan.members.append(
                        Member(key, key_pos - base, start - base, cursor - base, value, False)
                    )
                    continue
            scan.blocks[key] = elements
            scan.members.append(
                Member(key, key_pos - base, start - base, cursor - base, None, True)
            )
        else:
            start = cursor
            if nested is not None and key in nested:
                value, cursor = nested[key](text, cursor)
            else:
                value, cursor = scan_value(text, cursor)
            scan.members.append(
                Member(key, key_pos - base, start - base, cursor - base, value, False)
            )
