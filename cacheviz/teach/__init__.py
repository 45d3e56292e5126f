"""Teaching material: the deterministic sample sessions and the prompt-caching lab."""
