"""What differs between the SDK majors the recorders are tested on.

``pyproject.toml``'s ``record`` extra allows anthropic 0.40 to 2.x and openai 1.55.3 to
3.x. anthropic 0.x and openai 1.x/2.x send through httpx, anthropic 1.x/2.x and openai 3.x
through httpx2, and they raise different classes for the same fault. The recording tests
ask here, and assert on what lands in the log rather than on one major's exception class.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import pytest


def _classes(*names: tuple[str, str]) -> tuple[type[BaseException], ...]:
    found = []
    for module_name, attribute in names:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found.append(getattr(module, attribute))
    return tuple(found)


# A stream the server cuts reaches the caller as the SDK's connection error (anthropic
# 2.17 wraps read errors) or as the HTTP client's own RemoteProtocolError (the others).
STREAM_CUT = _classes(
    ("anthropic", "APIConnectionError"),
    ("openai", "APIConnectionError"),
    ("httpx2", "RemoteProtocolError"),
    ("httpx", "RemoteProtocolError"),
)


# openai's Responses API came in openai 1.66; older SDKs have no `client.responses`
HAS_RESPONSES = importlib.util.find_spec("openai") is not None and (
    importlib.util.find_spec("openai.resources.responses") is not None
)
NO_RESPONSES = pytest.mark.skipif(
    not HAS_RESPONSES,
    reason="this openai SDK has no Responses API (added in openai 1.66)",
)


def kinds() -> list[Any]:
    """The APIs to call, as parameters: Responses skipped where the SDK lacks it."""
    return ["messages", "chat.completions", pytest.param("responses", marks=NO_RESPONSES)]


def available_kinds() -> list[str]:
    """The APIs this SDK pair can call."""
    return ["messages", "chat.completions", *(["responses"] if HAS_RESPONSES else [])]


def count_tokens(client: Any, **kwargs: Any) -> Any:
    """Anthropic's token count: ``messages.count_tokens``, under ``beta`` in older SDKs."""
    messages = client.messages
    if not hasattr(messages, "count_tokens"):
        messages = client.beta.messages
    return messages.count_tokens(**kwargs)
