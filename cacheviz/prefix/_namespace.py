"""The cache namespace of a call, and the request parameters its provider keys on.

A provider can serve a prefix only from entries of the same **namespace**: the same
provider and model (caches are per model; per organization or workspace too, which one
transcript does not show). Some request parameters outside the blocks also invalidate
the cache from a given level on (providers.md §1.2 and §2.1):

Anthropic, from the ``messages`` level on
    ``tool_choice``, ``disable_parallel_tool_use``, ``thinking`` (mode and
    ``budget_tokens``) and ``output_config`` (effort). Tools and system stay cached.
Anthropic, from the ``system`` level on
    ``speed`` (fast / standard mode).
OpenAI, the whole prompt
    ``parallel_tool_calls``, the structured-output schema (``response_format`` /
    ``text.format``), the reasoning effort (``reasoning_effort`` / ``reasoning.effort``),
    the verbosity (``verbosity`` / ``text.verbosity``) and ``prompt_cache_key`` (a routing
    key: another key is another cache bucket).

Other providers key on the model only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cacheviz import providers
from cacheviz.model import Call

_LEVELS = ("tools", "system", "messages")


@dataclass(frozen=True, slots=True)
class KeyedParams:
    """The cache-keyed parameters of one call, per level they invalidate from."""

    by_level: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]

    def first_difference(self, other: KeyedParams) -> tuple[str, str] | None:
        """``(level, "name: old → new, ...")`` for the first level whose params differ."""
        mine, theirs = dict(self.by_level), dict(other.by_level)
        for level in _LEVELS:
            old, new = dict(theirs.get(level, ())), dict(mine.get(level, ()))
            if old != new:
                changes = [
                    f"{name}: {old.get(name, '(unset)')} → {new.get(name, '(unset)')}"
                    for name in sorted(set(old) | set(new))
                    if old.get(name) != new.get(name)
                ]
                return level, "; ".join(changes)
        return None

    def salts(self) -> list[tuple[str, str]]:
        """``(level, key)`` per level: a pseudo block key standing for its params."""
        return [
            (level, "params:" + json.dumps([level, values], separators=(",", ":")))
            for level, values in self.by_level
        ]


def _lookup(params: dict[str, Any], path: str) -> Any:
    value: Any = params
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def keyed_params(call: Call) -> KeyedParams:
    """The parameters of ``call`` its provider keys the cache on (see the module doc).

    Examples
    --------
    >>> from cacheviz.model import Call
    >>> call = Call(0, 1, None, "anthropic", "messages", "claude-sonnet-4-5", [],
    ...             params={"thinking": {"type": "enabled", "budget_tokens": 2048}})
    >>> keyed_params(call).by_level
    (('messages', (('thinking', '{"budget_tokens":2048,"type":"enabled"}'),)),)
    """
    levels = []
    found = providers.find(call.provider)
    for level, paths in found.keyed_params if found is not None else ():
        values = []
        for path in paths:
            value = _lookup(call.params, path)
            if value is not None:
                text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
                values.append((path, text))
        if values:
            levels.append((level, tuple(values)))
    return KeyedParams(tuple(levels))


def namespace_of(call: Call) -> str:
    """``provider/model``: the cache a call can read from."""
    return f"{call.provider}/{call.model}"


def level_start(call: Call, level: str) -> int:
    """Index of the first block of ``level`` (or of a later level) in ``call``."""
    if level == "tools":
        return 0
    if level == "messages":
        return call.message_start
    return next((i for i, b in enumerate(call.blocks) if b.part != "tools"), len(call.blocks))
