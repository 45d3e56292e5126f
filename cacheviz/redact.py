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
import string
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


# Every character ``re`` matches with an ASCII letter when the case is ignored (the
# letters' two cases, and the four of ``re``'s documentation: İ ı ſ K).
_FOLDED = string.ascii_letters + "\u0130\u0131\u017f\u212a"


def _words(*words: str) -> str:
    """``words`` (expressions, each starting with an ASCII letter) matched without case.

    One alternation, written as the words' first letters, a set, then each word's rest
    after a look back at its letter: ``re`` scans a text for a character of the set at C speed (its
    "charset prefix") instead of trying every word at every position, which an
    alternation without case (no prefix it can scan for) does. The set holds the
    letters' other cases as ``re`` folds them (the long s is an ``s``, the Kelvin sign a
    ``k``, the dotless i and the dotted capital I an ``i``).

    Examples
    --------
    >>> re.fullmatch(_words("api[_-]?key", "token"), "API_KEY") is not None
    True
    """
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0].lower(), []).append(word[1:])
    firsts = "".join(c for c in _FOLDED if re.match(f"[{''.join(groups)}]", c, re.IGNORECASE))
    rests = "|".join(f"(?<={letter})(?:{'|'.join(ends)})" for letter, ends in groups.items())
    return f"[{firsts}](?i:{rests})"


MAILGUN = r"[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}"
"""A current Mailgun key, as written (its pattern in ``_OWN`` looks back from the "-")."""

# The words of a ``name=value`` label: a ``*_KEY`` only after a word that makes it a
# credential (``ENCRYPTION_KEY``, ``JWT_SIGNING_KEY``; not ``sort_key`` or ``cache_key``),
# ``PASS`` and ``PWD`` only as a word of their own (``DB_PASS``, ``MYSQL_PWD``; not
# ``bypass``, nor the working directory ``PWD``).
_KEY_WORDS = [
    *("api", "secret", "private", "encryption", "encrypt", "signing", "sign", "master"),
    *("auth", "session", "app", "client", "license", "hmac", "jwt", "cipher", "crypto"),
    *("aes", "webhook", "ssh", "gpg", "pgp"),
]
_KEY_LABEL = _words(*(f"{word}[_-]?(?:access[_-]?)?" for word in _KEY_WORDS)) + (
    r"(?i:key(?:[_-]?(?:base|b64|base64|hex))?)"
)
_LABEL = _words(
    "private[_-]?key[_-]?id",
    "access[_-]?token",
    "auth[_-]?token",
    "client[_-]?secret",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    r"p(?<![A-Za-z0-9]p)ass",  # pass, not after a letter or digit
    r"p(?<=[_.\-]p)wd",  # pwd, after _ . or -
)
# What follows a label: its separator, then a value of MIN_FIELD_SECRET characters or
# more that is not code: a call, an index or an argument naming a variable
# (``signing_key=keys.signing_key)``, ``master_key = get_secret(name)``,
# ``passphrase: Optional[str]``, ``api_key=self.api_key``), a variable named for the
# secret in code (``self._key = encryption_key``; an ``.env`` placeholder
# ``API_KEY=your_api_key`` stays redacted), a reference to one (``$DB_PASSWORD``,
# ``os.environ/MASTER_KEY``), a list, a template (``{api_key}``, ``<token>``).
_CODE = (
    r"self\.|this\.|os\.environ|process\.env|[\[{<(]|[A-Za-z]+[\[(]"
    r"|(?=[A-Za-z0-9_.]*[_.])[A-Za-z_][A-Za-z0-9_.]*(?:[()\[\],]|\\?[\"']?[ \t]*[)\],])"
    r"|(?<=[ \t])[A-Za-z0-9_]*[_.](?i:key|token|secret|password|passwd|pass|pwd)(?![^\s\"'\\,;}])"
    r"|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?(?![^\s\"'\\,;}])"
)
_FIELD = (
    r"(?i:\\?[\"']?\s*[:=]\s*\\?[\"']?)"
    rf"(?P<value>(?!\[REDACTED\]|{_CODE})[^\s\"'\\,;}}]{{{MIN_FIELD_SECRET},}})"
)
_OWN = (
    r"sk-ant-[A-Za-z0-9_\-]{10,}",  # Anthropic
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI (new keys lack T3BlbkFJ)
    r"AIza[0-9A-Za-z_\-]{35}",  # Google API key
    r"ya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth access token
    r"1//0[0-9A-Za-z_\-]{20,}",  # Google OAuth refresh token
    r"github_pat_[A-Za-z0-9_]{30,}",  # GitHub fine-grained token
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub (any length)
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack (any shape)
    r"(?:r|s)k_(?:live|test)_[0-9a-zA-Z]{16,}",  # Stripe (current keys are longer)
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",  # AWS access key id
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face access token
    r"npm_[A-Za-z0-9]{36}",  # npm access token, bare (detect-secrets wants an .npmrc line)
    r"key-[0-9a-f]{32}(?![0-9A-Za-z])",  # Mailgun private API key
    # Mailgun, current (``MAILGUN``): found by its "-" (a literal re scans for fast), the
    # 32 hex before it taken by a look back (the ``head`` group starts the secret)
    r"-[0-9a-f]{8}-[0-9a-f]{8}(?![0-9A-Za-z])"
    r"(?<=(?<![0-9a-f])(?P<head>[0-9a-f]{32})-[0-9a-f]{8}-[0-9a-f]{8})",
    # AWS secret access key after its name, however it is written: ``aws configure set
    # aws_secret_access_key KEY``, ``aws_secret_access_key = KEY``, ``SecretAccessKey: KEY``
    r"(?i:secret_?access_?key)\\?[\"']?(?:\s*[:=]\s*|\s+)\\?[\"']?"
    r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
    # URL userinfo: the password of scheme://user:password@host (the user may be empty; a
    # password may hold ``/``, a port and path ``host:8080/path/@user`` is none)
    r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@:\"'<>]*:(?P<value>(?![0-9]*/)[^\s@\"'<>]+)(?=@)",
    # URL userinfo that is only a token: scheme://TOKEN@host (it holds a digit: a user
    # name such as ``git@`` is none)
    r"[A-Za-z][A-Za-z0-9+.\-]*://(?P<value>(?=[A-Za-z._~\-]*[0-9])[A-Za-z0-9._~\-]{16,})"
    r"(?=@[A-Za-z0-9])",
    # a PEM or PGP private key: the whole block, or to the end of its base64 (and PGP's
    # armor headers) when cut short
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:[A-Z][A-Za-z\-]*: [^\r\n\\]*|[A-Za-z0-9+/=\s]|\\[nr])*)",
    r"(?i:(?<=Bearer )|(?<=Bearer\t))[A-Za-z0-9._~+/\-]{16,}=*",
    # an Authorization header of any scheme: ``Basic user:password`` in base64, GitHub's
    # ``token …``, ``Bearer``, ``ApiKey``, Okta's ``SSWS`` (``Proxy-Authorization`` too)
    r"(?i:authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?:basic|bearer|token|apikey|api-key|key|ssws|sso-key)[ \t]+)"
    # (not a placeholder of small words: ``Bearer your-api-key``, ``Basic base64_creds``)
    r"(?P<value>(?![a-z]+(?:[-_][a-z]+)*(?![A-Za-z0-9._~+/\-]))[A-Za-z0-9._~+/\-]{8,}=*)",
    # a Cookie or Set-Cookie header: every name=value pair to the end of the line
    r"(?i:(?<![A-Za-z0-9_\-])(?:set-)?cookie\\?[\"']?[ \t]*:[ \t]*)"
    r"(?P<value>[!#$%&*+.^_`|~0-9A-Za-z\-]+=[^\r\n\"'\\]+)",
    # key=value and "key": "value" secrets (AWS secret access keys, passwords, tokens,
    # .env lines: DB_PASS=, MYSQL_PWD=, SECRET_KEY_BASE=, ENCRYPTION_KEY=, JWT_SIGNING_KEY=)
    _KEY_LABEL + _FIELD,
    _LABEL + _FIELD,
    # a key named in prose: "my API key is 3f9a…", "access token: …" (a digit and a letter)
    _words(r"api[ \t]key", r"secret[ \t]key", r"access[ \t]token", r"auth[ \t]token")
    + r"(?:[ \t]+(?:is|was))?[ \t]*[:=]?[ \t]*[\"'`]?"
    r"(?P<value>(?=[A-Za-z_\-]*[0-9])(?=[0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{16,})(?![A-Za-z0-9_\-])",
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
    import logging
    import warnings

    stand_in = None
    if "requests" not in sys.modules:
        stand_in = sys.modules["requests"] = _Deferred("requests")
    shown = warnings.showwarning
    try:
        return [
            (module, getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name))
            for module, name in _PLUGINS
        ]
    finally:
        if stand_in is not None and sys.modules.get("requests") is stand_in:
            del sys.modules["requests"]  # a later ``import requests`` gets the real one
        if warnings.showwarning is not shown:
            # detect-secrets' log module turns on logging.captureWarnings on import: every
            # warning of the process (cacheviz's own) would go to a logger instead
            logging.captureWarnings(False)


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


def _fewest(factors: Factors) -> Factors:
    """``factors`` without a literal that holds another one.

    A text holding ``password`` holds ``pass``: one of the rest is in every text it was.
    """

    def holds(text: str, cased: bool, other: str, other_cased: bool) -> bool:
        if other_cased:
            return other.lower() in text.lower()
        return not cased and other in text

    return frozenset(
        (text, cased)
        for text, cased in factors
        if not any(
            (other, other_cased) != (text, cased) and holds(text, cased, other, other_cased)
            for other, other_cased in factors
        )
    )


def _factors(items: Any, ignore_case: bool, prefix: str = "") -> Factors | None:
    """What every match of the parsed sequence ``items`` contains (``None``: nothing known).

    Read from the pattern's own parse (``re._parser``): a run of literal characters is
    a literal; a group, a repeat of at least one, a lookahead or lookbehind (its text is
    in the searched text too) requires what its content requires; a branch one of its
    alternatives' literals (nothing when one alternative requires nothing); anything
    else (classes, optional parts) requires nothing. A sequence requires what each of
    its items does: the most selective is kept. An assertion matches no text, so a run
    goes on across a negative one (``p(?<!x)ass`` holds ``pass``), a lookbehind of
    literals starts a run with its text (``[ab](?<=a)pi`` holds ``api``), and a run
    before a branch is the start of each alternative's (``prefix``).
    """
    import importlib

    c = importlib.import_module("re._constants")  # private: see _parse

    best: Factors | None = None
    run: list[str] = list(prefix)
    for op, av in [*items, (None, None)]:  # the sentinel closes the last run
        if op is c.LITERAL:
            run.append(chr(av))
            continue
        if op in (c.ASSERT_NOT, c.AT):  # zero width: the literals either side adjoin
            continue
        if op is c.ASSERT and av[0] < 0:  # a lookbehind: the text just before
            text = [chr(a) for o, a in av[1] if o is c.LITERAL]
            if run or len(text) != len(av[1]):
                continue  # its text ends the run, or is not only literals
            run = text
            continue
        pending = "".join(run)
        if run:
            # ASCII without letters (":", "://") matches only itself, whatever the case flag
            cased = ignore_case and not (pending.isascii() and not any(map(str.isalpha, pending)))
            best = _better(best, frozenset({(pending, cased)}))
            run = []
        found: Factors | None = None
        if op is c.SUBPATTERN:
            _, add, remove, sub = av
            inner = (ignore_case or bool(add & c.SRE_FLAG_IGNORECASE)) and not (
                remove & c.SRE_FLAG_IGNORECASE
            )
            found = _factors(sub, inner)
        elif op is c.BRANCH:
            options = [_factors(option, ignore_case, pending) for option in av[1]]
            known = [option for option in options if option is not None]
            if options and len(known) == len(options):
                found = _fewest(frozenset().union(*known))
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
    """The ``(start, end)`` character spans of every secret in ``text``, merged, sorted.

    Secrets are looked for in the text as written and in what it reads as: with
    look-alike letters written plainly and invisible characters and percent-escapes
    undone (:func:`_plain_view`), with a key's line break taken out
    (:func:`_across_breaks`), and inside base64 (:func:`_in_base64`). A secret found in
    a view is redacted where it is written: an escape, an invisible character or a line
    break inside it goes with it.
    """
    if not text or not _ENABLED.get():
        return []
    spans = sorted(_spans(text, decode=True))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _spans(text: str, *, decode: bool) -> list[tuple[int, int]]:
    """Every secret's span in ``text`` and its views (unmerged); ``decode``: base64 too.

    A text with look-alike or invisible characters is searched as it reads instead of as
    written (what matches in one matches in the other, but across those characters);
    one with percent-escapes both ways (``password=a%20long%20phrase`` is a value).
    """
    plain = _plain_view(text)
    if plain is None:
        spans = _matches(text)
    else:
        view, unescaped = plain
        spans = [view.original(start, end) for start, end in _matches(view.text)]
        if unescaped:
            spans += _matches(text)
    spans += _across_breaks(text)
    if decode:
        spans += _in_base64(text)
    return spans


def _matches(
    text: str, rows: list[tuple[re.Pattern[str], int | str]] | None = None
) -> list[tuple[int, int]]:
    """The spans the patterns ``rows`` (default: those ``text`` needs) match in ``text``."""
    spans = []
    for pattern, group in _needed(text) if rows is None else rows:
        head = "head" in pattern.groupindex  # the secret starts before the match
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if head:
                start = match.start("head")
            if group == 0:  # a token: cover its tail too
                tail = _TOKEN_TAIL.match(text, end)
                end = tail.end() if tail is not None else end
            if end > start:
                spans.append((start, end))
    return spans


@dataclass(frozen=True)
class _View:
    """A text as it reads, and where each of its characters is written in the original."""

    text: str
    starts: list[int]
    """Each edit's start in ``text`` (ascending)."""
    edits: list[tuple[int, int, int, int]]
    """``(start, end)`` in ``text`` and ``(start, end)`` in the original of each edit: a
    piece of the original read as other text (empty for a character taken out)."""

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The original span of ``text[start:end]`` (whole edits where it cuts into one)."""
        return self._at(start, first=True), self._at(end - 1, first=False)

    def _at(self, index: int, *, first: bool) -> int:
        k = bisect_right(self.starts, index) - 1
        if k < 0:
            return index if first else index + 1
        _, end, original_start, original_end = self.edits[k]
        if index < end:  # inside an edit: all of it
            return original_start if first else original_end
        return original_end + index - end + (0 if first else 1)

    def crosses(self, start: int, end: int) -> bool:
        """Whether ``text[start:end]`` has an edit strictly inside it."""
        k = bisect_right(self.starts, start)
        return k < len(self.starts) and self.starts[k] < end


def _view(text: str, edits: Iterator[tuple[int, int, str]]) -> _View:
    """``text`` with each ``(start, end, replacement)`` of ``edits`` (in order) applied."""
    parts: list[str] = []
    starts: list[int] = []
    table: list[tuple[int, int, int, int]] = []
    position = length = 0
    for start, end, replacement in edits:
        parts.append(text[position:start])
        length += start - position
        starts.append(length)
        table.append((length, length + len(replacement), start, end))
        parts.append(replacement)
        length += len(replacement)
        position = end
    parts.append(text[position:])
    return _View("".join(parts), starts, table)


# Characters that show as nothing: soft hyphen, Mongolian vowel separator, zero-width
# space, non-joiner and joiner, word joiner, byte order mark. Inside a key they hide it
# from a pattern and not from a reader.
_INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u2060\ufeff"
_INVISIBLES = re.compile(f"[{_INVISIBLE}]+")
_ESCAPES = re.compile("%[0-9A-Fa-f]{2}(?:%[0-9A-Fa-f]{2})*")
# Blocks of letters, digits and signs that Unicode writes as an ASCII one (NFKC):
# super- and subscripts, letterlike symbols, enclosed alphanumerics, small and fullwidth
# forms, mathematical alphanumerics (``ｓｋ－ａｎｔ`` reads ``sk-ant``).
_LOOK_ALIKE_BLOCKS = (
    (0x00AA, 0x00BA),
    (0x2070, 0x209F),
    (0x2100, 0x214F),
    (0x2460, 0x24FF),
    (0xFE50, 0xFE6B),
    (0xFF01, 0xFF5E),
    (0x1D400, 0x1D7FF),
)
_SIGNS = frozenset("-_.:=/+@%")  # the signs of tokens and labels (a comma stays a look-alike)


@functools.cache
def _look_alikes() -> tuple[dict[str, str], re.Pattern[str]]:
    """The look-alikes: each by its plain character, and a pattern matching any of them.

    Each character of ``_LOOK_ALIKE_BLOCKS`` that NFKC writes as an ASCII letter, digit
    or sign of ``_SIGNS``.
    """
    import unicodedata

    table = {}
    for first, last in _LOOK_ALIKE_BLOCKS:
        for code in range(first, last + 1):
            plain = unicodedata.normalize("NFKC", chr(code))
            if len(plain) == 1 and ((plain.isascii() and plain.isalnum()) or plain in _SIGNS):
                table[chr(code)] = plain
    ranges: list[list[int]] = []  # consecutive characters as ranges: a short set
    for code in sorted(map(ord, table)):
        if ranges and code == ranges[-1][1] + 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    chars = "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in ranges)
    return table, re.compile(f"[{chars}]")


def _plain_view(text: str) -> tuple[_View, bool] | None:
    """``text`` as it reads, and whether it had percent-escapes (None: as written).

    Look-alike letters, digits and signs written in ASCII, invisible characters taken
    out, percent-escapes decoded.
    """
    ascii_text = text.isascii()
    if ascii_text and "%" not in text:
        return None
    plain = text
    if not ascii_text:
        table, look_alike = _look_alikes()
        plain = look_alike.sub(lambda match: table[match.group()], text)  # one for one
    edits = [
        (match.start(), match.end(), bytes.fromhex(match.group()[1:].replace("%", "")))
        for match in _ESCAPES.finditer(plain)
    ]
    escaped = bool(edits)
    if not ascii_text:
        edits += [(match.start(), match.end(), b"") for match in _INVISIBLES.finditer(plain)]
        edits.sort()
    if not edits and plain == text:
        return None
    view = _view(plain, ((start, end, raw.decode("utf-8", "replace")) for start, end, raw in edits))
    return view, escaped


# A line break (or a JSON-escaped one) between two characters of a token, where a
# terminal or an editor wrapped a key: the run after it reads as the rest of a key (it
# holds a digit, or a small letter then a capital: a word does not), not as a label
# (``NAME=value``, ``name:``).
_RUN = r"[A-Za-z0-9_\-+/]"
_BREAK = re.compile(
    # each break first (``re`` scans for its first character), then a look back at the
    # token character before it
    "|".join(
        rf"{brk}(?<=[A-Za-z0-9_\-+/=.]{brk})" for brk in (r"\n", r"\r\n", r"\\n", r"\\r\\n")
    ).join(("(?:", ")"))
    + rf"(?={_RUN}*?(?:[0-9]|[a-z][A-Z]))(?!{_RUN}*(?::|=[^=\s\"']))"
)
# The characters before a break (after it) where a token's literal may be: a token
# starts at most this far before the line break that cuts it.
_BEFORE_BREAK = 512
_AFTER_BREAK = 32


def _across_breaks(text: str) -> list[tuple[int, int]]:
    """Spans of tokens split by a line break (a wrapped key), the break included.

    The breaks a key's rest follows are taken out, and the tokens (patterns without a
    label) whose literal is near one searched in what is left; only a match that crosses
    a break is new.
    """
    if "\n" not in text and "\\n" not in text:
        return []
    breaks = [(match.start(), match.end(), "") for match in _BREAK.finditer(text)]
    if not breaks:
        return []
    ranges: list[list[int]] = []
    for start, end, _ in breaks:
        low, high = max(0, start - _BEFORE_BREAK), end + _AFTER_BREAK
        if ranges and low <= ranges[-1][1]:
            ranges[-1][1] = high
        else:
            ranges.append([low, high])
    near = "\n".join(text[low:high] for low, high in ranges)
    tokens = [row for row in _needed(near) if row[1] == 0]
    if not tokens:
        return []
    joined = _view(text, iter(breaks))
    return [
        joined.original(start, end)
        for start, end in _matches(joined.text, tokens)
        # (a token of its own: ``mask-filling-…`` wrapped holds no ``sk-`` key)
        if joined.crosses(start, end) and not joined.text[start - 1 : start].isalnum()
    ]


# A run of base64 (standard or URL-safe): matched from its first character (greedy, a
# match never starts inside a run), with its padding.
_BASE64 = re.compile(r"[A-Za-z0-9+/_\-]{24,}={0,2}")
MAX_BASE64 = 16_384  # characters of a base64 run that are decoded (an image's are not)


def _in_base64(text: str) -> list[tuple[int, int]]:
    """The base64 runs of ``text`` whose decoded text holds a secret (the whole run)."""
    if len(text) < 24:
        return []
    spans = []
    for run in _BASE64.finditer(text):
        value = run.group()
        # encoded text has small and capital letters (a path, a word, hex has not)
        if len(value) > MAX_BASE64 or value.islower() or value.isupper():
            continue
        decoded = _base64_text(value)
        if decoded is not None and _spans(decoded, decode=False):
            spans.append(run.span())
    return spans


def _base64_text(value: str) -> str | None:
    """``value`` decoded from base64 (standard or URL-safe) when that is text, else None."""
    import base64
    import binascii

    body = value.rstrip("=")
    urlsafe = "-" in body or "_" in body
    if (urlsafe and ("+" in body or "/" in body)) or len(body) % 4 == 1:
        return None
    try:
        raw = base64.b64decode(
            body + "=" * (-len(body) % 4), altchars=b"-_" if urlsafe else None, validate=True
        )
        decoded = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    shown = decoded.replace("\n", "").replace("\r", "").replace("\t", "")
    return decoded if shown.isprintable() else None


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
