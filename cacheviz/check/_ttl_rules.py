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
from cacheviz.check._rules import RULES
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
    if not gaps:
        return []
    findings = []
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
        if already and current is not None:
            share = None
            advice = (
                f" The thread already caches with a {current / 60:,.0f}-minute TTL (its "
                "reported writes): these gaps outlast even that."
            )
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
            f"{rule.why} Fix: {rule.fix}"
        )
        findings.append(
            Finding("ttl_gaps", rule.severity, calls, message, cost, thread, ctx.line(calls[0]))
        )
    return findings
