"""``uncached_history``: no cache breakpoint covers the growing history.

Where a provider caches only at the request's breakpoints (Anthropic ``cache_control``;
OpenAI GPT-5.6+ with ``prompt_cache_options.mode = "explicit"``, providers.md §1.1 and
§2.1), the tokens after the last breakpoint are never written to the cache: a thread
whose only breakpoint sits on the system prompt re-processes its whole conversation at
the full input price on every call, however much of it the previous call already sent.

A call is *uncovered* when the prefix it shares with its thread's previous call reaches
past the previous call's last breakpoint by at least the model's smallest cacheable
prefix (the provider profile's ``min_tokens``): those tokens were sent before and could
have been read. The cost is the
provider simulators' what-if: the thread as sent minus the thread with the breakpoints
the fix puts in place (Anthropic ``breakpoints="auto"``: end of tools, end of system, the
last two messages; OpenAI ``mode="implicit"``: the breakpoint at the latest message),
priced with the dated prices. A thread where the fix would not save anything is not
reported; without prices the cost is ``None``.
"""

from __future__ import annotations

from typing import Any

from cacheviz import providers
from cacheviz.check._context import Context, Finding
from cacheviz.check._drift_rules import call_list
from cacheviz.check._rules import RULES
from cacheviz.errors import CacheVizError
from cacheviz.model import Call


def explicit_only(call: Call) -> bool:
    """Whether the provider caches this call only at the breakpoints the request set."""
    if call.reconstructed:  # rebuilt from a conversation log: its breakpoints are unknown
        return False
    found = providers.find(call.provider)
    return found is not None and found.only_at_breakpoints(call)


def covered_tokens(call: Call, offsets: list[int]) -> int:
    """Tokens up to and including the call's last breakpoint (0 without one)."""
    blocks = [block for block, _ in call.breakpoints if 0 <= block < len(call.blocks)]
    if isinstance(call.params.get("cache_control"), dict):
        blocks.append(len(call.blocks) - 1)  # Anthropic's automatic caching: the last block
    if not blocks:
        return 0
    return offsets[max(blocks) + 1]


def _uncovered(ctx: Context) -> dict[str, list[tuple[int, int]]]:
    """Per thread: (call, reusable tokens past the previous call's last breakpoint)."""
    calls = ctx.session_calls
    offsets = ctx.analysis.offsets
    found: dict[str, list[tuple[int, int]]] = {}
    for row in ctx.calls:
        before = row["prev_call"]
        if before is None or not explicit_only(calls[row["call"]]):
            continue
        if not explicit_only(calls[before]) or calls[before].provider != row["provider"]:
            continue
        reusable = row["prev_common_tokens"] or 0
        lost = reusable - covered_tokens(calls[before], offsets[before])
        found_profile = providers.find(row["provider"])
        minimum = found_profile.min_tokens(row["model"]) if found_profile is not None else 0
        if lost >= max(minimum, 1):
            found.setdefault(row["thread"], []).append((row["call"], lost))
    return found


def _simulate(ctx: Context, provider: str, **rules: Any) -> Any:
    own = ctx.analysis.own_simulation
    if not rules and own is not None and own.provider == provider:
        return own  # the session under its own provider's default rules: already run
    try:
        return ctx.analysis.simulate(provider, unpriced="skip", **rules)
    except (CacheVizError, ValueError):
        return None


def _thread_cost(simulation: Any, indexes: list[int]) -> float | None:
    if simulation is None:
        return None
    rows = simulation.calls.filter(simulation.calls["call"].is_in(indexes))
    if rows.height == 0 or rows["cost_usd"].null_count():
        return None
    return float(rows["cost_usd"].sum())


def uncached_history(ctx: Context) -> list[Finding]:
    """Threads whose history grows past the last breakpoint, re-processed every call."""
    rule = RULES["uncached_history"]
    uncovered = _uncovered(ctx)
    if not uncovered:
        return []
    simulations: dict[tuple[str, bool], Any] = {}
    findings = []
    for thread, found in uncovered.items():
        provider = str(providers.known(ctx.calls[found[0][0]]["provider"]))
        fix = providers.profile(provider).history_fix
        fix_rules, fix_name = (fix.rules, fix.advice) if fix is not None else ({}, "")
        for fixed in (False, True):
            if (provider, fixed) not in simulations:
                simulations[provider, fixed] = _simulate(
                    ctx, provider, **(fix_rules if fixed else {})
                )
        indexes = ctx.threads[thread]
        now = _thread_cost(simulations[provider, False], indexes)
        then = _thread_cost(simulations[provider, True], indexes)
        cost = None if now is None or then is None else now - then
        if cost is not None and cost <= 0:
            continue  # the fix would not pay: nothing worth reporting
        calls = [c for c, _ in found]
        tokens = sum(lost for _, lost in found)
        saving = (
            ""
            if cost is None
            else f" With {fix_name} the thread would cost ${then:,.4f} instead of ${now:,.4f}."
        )
        message = (
            f"{rule.title}: in thread {thread!r}, {len(calls)} call(s) ({call_list(calls)}) "
            f"re-send {tokens:,} tokens the previous call already sent after its last "
            f"{provider} breakpoint, at the full input price.{saving} "
            f"{rule.why} Fix: {rule.fix}"
        )
        findings.append(
            Finding(rule.id, rule.severity, calls, message, cost, thread, ctx.line(calls[0]))
        )
    return findings
