"""Alibaba Cloud Model Studio (Qwen / DashScope) implicit cache (providers.md §5.4 and §7).

The implicit cache is automatic and cannot be turned off: no write fee, a hit billed at
the cached rate; the rule is :class:`~cacheviz.providers._implicit.ImplicitPrefixSimulator`
(§7: "Qwen implicit: automatic LCP against live entries, no write fee"). Qwen Code
logs Gemini-shaped usage (``cachedContentTokenCount``: reads only).

Approximations, each a parameter:

- ``min_tokens`` 256: the English page (2026-03-31) says 256, a newer Chinese copy
  1,024 [C].
- Granularity is undocumented: token-exact [U]; ``ttl_seconds`` (5 minutes after last
  use) is "not guaranteed; periodically cleared" [U].
- The explicit cache (``cache_control`` markers, writes at 1.25x, reads at 0.1x) is not
  simulated. Its writes are not in Qwen Code's logs, so a billed figure counts them as
  uncached input (25 % short on those tokens) [U].

Prices: genai-prices has no Alibaba list; the overlay holds DashScope's tiered prices
by prompt size (from LiteLLM's ``dashscope/`` entries, whose source is
alibabacloud.com/help/en/model-studio/models). Qwen Code's ``coder-model`` (Qwen OAuth's
free tier) has no per-token price: it is listed as unpriced (the overlay says why).
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheviz.providers._implicit import ImplicitPrefixSimulator
from cacheviz.providers._profile import ProviderProfile


@dataclass
class QwenSimulator(ImplicitPrefixSimulator):
    """DashScope's implicit cache; every parameter defaults to the spec.

    Parameters
    ----------
    unit_tokens
        Hits are floored to a multiple of it (token-exact [U]).
    min_tokens
        A prompt shorter than this gets no hit (256 [C]).
    ttl_seconds
        Lifetime of a cached prompt after its last use [U].
    """

    min_tokens: int = 256
    provider: str = "qwen"


def _min_tokens(model: str) -> int:
    return QwenSimulator.min_tokens


PROFILE = ProviderProfile(
    id="qwen",
    label="Alibaba Qwen (DashScope)",
    module="qwen",
    simulator="QwenSimulator",
    aliases=("dashscope", "alibaba", "qwencloud"),
    model_prefixes=("qwen",),
    default_ttl_seconds=QwenSimulator.ttl_seconds,
    min_tokens=_min_tokens,
    reference_model="qwen3-coder-plus",
    compared=False,
)
