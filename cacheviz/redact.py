"""Redact what looks like a credential before text leaves Python (report, widget, exports).

The one place that decides what is a secret. The patterns are detect-secrets' regex
plugins (AWS, GitHub, GitLab, Slack, Stripe, JWT, SendGrid, PyPI, npm, basic-auth URLs,
...) plus what they lack: Anthropic and current OpenAI keys, Google API keys, GitHub
fine-grained tokens, AWS secret access keys without quotes, whole PEM private-key blocks
(Google service-account files carry one), bearer tokens and ``key=value`` secrets.

Every surface that shows transcript text calls :func:`redact` or :func:`redact_all`:
the report's data, the widget's synced state, drift texts (the whole text is redacted,
then cut: :func:`redact_slice`) and token chips (:func:`secret_spans` masks every chip
that touches a secret). :func:`redaction` turns it off explicitly, for local debugging.
"""

from __future__ import annotations

import functools
import re
import sys
import types
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"
MIN_FIELD_SECRET = 12  # characters a ``password=...`` value needs to count as a secret
MARGIN = 16_384  # characters around a cut that are searched (a PEM block fits)
_ENABLED: ContextVar[bool] = ContextVar("redaction", default=True)

# detect-secrets' regex plugins that redaction uses (others are noisy on prose: public
# IPs, high-entropy strings, keywords, Twilio/Artifactory short ids).
_PLUGINS = (
    ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("jwt", "JwtTokenDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
)
_OWN = (
    r"sk-ant-[A-Za-z0-9_\-]{10,}",  # Anthropic
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI (new keys lack T3BlbkFJ)
    r"AIza[0-9A-Za-z_\-]{35}",  # Google API key
    r"github_pat_[A-Za-z0-9_]{30,}",  # GitHub fine-grained token
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub (any length)
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack (any shape)
    r"(?:r|s)k_(?:live|test)_[0-9a-zA-Z]{16,}",  # Stripe (current keys are longer)
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key id
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face access token
    r"npm_[A-Za-z0-9]{36}",  # npm access token, bare (detect-secrets wants an .npmrc line)
    # AWS secret access key after its name, however it is written: ``aws configure set
    # aws_secret_access_key KEY``, ``aws_secret_access_key = KEY``, ``SecretAccessKey: KEY``
    r"(?i:secret_?access_?key)\\?[\"']?(?:\s*[:=]\s*|\s+)\\?[\"']?"
    r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
    # URL userinfo: the password of scheme://user:password@host (the user may be empty)
    r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@:\"'<>]*:(?P<value>[^\s/@\"'<>]+)(?=@)",
    # a PEM private key: the whole block, or to the end of its base64 when cut short
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
    r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|(?:[A-Za-z0-9+/=\s]|\\[nr])*)",
    r"(?i:(?<=Bearer )|(?<=Bearer\t))[A-Za-z0-9._~+/\-]{16,}=*",
    # key=value and "key": "value" secrets (AWS secret access keys, passwords, tokens)
    r"(?i:(?:api[_-]?key|secret(?:[_-]?access)?[_-]?key|access[_-]?token|auth[_-]?token"
    r"|private[_-]?key(?:[_-]?id)?|client[_-]?secret|token|secret|password|passwd)"
    r"\\?[\"']?\s*[:=]\s*\\?[\"']?)"
    rf"(?P<value>(?!\[REDACTED\])[^\s\"'\\,;}}]{{{MIN_FIELD_SECRET},}})",
)
# A pattern that matches only a token's known prefix (a fixed-length id, a JWT's lazy
# tail) is extended over the rest of the token, so no suffix is left showing.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-+/=]*")


# Plugins whose first group is the secret (the rest of the match is its label).
_GROUPED = frozenset({"aws", "basic_auth", "npm"})


class _Deferred(types.ModuleType):
    """A module imported on its first attribute use (``requests`` for detect-secrets).

    detect-secrets' plugins ``import requests`` at the top for their ``verify`` methods,
    which redaction never calls; importing it (urllib3, http, ssl, ...) was half the
    cost of a report's start. This stands in for it while the plugins are imported, and
    imports the real module, then behaves as it, if anything ever touches it.
    """

    def __getattr__(self, name: str) -> Any:
        import importlib

        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, name)


def _plugin_classes() -> list[tuple[str, Any]]:
    """detect-secrets' plugin classes of ``_PLUGINS``, ``requests`` deferred."""
    import importlib

    stand_in = None
    if "requests" not in sys.modules:
        stand_in = sys.modules["requests"] = _Deferred("requests")
    try:
        return [
            (module, getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name))
            for module, name in _PLUGINS
        ]
    finally:
        if stand_in is not None and sys.modules.get("requests") is stand_in:
            del sys.modules["requests"]  # a later ``import requests`` gets the real one


@functools.cache
def _patterns() -> tuple[tuple[re.Pattern[str], int | str], ...]:
    """Every pattern, with the group that holds the secret (0: the whole match)."""
    compiled: list[tuple[re.Pattern[str], int | str]] = []
    for module, plugin in _plugin_classes():
        for pattern in plugin.denylist:
            group = 1 if module in _GROUPED and pattern.groups else 0
            compiled.append((re.compile(pattern.pattern, pattern.flags), group))
    for text in _OWN:
        pattern = re.compile(text, re.DOTALL)
        compiled.append((pattern, "value" if "value" in pattern.groupindex else 0))
    return tuple(compiled)


Factors = frozenset[tuple[str, bool]]
"""Literals ``(text, ignore case)``, one of which is in every text a pattern matches in."""


def _better(one: Factors | None, other: Factors | None) -> Factors | None:
    """The more selective of two requirements (both hold): longer literals, then fewer."""
    if one is None or other is None:
        return other if one is None else one

    def rank(factors: Factors) -> tuple[int, int]:
        return min(len(text) for text, _ in factors), -len(factors)

    return other if rank(other) > rank(one) else one


def _factors(items: Any, ignore_case: bool) -> Factors | None:
    """What every match of the parsed sequence ``items`` contains (``None``: nothing known).

    Read from the pattern's own parse (``re._parser``): a run of literal characters is
    a literal; a group, a repeat of at least one, a lookahead or lookbehind (its text is
    in the searched text too) requires what its content requires; a branch one of its
    alternatives' literals (nothing when one alternative requires nothing); anything
    else (classes, optional parts, negative assertions) requires nothing. A sequence
    requires what each of its items does: the most selective is kept.
    """
    import importlib

    c = importlib.import_module("re._constants")  # private: see _parse

    best: Factors | None = None
    run: list[str] = []
    for op, av in [*items, (None, None)]:  # the sentinel closes the last run
        if op is c.LITERAL:
            run.append(chr(av))
            continue
        if run:
            text = "".join(run)
            # ASCII without letters (":", "://") matches only itself, whatever the case flag
            cased = ignore_case and not (text.isascii() and not any(map(str.isalpha, text)))
            best = _better(best, frozenset({(text, cased)}))
            run = []
        found: Factors | None = None
        if op is c.SUBPATTERN:
            _, add, remove, sub = av
            inner = (ignore_case or bool(add & c.SRE_FLAG_IGNORECASE)) and not (
                remove & c.SRE_FLAG_IGNORECASE
            )
            found = _factors(sub, inner)
        elif op is c.BRANCH:
            options = [_factors(option, ignore_case) for option in av[1]]
            known = [option for option in options if option is not None]
            if options and len(known) == len(options):
                found = frozenset().union(*known)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, _, sub = av
            found = _factors(sub, ignore_case) if low >= 1 else None
        elif op is c.ASSERT:
            found = _factors(av[1], ignore_case)
        elif op is c.ATOMIC_GROUP:
            found = _factors(av, ignore_case)
        best = _better(best, found)
    return best


def _parse(pattern: re.Pattern[str]) -> Any:
    """``pattern`` as ``re`` parses it (a private module: it may differ in another Python)."""
    import importlib

    return importlib.import_module("re._parser").parse(pattern.pattern, pattern.flags)


def _requirement(pattern: re.Pattern[str]) -> Factors | None:
    """The literals one of which a text holds wherever ``pattern`` matches in it."""
    try:
        parsed = _parse(pattern)
        return _factors(parsed.data, bool(parsed.state.flags & re.IGNORECASE))
    except Exception:  # another Python's parser: search the pattern in every text
        return None


@dataclass(frozen=True)
class _Gates:
    """The patterns by their shortest match, and the literals they need (:func:`_needed`)."""

    widths: list[int]
    """Each pattern's shortest match, ascending."""
    rows: list[tuple[re.Pattern[str], int | str]]
    """The patterns (and the group holding the secret) in that order."""
    always: list[int]
    """The patterns no literal is known for (searched in every text long enough)."""
    exact: list[tuple[str, tuple[int, ...]]]
    """Each literal matched with its case, and the patterns one of whose literals it is."""
    folded: list[tuple[str, re.Pattern[str], tuple[int, ...]]]
    """Each literal matched without its case: lowered, as a pattern, its patterns."""
    any_exact: re.Pattern[str]
    """Every ``exact`` literal as one alternation (searched at the speed of its first
    characters' set: no pattern is tried where none of them is)."""
    any_folded: re.Pattern[str]
    """Every ``folded`` literal lowered, as one alternation (for a lowered ASCII text)."""


def _alternation(texts: set[str]) -> re.Pattern[str]:
    ordered = sorted(texts, key=lambda text: (-len(text), text))
    return re.compile("|".join(map(re.escape, ordered)) or "(?!)")


@functools.cache
def _gates() -> _Gates:
    """Each pattern's shortest match and the literals it needs (:func:`_needed`)."""
    table = []
    for pattern, group in _patterns():
        try:
            shortest = _parse(pattern).getwidth()[0]
        except Exception:  # another Python's parser: any text may match
            shortest = 0
        table.append((shortest, pattern, group, _requirement(pattern)))
    table.sort(key=lambda row: row[0])
    users: dict[tuple[str, bool], list[int]] = {}
    always = []
    for k, (_, _, _, factors) in enumerate(table):
        if factors is None:
            always.append(k)
        for factor in sorted(factors or ()):
            users.setdefault(factor, []).append(k)
    exact = [(text, tuple(ks)) for (text, cased), ks in users.items() if not cased]
    folded = [
        (text.lower(), re.compile(re.escape(text), re.IGNORECASE), tuple(ks))
        for (text, cased), ks in users.items()
        if cased
    ]
    return _Gates(
        widths=[row[0] for row in table],
        rows=[(row[1], row[2]) for row in table],
        always=always,
        exact=exact,
        folded=folded,
        any_exact=_alternation({text for text, _ in exact}),
        any_folded=_alternation({text for text, _, _ in folded}),
    )


def _needed(text: str) -> list[tuple[re.Pattern[str], int | str]]:
    """The patterns that may match in ``text``; the others have no match there.

    A pattern is left out when its shortest match is longer than the text, or when no
    literal that every one of its matches contains (:func:`_factors`) is in the text: the
    same spans as searching every pattern (:func:`_patterns`). Most texts hold none of
    the literals: a search of their alternation says so. Literals without case are
    looked for in the lowered text when it is ASCII (there ``re``'s case rules are
    ASCII's: the other letters it folds to ASCII ones, U+212A, U+0131, U+017F, U+0130,
    are not in it), else with their own ``re.IGNORECASE`` pattern.
    """
    gates = _gates()
    count = bisect_right(gates.widths, len(text))
    if not count:
        return []
    lowered = text.lower() if text.isascii() else None
    chosen = {k for k in gates.always if k < count}
    if (
        not chosen
        and lowered is not None
        and gates.any_exact.search(text) is None
        and gates.any_folded.search(lowered) is None
    ):
        return []
    for literal, ks in gates.exact:
        if literal in text:
            chosen.update(ks)
    for literal, found, ks in gates.folded:
        if (literal in lowered) if lowered is not None else found.search(text) is not None:
            chosen.update(ks)
    rows = gates.rows
    return [rows[k] for k in sorted(chosen) if k < count]


def enabled() -> bool:
    """Whether redaction is on (it is, unless turned off with :func:`redaction`)."""
    return _ENABLED.get()


@contextmanager
def redaction(*, enabled: bool) -> Iterator[None]:
    """Turn redaction on or off inside the block (off only for local debugging).

    Examples
    --------
    >>> with redaction(enabled=False):
    ...     redact("Bearer abcdefghijklmnop1234")
    'Bearer abcdefghijklmnop1234'
    """
    token = _ENABLED.set(enabled)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def secret_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of every secret in ``text``, merged, sorted."""
    if not text or not _ENABLED.get():
        return []
    spans = []
    for pattern, group in _needed(text):
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if group == 0:  # a token: cover its tail too
                tail = _TOKEN_TAIL.match(text, end)
                end = tail.end() if tail is not None else end
            if end > start:
                spans.append((start, end))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def redact(text: str) -> str:
    """``text`` with API keys, tokens, private keys and ``key=...`` secrets replaced.

    Examples
    --------
    >>> redact("Authorization: Bearer abcdefghijklmnop1234")
    'Authorization: Bearer [REDACTED]'
    >>> redact("key sk-ant-api03-AbCdEfGhIjKlMnOp and more")
    'key [REDACTED] and more'
    """
    return redact_slice(text, 0, len(text)) if text else text


def redact_slice(text: str, start: int, end: int) -> str:
    """``text[start:end]`` redacted as if the whole text had been redacted, then cut.

    A secret that crosses the cut is replaced whole, so no piece of it shows.
    """
    if not _ENABLED.get():
        return text[start:end]
    low = max(0, start - MARGIN)
    high = min(len(text), end + MARGIN)
    region = text[low:high] if (low, high) != (0, len(text)) else text
    out = []
    position = start
    for span_start, span_end in secret_spans(region):
        span_start += low
        span_end += low
        if span_end <= start or span_start >= end:
            continue
        out.append(text[position : max(position, span_start)])
        out.append(REDACTED)
        position = max(position, span_end)
    out.append(text[position:end])
    return "".join(out)


def redact_cut(text: str, limit: int, start: int = 0, *, mark: str = "…") -> str:
    """The one way a text is shortened for display: redacted whole, then cut.

    ``text[start:start + limit]`` with ``mark`` where text was cut off (before, after).
    A secret that crosses a cut shows as ``[REDACTED]``, never as a piece; every
    surface that quotes a piece of transcript text (``check``'s messages, SARIF, JUnit,
    the drift detail, the diagnosis) goes through here or :func:`redact_slice`.

    Examples
    --------
    >>> redact_cut("key sk-ant-api03-AbCdEfGhIjKlMnOp and more", 10)
    'key [REDACTED]…'
    >>> redact_cut("short", 10)
    'short'
    """
    start = max(0, start)
    if start == 0 and len(text) <= limit:
        return redact(text)
    end = start + limit
    cut = end < len(text)
    piece = redact_slice(text, start, end - len(mark) if cut else end)
    return f"{mark if start else ''}{piece}{mark if cut else ''}"


def redact_all(value: Any) -> Any:
    """Redact every string inside a JSON-like value (keys too), recursively.

    Each distinct string is redacted once (a report repeats the same labels, parts and
    hashes across thousands of calls): the result is the same as redacting each.
    """
    if not _ENABLED.get():
        return value
    return _redact_all(value, {})


def _redact_all(value: Any, done: dict[str, str]) -> Any:
    if isinstance(value, str):
        out = done.get(value)
        if out is None:
            out = done[value] = redact(value)
        return out
    if isinstance(value, (list, tuple)):
        return [_redact_all(v, done) for v in value]
    if isinstance(value, dict):
        return {_redact_all(k, done): _redact_all(v, done) for k, v in value.items()}
    return value
