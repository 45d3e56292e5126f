"""What a session cost, and would cost under each provider's rules.

``pricing`` (public) holds the dated prices (``_price_copy`` a faster copy of
genai-prices' records); ``_simulate`` replays a session under a provider's rules,
``_costs`` prices the calls, drifts and misses, ``_metrics`` defines waste and hit ratio.
"""
