"""``ttl_gaps``: idle gaps longer than the cache TTL, what they cost, and the longer TTL.

The gaps come from the calls' timestamps (a thread's call against its previous one);
their cost and the longer-TTL what-if come from the provider simulators
(:func:`cacheviz.money._simulate.simulate` with the ``ttl`` / ``retention`` rules), priced
with the dated prices. Without timestamps or prices the finding says so (cost ``None``).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from cacheviz import providers
from cacheviz.check._context import Context, Finding
from cacheviz.check._drift_rules import call_list
from cacheviz.check._rules import RULES, Rule
from cacheviz.errors import CacheVizError
from cacheviz.money.pricing import PriceBook


def _ttl(ctx: Context, provider: str, call: int) -> float | None:
    """The TTL of ``call``'s thread: the session's evidence (prefix._ttl), else the rules'."""
    evidence = ctx.calls[call].get("ttl_seconds")
    if evidence is not None:
        return float(evidence)
    found = providers.find(provider)
    if found is None:
        return None
    recorded = [ttl for _, ttl in ctx.session_calls[call].breakpoints]
    if found.explicit_breakpoints and recorded:
        return float(max(recorded))
    return found.default_ttl_seconds


def _longest_ttl(provider: str) -> float | None:
    """The longest cache lifetime ``provider``'s profile offers (named TTLs, the default).

    A gap longer than this is a pause no TTL outlasts: not a layout problem.
    """
    found = providers.find(provider)
    if found is None:
        return None
    offered = [float(seconds) for seconds in found.ttls.values()]
    if found.default_ttl_seconds is not None:
        offered.append(float(found.default_ttl_seconds))
    return max(offered, default=None)


def _uses_longer_ttl(ctx: Context, provider: str, indexes: list[int]) -> bool:
    """Whether the thread already caches with the longer TTL its provider offers.

    Any of its calls asking for it (a breakpoint's or the automatic ``cache_control``
    TTL, the session's TTL evidence) or reporting writes with it (Anthropic's 1-hour
    writes, the longest named TTL) counts: that TTL is never the advice then.
    """
    found = providers.find(provider)
    if found is None or found.longer_ttl is None or not found.ttls:
        return False
    seconds = found.ttl_seconds(found.longer_ttl.rules.get("ttl"))
    if seconds is None:
        return False
    longest = max(found.ttls.values())
    for i in indexes:
        evidence = ctx.calls[i].get("ttl_seconds")
        if evidence is not None and evidence >= seconds:
            return True
        call = ctx.session_calls[i]
        if any(ttl >= seconds for _, ttl in call.breakpoints):
            return True
        usage = call.usage
        if seconds >= longest and usage is not None and (usage.cache_write_1h_tokens or 0) > 0:
            return True
    return False


def _duration(seconds: float) -> str:
    """Minutes, or hours from two hours on (``46.0 h``)."""
    minutes = seconds / 60
    return f"{minutes / 60:,.1f} h" if minutes >= 120 else f"{minutes:,.1f} min"


def _pause_note(
    ctx: Context, rule: Rule, thread: str, provider: str, found: list[tuple[int, float]]
) -> Finding:
    """An info-level note (exit 0): pauses longer than any TTL ``provider`` offers."""
    found.sort()
    calls = [c for c, _ in found]
    longest = _longest_ttl(provider) or 0.0
    tokens = sum(ctx.calls[c]["prev_common_tokens"] or 0 for c in calls)
    message = (
        f"{rule.title}: thread {thread!r} paused {len(found)} time(s) (longest "
        f"{_duration(max(idle for _, idle in found))}) before call(s) {call_list(calls)}, "
        f"longer than any {provider} cache TTL ({longest / 60:,.0f} min): {tokens:,} reusable "
        "tokens were written again. A pause, not a layout problem: no TTL outlasts it."
    )
    return Finding("ttl_gaps", "info", calls, message, None, thread, ctx.line(calls[0]))


def _minimum(provider: str, model: str) -> int:
    """Below the smallest cacheable prefix a gap costs nothing (at least one token)."""
    found = providers.find(provider)
    return max(found.min_tokens(model) if found is not None else 0, 1)


def _simulate(ctx: Context, provider: str, **rules: Any) -> Any:
    try:
        return ctx.analysis.simulate(provider, unpriced="skip", **rules)
    except (CacheVizError, ValueError):
        return None


def break_even(provider: str, model: str, at: Any = None) -> float | None:
    """Share of written tokens that must be re-writes after gaps for the longer TTL to pay.

    A longer-lived write costs ``w_long - w`` more per written token; each token re-read
    instead of re-written after a gap saves ``w - r``. The break-even share of re-written
    tokens is ``(w_long - w) / (w - r)``, from the model's dated prices. ``None`` when the
    model is unpriced or has no separate long-TTL price.
    """
    try:
        rates = PriceBook().rates(provider, model, at=at)
    except (CacheVizError, ValueError):
        return None
    write, read, long = rates.cache_write, rates.cache_read, rates.cache_write_1h
    if write is None or read is None or long is None or write <= read:
        return None
    return (long - write) / (write - read)


def _confirmed(confirmed: dict[str, set[int]], thread: str, calls: list[int]) -> str:
    seen = confirmed.get(thread, set()) & set(calls)
    if not seen:
        return ""
    return f" The provider's reported usage confirms {len(seen)} of them as TTL misses."


def ttl_gaps(ctx: Context) -> list[Finding]:
    """Threads with idle gaps longer than their provider's TTL before a reusable prefix."""
    rule = RULES["ttl_gaps"]
    gaps: dict[str, list[tuple[int, float]]] = {}
    thread_provider: dict[str, str] = {}
    for thread, indexes in ctx.threads.items():
        for before, call in pairwise(indexes):
            row, prev = ctx.calls[call], ctx.calls[before]
            if row["ts"] is None or prev["ts"] is None:
                continue
            ttl = _ttl(ctx, row["provider"], before)
            idle = (row["ts"] - prev["ts"]).total_seconds()
            reusable = row["prev_common_tokens"] or 0
            if (
                ttl is not None
                and idle > ttl
                and reusable >= _minimum(row["provider"], row["model"])
            ):
                gaps.setdefault(thread, []).append((call, idle))
                thread_provider[thread] = row["provider"]
    confirmed: dict[str, set[int]] = {}  # calls the provider's usage shows as TTL misses
    for row in ctx.calls:
        if row.get("miss_cause") == "ttl_expired":
            thread = row["thread"]
            confirmed.setdefault(thread, set()).add(row["call"])
            if row["call"] not in {c for c, _ in gaps.get(thread, [])}:
                last = ctx.calls[row["prev_call"]] if row["prev_call"] is not None else None
                idle = (
                    (row["ts"] - last["ts"]).total_seconds()
                    if last is not None and row["ts"] and last["ts"]
                    else 0.0
                )
                gaps.setdefault(thread, []).append((row["call"], idle))
                thread_provider[thread] = row["provider"]
    findings = []
    for thread in list(gaps):  # a gap beyond every TTL the provider offers is a pause
        longest_ttl = _longest_ttl(thread_provider[thread])
        if longest_ttl is None:
            continue
        pauses = [(c, idle) for c, idle in gaps[thread] if idle > longest_ttl]
        if pauses:
            findings.append(_pause_note(ctx, rule, thread, thread_provider[thread], pauses))
            gaps[thread] = [(c, idle) for c, idle in gaps[thread] if idle <= longest_ttl]
            if not gaps[thread]:
                del gaps[thread]
    simulations: dict[tuple[str, str], Any] = {}
    for thread, found in gaps.items():
        provider = thread_provider[thread]
        found.sort()
        calls = [c for c, _ in found]
        key = (provider, "default")
        if key not in simulations:
            simulations[key] = _simulate(ctx, provider)
        base = simulations[key]
        cost = what_if = None
        wasted = [w for c in calls if (w := ctx.calls[c].get("waste_usd")) is not None]
        if len(wasted) == len(calls):
            cost = float(sum(wasted))  # the calls' waste (cacheviz.money._metrics): billed - ideal
        elif base is not None:
            rows = base.calls.filter(base.calls["call"].is_in(calls))
            if rows["cost_usd"].null_count() == 0 and rows["ideal_usd"].null_count() == 0:
                cost = float((rows["cost_usd"] - rows["ideal_usd"]).clip(0).sum())
        found_profile = providers.find(provider)
        longer = found_profile.longer_ttl if found_profile is not None else None
        current = _ttl(ctx, provider, calls[0])
        longest = max(found_profile.ttls.values(), default=None) if found_profile else None
        already = current is not None and longest is not None and current >= longest
        already = already or _uses_longer_ttl(ctx, provider, ctx.threads[thread])
        if already:
            longer = None  # never recommend what the session already uses
        if longer is not None and base is not None and base.total_cost_usd is not None:
            lkey = (provider, "longer")
            if lkey not in simulations:
                simulations[lkey] = _simulate(ctx, provider, **longer.rules)
            other = simulations[lkey]
            if other is not None and other.total_cost_usd is not None:
                what_if = (base.total_cost_usd, other.total_cost_usd, longer.advice)
        tokens = sum(ctx.calls[c]["prev_common_tokens"] or 0 for c in calls)
        longest_idle = max(idle for _, idle in found)
        advice = ""
        if what_if is not None:
            now, then, how = what_if
            if then < now:
                advice = (
                    f" With {how} the session would cost ${then:,.4f} instead of ${now:,.4f} "
                    f"(saves ${now - then:,.4f}): it pays off."
                )
            else:
                advice = (
                    f" With {how} it would cost ${then:,.4f} instead of ${now:,.4f}: the "
                    f"longer TTL's dearer writes outweigh the re-writes it avoids (break-even "
                    f"not reached)."
                )
        share = break_even(provider, ctx.calls[calls[0]]["model"], ctx.calls[calls[0]]["ts"])
        fix = rule.fix
        if already:
            share = None
            uses = (
                found_profile.longer_ttl.advice
                if found_profile is not None and found_profile.longer_ttl is not None
                else f"a {(current or 0) / 60:,.0f}-minute TTL"
            )
            advice = (
                f" The thread already caches with {uses} (its requests or reported writes): "
                "a longer TTL is not the fix."
            )
            fix = "keep the cache warm across such pauses, or accept the re-writes."
        if share is not None:
            advice += (
                f" Break-even: the 1h TTL pays off once re-writes after gaps exceed "
                f"{share:.0%} of the tokens written."
            )
        message = (
            f"{rule.title}: thread {thread!r} idles longer than its {provider} cache TTL "
            f"({(current or 0) / 60:,.0f} min) "
            f"{len(found)} time(s) (longest {longest_idle / 60:,.1f} min) before call(s) "
            f"{call_list(calls)}, writing {tokens:,} reusable tokens again."
            f"{_confirmed(confirmed, thread, calls)}{advice} "
            f"{rule.why} Fix: {fix}"
        )
        findings.append(
            Finding("ttl_gaps", rule.severity, calls, message, cost, thread, ctx.line(calls[0]))
        )
    return findings
