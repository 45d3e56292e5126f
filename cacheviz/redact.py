"""Redact what looks like a credential before text leaves the machine (reports, exports)."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"
_SECRETS = re.compile(
    r"(?P<key>sk-ant-[A-Za-z0-9_\-]{10,}"  # Anthropic
    r"|sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"  # OpenAI and look-alikes
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API key
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub
    r"|xox[abpr]-[A-Za-z0-9\-]{10,})"  # Slack
    r"|(?P<bearer>Bearer\s+)[A-Za-z0-9._~+/\-]{16,}=*"
    r"|(?P<field>(?:api[_-]?key|token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"']{12,}",
    re.IGNORECASE,
)


def _replace(match: re.Match[str]) -> str:
    kept = match.group("bearer") or match.group("field") or ""
    return f"{kept}{REDACTED}"


def redact(text: str) -> str:
    """``text`` with API keys, bearer tokens and ``key=...`` secrets replaced.

    Examples
    --------
    >>> redact("Authorization: Bearer abcdefghijklmnop1234")
    'Authorization: Bearer [REDACTED]'
    >>> redact("key sk-ant-api03-AbCdEfGhIjKlMnOp and more")
    'key [REDACTED] and more'
    """
    return _SECRETS.sub(_replace, text)


def redact_all(value: Any) -> Any:
    """Redact every string inside a JSON-like value."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_all(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_all(v) for k, v in value.items()}
    return value
