"""Rules whose evidence is a drift: each drift of a thread is explained by one rule.

A drift is claimed by the most specific rule that explains it (``text_format`` and
``thinking_config`` run first and claim theirs); the rest are read from the drift's part
and cause. The cost is the drift's ``cost_usd`` (the what-if of the diagnosis: what the
break cost), ``None`` until the analysis provides it.
"""

from __future__ import annotations

import re
from typing import Any

from cacheviz._util.seq import common_prefix
from cacheviz.check._context import Context, Finding
from cacheviz.check._rules import RULES
from cacheviz.redact import redact_cut

_CLOCKS = ("timestamp", "date")  # volatile kinds (prefix/_diagnose.py) that tell the time
_ENV_TAG = re.compile(r"<(?:environment_details|editor_context|env)>")
_THINKING_DROPPED = "thinking block(s) dropped"
_THINKING_PARAMS = ("thinking", "reasoning", "reasoning_effort")
_REPEATED = 2  # breaks of the same kind in a thread that make it systematic (error)
_SNIP = 80


def call_list(calls: list[int]) -> str:
    """``[1, 2, 3, 5]`` → ``"1-3, 5"``."""
    out: list[str] = []
    for call in sorted(set(calls)):
        if out and "-" not in out[-1] and int(out[-1]) == call - 1:
            out[-1] = f"{out[-1]}-{call}"
        elif out and "-" in out[-1] and int(out[-1].rsplit("-", 1)[1]) == call - 1:
            out[-1] = f"{out[-1].rsplit('-', 1)[0]}-{call}"
        else:
            out.append(str(call))
    return ", ".join(out)


def snip(text: str, limit: int = _SNIP, start: int = 0) -> str:
    """One line of about ``limit`` characters from ``start``, secrets redacted before the cut."""
    text = text[:start] + " ".join(text[start:].split())
    return redact_cut(text, limit, start)


def changed_line(ctx: Context, drift: dict[str, Any]) -> str | None:
    """The line of the new segment's text where it first differs from the old one."""
    if drift.get("hash") is None or drift.get("prev_hash") is None:
        return None
    old, new = ctx.text(drift["prev_hash"]), ctx.text(drift["hash"])
    at = common_prefix(old, new)
    if at < len(new) and new[at] == "\n":
        at += 1  # text appended after a line: show the new line
    start = new.rfind("\n", 0, at) + 1
    end = new.find("\n", at)
    return new[start : None if end < 0 else end]


def _is_profile(ctx: Context, drift: dict[str, Any]) -> bool:
    """Volatile state placed before the conversation: decided by position and recurrence.

    The guide's anti-pattern (a user profile: balance, quota, counters) is about *where*
    the state sits and that it changes every call, not the words it uses. A drift is one
    when it breaks the first segments of the prefix — the system prompt, the tools, or
    the first message — at a place its thread breaks on most of its calls (at least half
    of the calls after the first, and twice). In the system prompt and the tools the
    value that changes must be state, not a clock: a timestamp or a date rewritten every
    call is the other anti-pattern (``dynamic_system``); a first message rewritten before
    every call is state whatever changes in it.
    """
    part = drift["part"]
    if part == "messages" and drift["position"] != 0:
        return False
    calls = len(ctx.threads.get(drift["thread"], ()))
    breaks = ctx.breaks_at.get((drift["thread"], part, drift["position"]), 0)
    if breaks < max(_REPEATED, calls // 2):  # half of the calls after the first, rounded up
        return False
    if part == "messages":
        return drift["cause"] in ("volatile_value", "content_edited")
    detail = drift.get("detail") or ""
    clock = any(f"{kind} changed:" in detail for kind in _CLOCKS)
    return drift["cause"] == "volatile_value" and not clock


def _is_env_stripped(ctx: Context, drift: dict[str, Any]) -> bool:
    if drift.get("hash") is None or drift.get("prev_hash") is None:
        return False
    before = len(_ENV_TAG.findall(ctx.text(drift["prev_hash"])))
    return before > len(_ENV_TAG.findall(ctx.text(drift["hash"])))


def classify(ctx: Context, drift: dict[str, Any]) -> str | None:
    """The rule that explains a drift, or ``None`` (e.g. a model switch)."""
    cause, part = drift["cause"], drift["part"]
    detail = drift.get("detail") or ""
    if drift["call"] in ctx.claimed:
        return None
    if cause == "env_details_stripped":
        return "env_details_stripped"
    if cause == "params_changed":
        return "thinking_config" if any(p in detail for p in _THINKING_PARAMS) else None
    if cause == "model_switch" or detail.startswith("model changed"):
        return None
    if cause == "serialization_only":
        return "key_order"
    if cause == "reorder" and part == "tools":
        return "shuffled_tools"
    if cause == "truncated_front":
        return "sliding_window"
    if part in ("tools", "system"):
        return "dynamic_profile" if _is_profile(ctx, drift) else "dynamic_system"
    if part != "messages":
        return None
    if _THINKING_DROPPED in detail:
        return "thinking_config"
    if _is_env_stripped(ctx, drift):
        return "env_details_stripped"
    if _is_profile(ctx, drift):
        # volatile state early in the prefix: a profile injected as the first block of
        # the first user message and rewritten before every call
        return "dynamic_profile"
    return "history_rewrite"


def _severity(ctx: Context, rule: str, drifts: list[dict[str, Any]]) -> str:
    if ctx.immaterial(drifts):
        return "info"
    if rule == "history_rewrite" and all(d["cause"] == "history_replaced" for d in drifts):
        return "info"  # a compaction: the one planned rewrite
    default = RULES[rule].severity
    if default == "error" and len(drifts) < _REPEATED:
        return "warning"  # once in a thread (a date rolling over) is not a pattern yet
    return default


def _evidence(ctx: Context, rule: str, drifts: list[dict[str, Any]]) -> str:
    first = drifts[0]
    detail = first.get("detail") or first["cause"]
    if rule in ("dynamic_system", "dynamic_profile"):
        line = changed_line(ctx, first)
        where = f"; the changing line: {snip(line)!r}" if line else ""
        return f"{detail}{where}"
    if rule == "history_rewrite" and all(d["cause"] == "history_replaced" for d in drifts):
        return f"{detail} (a compaction: one planned re-write, fine when rare)"
    return detail


def drift_findings(ctx: Context) -> list[Finding]:
    """One finding per (rule, thread) over the drifts no earlier rule claimed."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for drift in ctx.drifts:
        rule = classify(ctx, drift)
        if rule is not None:
            groups.setdefault((rule, drift["thread"]), []).append(drift)
    findings = []
    for (rule, thread), drifts in groups.items():
        calls = [d["call"] for d in drifts]
        total = len(ctx.threads.get(thread, []))
        lost = sum(d["tokens_lost"] or 0 for d in drifts)
        info = RULES[rule]
        message = (
            f"{info.title}: {len(drifts)} of {total} calls of thread {thread!r} break the "
            f"prefix (calls {call_list(calls)}; {lost:,} cached tokens lost). "
            f"First: {_evidence(ctx, rule, drifts)}. {info.why} Fix: {info.fix}"
        )
        findings.append(
            Finding(
                rule,
                _severity(ctx, rule, drifts),
                sorted(calls),
                message,
                ctx.cost(drifts),
                thread,
                ctx.line(min(calls)),
            )
        )
    return findings
