"""Compactions in byte-exact captures: the summarizer request and the rebuilt history.

A conversation log says when its agent compacted (Claude Code's ``compact_boundary``:
the reader marks the next call). A capture of the requests sent (claude-trace,
claude-tap, cc-viewer, mitmproxy, raw API logs) has no such record, only the requests
themselves: the agent asks the same model for a summary with a request of its own — its
own system prompt and tool set over the conversation so far — and then goes on from
the summary with its usual system prompt and tools. Read by structure, three requests
of one model in a row (side calls of other models may sit between them):

* ``A``, the conversation before (its tools and system prompt);
* ``S``, the summarizer: other tools **and** another system prompt than ``A``'s, its
  messages starting with ``A``'s first one (it sends the conversation to summarize);
* ``B``, the request after it: ``A``'s tools again, its history rebuilt (its first
  message is not ``A``'s, and it is shorter than ``S``'s).

``S`` and ``B`` are marked ``meta["rebuild"] = "compaction"``: an expected rebuild, as
the transcript readers mark the call after a ``compact_boundary`` (no drift, no miss
of cause ``provider_side`` / ``no_breakpoint`` / ``unknown``; ``check`` stays silent).
Requests rebuilt from a conversation log are left to their reader.
"""

from __future__ import annotations

from collections.abc import Sequence

from cacheviz.model import Call

COMPACTION = "compaction"


def _tools(call: Call) -> tuple[str, ...]:
    return tuple(b.label for b in call.blocks if b.part == "tools")


def _system(call: Call) -> tuple[str, ...]:
    return tuple(b.hash for b in call.blocks if b.part == "system")


def _messages(call: Call) -> list[str]:
    return call.hashes[call.message_start :] if call.message_start >= 0 else []


def _is_summarizer(before: Call, call: Call, after: Call) -> bool:
    """Whether ``call`` asks for a summary of ``before``'s conversation, ``after`` going on."""
    head, mine, then = _messages(before), _messages(call), _messages(after)
    if not head or not mine or not then:
        return False
    own_head = _tools(call) != _tools(before) and _system(call) != _system(before)
    summarizes = mine[0] == head[0] and len(mine) >= len(head)
    rebuilt = _tools(after) == _tools(before) and then[0] != head[0] and len(then) < len(mine)
    return own_head and summarizes and rebuilt


def mark_compactions(calls: Sequence[Call]) -> int:
    """Mark each summarizer request and the request after it; return how many were found."""
    latest: dict[tuple[str, str], list[int]] = {}  # (provider, model) -> its byte-exact calls
    for i, call in enumerate(calls):
        if not call.reconstructed:
            latest.setdefault((call.provider, call.model), []).append(i)
    found = 0
    for order in latest.values():
        for k in range(1, len(order) - 1):
            before, call, after = (calls[order[k + d]] for d in (-1, 0, 1))
            if call.meta.get("rebuild") is None and _is_summarizer(before, call, after):
                call.meta["rebuild"] = COMPACTION
                call.meta.setdefault("compaction", {"trigger": "summarizer request"})
                after.meta.setdefault("rebuild", COMPACTION)
                found += 1
    return found


__all__ = ["COMPACTION", "mark_compactions"]
