"""Provider caching simulators, one module per provider (providers.md §7)."""
