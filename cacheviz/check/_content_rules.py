"""Rules with their own evidence: message formats, thinking settings, prefixes of threads.

``text_format`` and ``thinking_config`` claim the drifts they explain (so the generic
``history_rewrite`` does not report them twice); ``subagent_misaligned`` and
``prefix_variants`` compare the system+tools prefixes of threads.
"""

from __future__ import annotations

import difflib
import json
import re
from itertools import pairwise
from typing import Any

from cacheviz._util.seq import common_prefix
from cacheviz.check._context import Context, Finding
from cacheviz.check._drift_rules import call_list, snip
from cacheviz.check._rules import RULES

_ROLE_LINE = re.compile(
    r"^(?:(?P<user>USER|User|Human|HUMAN)|(?P<assistant>ASSISTANT|Assistant|AI|Bot)):[ \t]",
    re.MULTILINE,
)
_TOOL_AS_USER = re.compile(
    r"^\s*(?:tool (?:result|output|response)|function (?:result|output)|observation"
    r"|\[tool[_ ]result\]|<tool_result\b)",
    re.IGNORECASE,
)
_THINKING_PARAMS = ("thinking", "reasoning", "reasoning_effort")
# request parameters that key the cache beyond the bytes (providers.md): a child that
# differs in one of them can't read its parent's entry
_KEYED_PARAMS = (*_THINKING_PARAMS, "tool_choice", "prompt_cache_key", "service_tier")
_SIMILAR = 0.8  # share of a child's system lines (and of the tool names) equal to its parent's
_MAX_EXPONENT = 8  # beyond that many varying places, 2^N says nothing useful
_TEMPLATE = 0.6  # share of lines two threads' system prompts must have in common


def _flattened(text: str) -> str | None:
    """Why a user message's text is a hand-made transcript, or ``None``."""
    roles = {m.lastgroup for m in _ROLE_LINE.finditer(text)}
    if roles == {"user", "assistant"}:
        return "the history flattened into USER:/ASSISTANT: lines"
    if _TOOL_AS_USER.match(text):
        return f"a tool result sent as a user message ({snip(text, 40)!r})"
    return None


def text_format(ctx: Context) -> list[Finding]:
    """User messages that carry a hand-made transcript or a tool result."""
    verdicts: dict[str, str | None] = {}
    by_thread: dict[str, tuple[list[int], str]] = {}
    flagged_blocks: dict[int, set[tuple[str, int]]] = {}
    for call in ctx.session_calls:
        for block in call.blocks:
            if block.part != "messages":
                continue
            if block.hash not in verdicts:
                role, text = ctx.rendered(block.hash)
                verdicts[block.hash] = _flattened(text) if role == "user" else None
            why = verdicts[block.hash]
            if why is None:
                continue
            flagged_blocks.setdefault(call.index, set()).add((block.part, block.position))
            calls, _ = by_thread.setdefault(ctx.thread_of(call.index), ([], why))
            if not calls or calls[-1] != call.index:
                calls.append(call.index)
    claimed = [
        d for d in ctx.drifts if (d["part"], d["position"]) in flagged_blocks.get(d["call"], set())
    ]
    ctx.claimed.update(d["call"] for d in claimed)
    rule = RULES["text_format"]
    findings = []
    for thread, (calls, why) in by_thread.items():
        drifts = [d for d in claimed if d["thread"] == thread]
        broke = f"; {len(drifts)} of them rewrite a cached message" if drifts else ""
        message = (
            f"{rule.title}: {len(calls)} call(s) of thread {thread!r} (calls "
            f"{call_list(calls)}) send {why}{broke}. {rule.why} Fix: {rule.fix}"
        )
        findings.append(
            Finding(
                "text_format",
                rule.severity,
                calls,
                message,
                ctx.cost(drifts),
                thread,
                ctx.line(calls[0]),
            )
        )
    return findings


def _thinking(params: dict[str, Any]) -> str:
    chosen = {k: params[k] for k in _THINKING_PARAMS if k in params}
    generation = params.get("generationConfig")  # Gemini
    if isinstance(generation, dict) and "thinkingConfig" in generation:
        chosen["thinkingConfig"] = generation["thinkingConfig"]
    return json.dumps(chosen, sort_keys=True, default=str) if chosen else "off"


def thinking_config(ctx: Context) -> list[Finding]:
    """Thinking settings that change between calls of a thread (claims their drifts)."""
    rule = RULES["thinking_config"]
    findings = []
    drifts_at = {d["call"]: d for d in ctx.drifts}
    for thread, indexes in ctx.threads.items():
        changes: list[tuple[int, str, str]] = []
        for before, call in pairwise(indexes):
            old = _thinking(ctx.session_calls[before].params)
            new = _thinking(ctx.session_calls[call].params)
            if old != new:
                changes.append((call, old, new))
        if not changes:
            continue
        calls = [c for c, _, _ in changes]
        drifts = [drifts_at[c] for c in calls if c in drifts_at]
        ctx.claimed.update(d["call"] for d in drifts)
        call, old, new = changes[0]
        message = (
            f"{rule.title}: thread {thread!r} changes its thinking settings at call(s) "
            f"{call_list(calls)} (first: {snip(old, 60)} → {snip(new, 60)}). "
            f"{rule.why} Fix: {rule.fix}"
        )
        findings.append(
            Finding(
                "thinking_config",
                rule.severity,
                calls,
                message,
                ctx.cost(drifts) if len(drifts) == len(calls) else None,
                thread,
                ctx.line(calls[0]),
            )
        )
    return findings


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _similarity(a: str, b: str) -> float:
    """How much of ``b`` is ``a``: its lines found in ``a``, or a shared head and tail.

    The line share catches moved or swapped lines; the head-and-tail share catches one
    value changed inside a long line.
    """
    mine = _lines(b)
    if not mine:
        return 1.0 if not _lines(a) else 0.0
    theirs = set(_lines(a))
    by_line = sum(len(line) for line in mine if line in theirs) / sum(len(line) for line in mine)
    head = common_prefix(a, b)
    tail = common_prefix(a[head:][::-1], b[head:][::-1])
    return max(by_line, (head + tail) / max(len(a), len(b)))


def _line_diffs(a: str, b: str) -> list[tuple[str, str, str]]:
    """``(slot, old, new)`` for each differing line (or run of lines) of two prompts.

    ``slot`` names the place in ``a`` (a line number or range), so the values several
    prompts put at one place can be gathered.
    """
    old, new = _lines(a), _lines(b)
    pairs = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 - i1 == j2 - j1:
            pairs += [(str(i1 + k), old[i1 + k], new[j1 + k]) for k in range(i2 - i1)]
        else:
            pairs.append((f"{i1}:{i2}", "\n".join(old[i1:i2]), "\n".join(new[j1:j2])))
    return pairs


def _around(old: str, new: str) -> str:
    """``'…old…' → '…new…'`` around the first differing character."""
    at = common_prefix(old, new)
    start = max(0, at - 20)
    return f"{snip(old, 50, start)!r} → {snip(new, 50, start)!r}"


def _tool_diff(parent: list[tuple[str, str]], child: list[tuple[str, str]]) -> list[str]:
    names_p = [n for n, _ in parent]
    names_c = [n for n, _ in child]
    out = []
    if added := [n for n in names_c if n not in names_p]:
        out.append(f"tools added: {', '.join(added[:5])}")
    if removed := [n for n in names_p if n not in names_c]:
        out.append(f"tools missing: {', '.join(removed[:5])}")
    hashes_p = dict(parent)
    if changed := [n for n, h in child if n in hashes_p and hashes_p[n] != h]:
        out.append(f"tool definitions differ: {', '.join(changed[:5])}")
    common_p = [n for n in names_p if n in names_c]
    common_c = [n for n in names_c if n in names_p]
    if common_p != common_c:
        out.append("tools in another order")
    return out


def _keyed(params: dict[str, Any]) -> dict[str, str]:
    chosen = (k for k in _KEYED_PARAMS if k in params)
    return {k: json.dumps(params[k], sort_keys=True, default=str) for k in chosen}


def _parent_thread(ctx: Context, thread: str) -> str | None:
    """The thread a sub-agent ran under: it started while that thread was running.

    The parent the analysis names (``parent_thread``) when it has calls before and after
    the child's first call; without one, the busiest other thread of the same model that
    does. A thread that starts after its predecessor ended (a compaction, the next
    session of a log of many sessions) is a top-level thread, not a sub-agent.
    """
    first = ctx.threads[thread][0]

    def around(name: str) -> bool:
        indexes = ctx.threads[name]
        return name != thread and indexes[0] < first < indexes[-1]

    named = ctx.parent_of(thread)
    if named is not None and named in ctx.threads:
        return named if around(named) else None
    model = ctx.calls[first]["model"]
    candidates = [
        (len(indexes), name)
        for name, indexes in ctx.threads.items()
        if ctx.calls[indexes[0]]["model"] == model and around(name)
    ]
    return max(candidates)[1] if candidates else None


def subagent_misaligned(ctx: Context) -> list[Finding]:
    """Children whose system+tools are nearly their parent's, or equal with other params."""
    rule = RULES["subagent_misaligned"]
    findings = []
    for thread, indexes in ctx.threads.items():
        parent = _parent_thread(ctx, thread)
        if parent is None:
            continue
        child = indexes[0]
        before = [i for i in ctx.threads[parent] if i < child]
        anchor = before[-1] if before else ctx.threads[parent][0]
        if ctx.calls[anchor]["model"] != ctx.calls[child]["model"]:
            continue  # another model: another cache, by design
        sys_p, sys_c = ctx.system_text(anchor), ctx.system_text(child)
        tools_p, tools_c = ctx.tools(anchor), ctx.tools(child)
        params_p = _keyed(ctx.session_calls[anchor].params)
        params_c = _keyed(ctx.session_calls[child].params)
        differences = _tool_diff(tools_p, tools_c)
        if sys_p != sys_c:
            pairs = _line_diffs(sys_p, sys_c)
            shown = "; ".join(_around(a, b) for _, a, b in pairs[:2])
            differences.append(f"system prompt differs: {shown}")
        param_diffs = [
            f"{k}: {params_p.get(k, 'unset')} → {params_c.get(k, 'unset')}"
            for k in sorted(set(params_p) | set(params_c))
            if params_p.get(k) != params_c.get(k)
        ]
        differences += [f"parameter {d}" for d in param_diffs]
        if not differences:
            continue
        names_p, names_c = {n for n, _ in tools_p}, {n for n, _ in tools_c}
        tool_overlap = len(names_p & names_c) / len(names_p | names_c) if names_p | names_c else 1
        if min(_similarity(sys_p, sys_c), tool_overlap) < _SIMILAR:
            continue  # a deliberately different prompt: alignment is not asked for
        message = (
            f"{rule.title}: thread {thread!r} (from call {child}) runs under {parent!r} "
            f"(call {anchor}) on the same model, but {'; '.join(differences)}. "
            f"{rule.why} Fix: {rule.fix}"
        )
        findings.append(
            Finding(
                "subagent_misaligned",
                rule.severity,
                [anchor, child],
                message,
                None,
                thread,
                ctx.line(child),
            )
        )
    return findings


def prefix_variants(ctx: Context) -> list[Finding]:
    """Top-level threads of one model whose system+tools are variants of one template."""
    rule = RULES["prefix_variants"]
    roots = [t for t in ctx.threads if _parent_thread(ctx, t) is None]
    clusters: list[list[str]] = []
    for thread in roots:
        first = ctx.threads[thread][0]
        text = ctx.system_text(first)
        for cluster in clusters:
            head = ctx.threads[cluster[0]][0]
            if ctx.calls[head]["model"] != ctx.calls[first]["model"]:
                continue
            if text and _similarity(ctx.system_text(head), text) >= _TEMPLATE:
                cluster.append(thread)
                break
        else:
            clusters.append([thread])
    findings = []
    for cluster in clusters:
        firsts = [ctx.threads[t][0] for t in cluster]
        prefixes = {ctx.calls[c]["prefix_hash"]: c for c in firsts}
        if len(prefixes) < 2:
            continue
        reference = firsts[0]
        slots: dict[str, set[str]] = {}
        for call in prefixes.values():
            for slot, old, new in _line_diffs(ctx.system_text(reference), ctx.system_text(call)):
                slots.setdefault(slot, {old}).add(new)
        tool_sets = [tuple(n for n, _ in ctx.tools(c)) for c in prefixes.values()]
        if len(set(tool_sets)) > 1:
            slots.setdefault("tools", set()).update(", ".join(t) or "none" for t in tool_sets)
        named = "; ".join(
            " | ".join(repr(snip(v, 40)) for v in sorted(values)[:4])
            for values in list(slots.values())[:4]
        )
        n = len(slots)
        bound = f" (up to 2^{n} = {2**n} variants)" if n <= _MAX_EXPONENT else ""
        message = (
            f"{rule.title}: {len(prefixes)} distinct system+tools prefixes across "
            f"{len(cluster)} threads of {ctx.calls[reference]['model']} "
            f"({', '.join(repr(t) for t in cluster[:4])}{'…' if len(cluster) > 4 else ''}); "
            f"{n} varying value(s) before the cache boundary{bound}: "
            f"{named}. {rule.why} Fix: {rule.fix}"
        )
        findings.append(
            Finding(
                "prefix_variants",
                rule.severity,
                sorted(prefixes.values()),
                message,
                None,
                None,
                ctx.line(reference),
            )
        )
    return findings
