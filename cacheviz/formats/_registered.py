"""Every registered reader module, typed as a :class:`~cacheviz.formats._reader.Reader`.

mypy checks each module below against the protocol (its ``NAME``, ``DESCRIPTION``,
``detect`` and ``read``); ``tests/formats/test_registry.py`` checks that the list is the
registry (``formats._registry._MODULES``), in its order. The package never imports this module:
importing it imports every reader, which detection avoids.
"""

from __future__ import annotations

from collections.abc import Sequence

from cacheviz.formats import (
    aider,
    amp,
    antigravity,
    cc_viewer,
    claude_code,
    claude_tap,
    claude_trace,
    cline,
    cline_ui,
    codebuff,
    codex,
    continue_dev,
    copilot_cli,
    crush,
    droid,
    gemini_cli,
    gemini_json,
    goose,
    grok,
    hermes,
    inspect_log,
    kimi_cli,
    mitm,
    native,
    openai_log,
    openclaw,
    opencode,
    openhands,
    otel,
    pi,
    qwen_code,
    swe_agent,
    whale_usage,
    zcode,
)
from cacheviz.formats._reader import Reader

# in formats._registry._MODULES' (detection) order; a list, so that mypy names a module that differs
MODULES: Sequence[Reader] = [
    openai_log,
    native,
    claude_trace,
    claude_tap,
    cc_viewer,
    mitm,
    qwen_code,
    claude_code,
    codex,
    gemini_json,
    gemini_cli,
    inspect_log,
    codebuff,
    cline,
    openhands,
    zcode,
    opencode,
    copilot_cli,
    kimi_cli,
    amp,
    openclaw,
    pi,
    hermes,
    goose,
    droid,
    grok,
    crush,
    antigravity,
    swe_agent,
    aider,
    whale_usage,
    cline_ui,
    continue_dev,
    otel,
]
