"""xAI (Grok) prompt caching (providers.md §5.2 and §7).

**Automatic**, no write fee, a hit billed at the model's cached-input price; usage is
OpenAI-style (``prompt_tokens_details.cached_tokens``, ``input_tokens_details.cached_tokens``:
the reads are part of the prompt). The rule is
:class:`~cacheviz.providers._implicit.ImplicitPrefixSimulator` (§7: "xAI … automatic LCP
against live entries, no write fee"). Grok Build CLI and other clients reach it at
``api.x.ai``; being OpenAI-compatible does not make OpenAI's caching rules apply (no
1,024-token minimum, no 128-token steps past it, no 24-hour retention).

Approximations, each a parameter:

- ``unit_tokens`` 128: "128-token block" per a third-party gateway's doc (tested
  2026-08-19) [3P/U]; xAI documents no granularity.
- No minimum prompt is documented [U].
- ``ttl_seconds`` (5 minutes after last use) is undocumented [U]: entries live per
  server and "can be evicted at any time" (load, restarts); requests stay on one server
  through ``x-grok-conv-id`` or ``prompt_cache_key``, which the replay assumes (one
  cache per model).
- Append-only: "any edit, removal, or reorder breaks the cache", which the longest
  common prefix already models.

Prices: genai-prices' xAI list (its provider ``x-ai``, matched by the name ``xai``):
grok-4.20 / grok-4.3 / grok-4.5 / grok-4.6 / grok-4.7 and older, each with its 200k-token
tier (xAI's threshold is inclusive: a prompt of 200,000 tokens or more). Grok Build
bills its turns under ``grok-4.5-build`` and ``grok-4.6-build``, which no list prices:
the price overlay's aliases price them as ``grok-4.5`` and ``grok-4.6``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheviz.providers._implicit import ImplicitPrefixSimulator
from cacheviz.providers._profile import ProviderProfile


@dataclass
class XAISimulator(ImplicitPrefixSimulator):
    """xAI's automatic prompt caching; every parameter defaults to the spec.

    Parameters
    ----------
    unit_tokens
        Hits are floored to a multiple of it (128-token blocks [3P/U]).
    min_tokens
        A prompt shorter than this gets no hit (none documented [U]).
    ttl_seconds
        Lifetime of a cached prompt after its last use [U].
    """

    unit_tokens: int = 128
    provider: str = "xai"


PROFILE = ProviderProfile(
    id="xai",
    label="xAI (Grok)",
    module="xai",
    simulator="XAISimulator",
    aliases=("x-ai", "grok"),
    model_prefixes=("grok",),
    default_ttl_seconds=XAISimulator.ttl_seconds,
    reference_model="grok-4.5",
    compared=False,
)
