"""The version of cacheviz, written once: pyproject.toml reads it (hatch's dynamic version)."""

__version__ = "0.1.0"
