"""A first guess at why a request stopped matching the previous call of its thread.

The guess comes from a closed set (:data:`cacheviz._schema.CAUSES`) and only from what
the bytes show; anything that fits no pattern is ``"unknown"``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from cacheviz._util.seq import common_prefix
from cacheviz.model import Block, Content
from cacheviz.redact import redact_slice
from cacheviz.request._blocks import compact_json, render_text, without_directives

_VOLATILE = re.compile(
    r"(?P<timestamp>\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
    r"(?:Z|[+-]\d{2}:?\d{2})?|\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b)"
    r"|(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\b[0-9a-f]{16,}\b)"
    r"|(?P<date>\d{4}-\d{2}-\d{2}|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
    r"|\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? "
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2},? \d{4}\b)"
    r"|(?P<counter>\d+(?:\.\d+)?)"
)
_SNIPPET = 40
_THINKING = frozenset({"thinking", "redacted_thinking"})
_NAMES_SHOWN = 4
# A trailing block an agent adds to the latest message and strips later: KiloCode's
# <environment_details>, Claude Code's <system-reminder>, or any tagged block.
_TRAILING_TAG = re.compile(r"\s*<(?P<tag>[A-Za-z][\w-]*)[^>]*>")


@dataclass(slots=True, frozen=True)
class Diagnosis:
    """A cause from the closed set, a one-line explanation, and where the bytes differ."""

    cause: str
    detail: str
    byte_offset: int | None = None


def _snip(text: str, start: int) -> str:
    piece = redact_slice(text, start, start + _SNIPPET)  # no piece of a key shows
    return piece + ("…" if len(text) > start + _SNIPPET else "")


def _find_run(haystack: Sequence[object], needle: Sequence[object]) -> int | None:
    """Smallest k >= 1 such that ``haystack[k:]`` and ``needle`` agree on their overlap."""
    if not needle:
        return None
    for k in range(1, len(haystack)):
        if haystack[k] != needle[0]:
            continue
        overlap = min(len(haystack) - k, len(needle))
        if list(haystack[k : k + overlap]) == list(needle[:overlap]):
            return k
    return None


_MARGIN = 64  # characters of context kept around the differing region (a value is shorter)


def _window(old: str, new: str) -> tuple[str, str]:
    """The differing region of two texts, with a margin cut at whitespace.

    Outside it the texts are identical, so masking volatile values there changes nothing:
    only the window is masked (a long system prompt is not scanned whole on every call).
    """
    head = common_prefix(old, new)
    tail = common_prefix(old[::-1], new[::-1], 0, 0, min(len(old), len(new)) - head)
    start = max(0, head - _MARGIN)
    while start > 0 and not old[start - 1].isspace():
        start -= 1
    extra = _MARGIN
    while extra < tail and not old[len(old) - tail + extra].isspace():
        extra += 1
    extra = min(extra, tail)
    return old[start : len(old) - tail + extra], new[start : len(new) - tail + extra]


def _volatile(old: str, new: str) -> str | None:
    """The first volatile value that changed, if only volatile values differ.

    The two windows are equal once every volatile value is masked by its kind when they
    hold the same kinds of value, in the same order, with the same text between them.
    Both are walked match by match and the walk stops at the first text that differs,
    so two unrelated texts cost one match each, not a scan of both.
    """
    old, new = _window(old, new)
    old_matches, new_matches = _VOLATILE.finditer(old), _VOLATILE.finditer(new)
    old_at = new_at = 0
    changed: str | None = None
    while True:
        a, b = next(old_matches, None), next(new_matches, None)
        old_end = len(old) if a is None else a.start()
        new_end = len(new) if b is None else b.start()
        if old[old_at:old_end] != new[new_at:new_end]:
            return None
        if a is None or b is None:
            return changed if a is None and b is None else None
        if a.lastgroup != b.lastgroup:
            return None
        if changed is None and a.group() != b.group():
            changed = f"{a.lastgroup} changed: {a.group()!r} → {b.group()!r}"
        old_at, new_at = a.end(), b.end()


def _as_blocks(value: object) -> object:
    """A message whose ``content`` is a string, with that string as one text block."""
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return {**value, "content": [{"type": "text", "text": value["content"]}]}
    return value


def _thinking_dropped(old: object, new: object) -> bool:
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return False
    before, after = old.get("content"), new.get("content")
    if not (isinstance(before, list) and isinstance(after, list)):
        return False
    kept = [p for p in before if not (isinstance(p, dict) and p.get("type") in _THINKING)]
    return len(kept) < len(before) and kept == after


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_NAMES_SHOWN])
    return shown + (", …" if len(names) > _NAMES_SHOWN else "")


def _tools(previous: Sequence[Block], current: Sequence[Block]) -> Diagnosis | None:
    """Compare the tool lists by name: removed, added or reordered.

    ``None`` when the names are the same and in the same order (a definition was edited).
    """
    old = [b.label for b in previous if b.part == "tools"]
    new = [b.label for b in current if b.part == "tools"]
    if old == new:
        return None
    kept = set(new)
    removed = [n for n in old if n not in kept]
    added = [n for n in new if n not in set(old)]
    if not removed and not added:
        old_hashes = [b.hash for b in previous if b.part == "tools"]
        new_hashes = [b.hash for b in current if b.part == "tools"]
        edited = "" if sorted(old_hashes) == sorted(new_hashes) else " (and edited)"
        first = next(n for n, o in zip(new, old, strict=True) if n != o)
        return Diagnosis(
            "reorder",
            f"the same {len(new)} tools in another order{edited} (first out of place: {first})",
        )
    parts = []
    if removed:
        parts.append(f"{len(removed)} tool(s) removed ({_names(removed)})")
    if added:
        parts.append(f"{len(added)} tool(s) added ({_names(added)})")
    detail = "; ".join(parts) + f": {len(old)} → {len(new)} tools"
    return Diagnosis("block_removed" if len(removed) >= len(added) else "block_added", detail)


def _stripped_tail(old: object, new: object, old_text: str, new_text: str) -> str | None:
    """The tag of a trailing block that ``new`` no longer carries, else ``None``."""
    if isinstance(old, dict) and isinstance(new, dict):
        before, after = old.get("content"), new.get("content")
        if isinstance(before, list) and isinstance(after, list | str):
            after_list = after
            if isinstance(after, str):
                after_list = cast("dict[str, Any]", _as_blocks(new))["content"]
            if len(after_list) < len(before) and before[: len(after_list)] == after_list:
                gone = before[len(after_list)]
                text = gone.get("text") if isinstance(gone, dict) else None
                found = _TRAILING_TAG.match(text) if isinstance(text, str) else None
                return f"<{found['tag']}>" if found else "a trailing block"
    if old_text.startswith(new_text) and len(old_text) > len(new_text):
        found = _TRAILING_TAG.match(old_text, len(new_text))
        if found:
            return f"<{found['tag']}>"
    return None


def _changed_block(old: Content, new: Content, label: str) -> Diagnosis:
    offset = common_prefix(old.raw, new.raw)
    old_value, new_value = without_directives(old.value), without_directives(new.value)
    old_json, new_json = compact_json(old_value), compact_json(new_value)
    if old_json == new_json:
        return Diagnosis(
            "serialization_only",
            f"{label}: same JSON, other bytes (whitespace or escaping) from byte {offset}",
            offset,
        )
    if old_value == new_value:
        return Diagnosis("serialization_only", f"{label}: same JSON, keys in another order", offset)
    if _as_blocks(old_value) == _as_blocks(new_value):
        return Diagnosis(
            "serialization_only",
            f"{label}: the same content, once as a string and once as a text block",
            offset,
        )
    if _thinking_dropped(old_value, new_value):
        return Diagnosis(
            "content_edited",
            f"{label}: thinking block(s) dropped from an earlier assistant turn (Haiku, and "
            "Opus/Sonnet before 4.5/4.6, strip them after a new user turn)",
            offset,
        )
    _, old_text = render_text(old)
    _, new_text = render_text(new)
    stripped = _stripped_tail(old_value, new_value, old_text, new_text)
    if stripped is not None:
        return Diagnosis(
            "env_details_stripped",
            f"{label}: {stripped} was the tail of this message when it was sent last and is "
            "gone now (move volatile details into a new last block instead of editing history)",
            offset,
        )
    volatile = _volatile(old_text, new_text)
    if volatile is not None:
        return Diagnosis("volatile_value", f"{label}: {volatile}", offset)
    if new_text == old_text:
        at = common_prefix(old_json, new_json)
        detail = (
            f"{label}: same text, other JSON fields: "
            f"{_snip(old_json, at)!r} → {_snip(new_json, at)!r}"
        )
    elif new_text.startswith(old_text):
        detail = f"{label}: text appended inside the segment: {_snip(new_text, len(old_text))!r}"
    elif old_text.startswith(new_text):
        detail = f"{label}: trailing text removed: {_snip(old_text, len(new_text))!r}"
    else:
        at = common_prefix(old_text, new_text)
        detail = (
            f"{label}: edited at character {at}: {_snip(old_text, at)!r} → {_snip(new_text, at)!r}"
        )
    return Diagnosis("content_edited", detail, offset)


def diagnose(
    previous: Sequence[Block],
    current: Sequence[Block],
    at: int,
    contents: dict[str, Content],
) -> Diagnosis:
    """Guess why ``current`` stops matching ``previous`` at block index ``at``.

    Parameters
    ----------
    previous, current
        The blocks of the previous request of the thread and of this one.
    at
        The index of the first block that differs (``previous[:at] == current[:at]``).
    contents
        The session's content store.

    Returns
    -------
    Diagnosis
    """
    if at >= len(current):
        gone = len(previous) - len(current)
        return Diagnosis(
            "block_removed",
            f"the request stops where the previous one went on: {gone} segment(s) from "
            f"{previous[at].label} on are gone",
        )
    block = current[at]
    if block.part == "tools" or previous[at].part == "tools":
        by_name = _tools(previous, current)
        if by_name is not None:
            return by_name
    old_keys = [(b.part, b.hash) for b in previous[at:]]
    new_keys = [(b.part, b.hash) for b in current[at:]]

    same_part_old = [k for k in old_keys if k[0] == block.part]
    same_part_new = [k for k in new_keys if k[0] == block.part][: len(same_part_old)]
    if (
        len(same_part_old) >= 2
        and same_part_new != same_part_old
        and Counter(same_part_new) == Counter(same_part_old)
    ):
        return Diagnosis(
            "reorder",
            f"{len(same_part_old)} {block.part} segments are the same but in another order "
            f"(first out of place: {block.label})",
        )

    removed = _find_run(old_keys, new_keys)
    if removed is not None:
        labels = ", ".join(b.label for b in previous[at : at + removed][:3])
        if block.part == "messages" and block.position <= 1:
            return Diagnosis(
                "truncated_front",
                f"{removed} message(s) dropped from the front of the history ({labels}…)",
            )
        return Diagnosis("block_removed", f"{removed} segment(s) removed: {labels}")

    added = _find_run(new_keys, old_keys)
    if added is not None:
        labels = ", ".join(b.label for b in current[at : at + added][:3])
        return Diagnosis("block_added", f"{added} segment(s) inserted: {labels}")

    old_messages = {k for k in old_keys if k[0] == "messages"}
    new_messages = {k for k in new_keys if k[0] == "messages"}
    if block.part == "messages" and len(old_messages) >= 2 and not old_messages & new_messages:
        return Diagnosis(
            "history_replaced",
            f"{len(old_messages)} message(s) from {previous[at].label} on were replaced by "
            f"{len(new_messages)} other(s) (compaction or a new conversation)",
        )

    prev_block = previous[at]
    if prev_block.part == block.part and prev_block.position == block.position:
        return _changed_block(contents[prev_block.hash], contents[block.hash], block.label)
    return Diagnosis(
        "unknown",
        f"{block.label} stands where the previous request had {prev_block.label}",
    )
