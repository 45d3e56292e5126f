"""The per-session stages: threads, namespaces, the common-prefix line, drifts and their causes.

``_thread`` groups calls into conversations, ``_namespace`` says where a provider could
serve a prefix from, ``_index`` holds the radix index and measures the common-prefix line,
``_segments`` builds the segments frame (CacheShape), ``_calibrate`` maps local tokens onto
the provider's, ``_ttl`` reads the TTL a session used, ``_diagnose`` names a drift's cause,
``_compaction`` finds a compaction in a byte-exact capture.
"""
