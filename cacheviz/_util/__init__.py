"""Helpers that know nothing of cacheviz: sequence prefixes, visible text, the cache folder."""
