"""Moonshot AI (Kimi) context caching (providers.md §5.3 and §7).

K2-era models: **automatic** context caching, no write fee, a hit billed at the model's
cached-input price; the rule is :class:`~cacheviz.providers._implicit.ImplicitPrefixSimulator`
(xAI's, Mistral's and Qwen's implicit cache are the same rule in §7). Kimi CLI speaks
Moonshot's OpenAI-compatible API and logs ``input_cache_read`` (a read, never a write).

Approximations, each a parameter:

- ``unit_tokens`` 256: the Kimi Coding endpoint matches prefixes in 256-token chunks
  (empirical) [3P]; Moonshot's own API granularity is undocumented [U].
- ``ttl_seconds`` (5 minutes after last use) is undocumented [U].
- No minimum prompt is documented [U].
- kimi-k3's separate cache writes (5m at 1x, 1h at 2x, set with ``prompt_cache_options``)
  are billed from the reported usage (the prices come from genai-prices) but not
  simulated: the replay writes nothing [U].

Prices: genai-prices' ``moonshotai`` list (this profile's id, so every model it prices
bills as itself). Kimi Code's own ``kimi-for-coding`` is a membership model with no
per-token price: it is listed as unpriced (the overlay's ``unpriced`` entry says why).
"""

from __future__ import annotations

from dataclasses import dataclass

from cacheviz.providers._implicit import ImplicitPrefixSimulator
from cacheviz.providers._profile import ProviderProfile


@dataclass
class MoonshotSimulator(ImplicitPrefixSimulator):
    """Moonshot's automatic context caching; every parameter defaults to the spec.

    Parameters
    ----------
    unit_tokens
        Hits are floored to a multiple of it (256-token chunks [3P]).
    min_tokens
        A prompt shorter than this gets no hit (none documented).
    ttl_seconds
        Lifetime of a cached prompt after its last use [U].
    """

    unit_tokens: int = 256
    provider: str = "moonshotai"


PROFILE = ProviderProfile(
    id="moonshotai",
    label="Moonshot AI (Kimi)",
    module="moonshot",
    simulator="MoonshotSimulator",
    aliases=("moonshot", "kimi"),
    model_prefixes=("kimi-", "moonshot-"),
    default_ttl_seconds=MoonshotSimulator.ttl_seconds,
    reference_model="kimi-k2.6",
    compared=False,
)
