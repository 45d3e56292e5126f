"""The literal and length pre-filter of redaction (``redact._needed``) misses no secret.

Redaction searches a text only with the patterns that can match in it: those whose
shortest match fits and one of whose required literals (read from the pattern's own
parse) the text holds. Here every pattern is checked against searching with every
pattern: a made-up secret of each, placed at the start, the end, the middle and across
the 256-character mark of long texts (ASCII prose full of ``:`` and ``.``, prose without
any literal, text with non-ASCII letters that ``re`` folds to ASCII ones), through
cuts, and strings generated from each pattern by Hypothesis.
"""

from __future__ import annotations

import re
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cacheviz import redact
from cacheviz.redact import REDACTED, redact_slice, secret_spans

_ALNUM = "Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7iO9qW4rT6yP3uI8oL1kJ5hG3fD1sA8zX6cV0bB2nM4"


def _run(n: int, alphabet: str = _ALNUM) -> str:
    return (alphabet * (n // len(alphabet) + 1))[:n]


# A made-up secret of every pattern (none is real).
EXAMPLES = [
    "AKIAZ7XQ4MNB2LPRW3TD",
    'aws_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lm3Nv5T"',
    "AccountKey=" + _run(86) + "==",
    "https://admin:Vn5bG8hJ2kL9@db.example.com",
    "MTA0NjY1NzY4OTk4NzY1NDMyMQ.GhXyZ1." + _run(27),
    "ghp_" + _run(36),
    "glpat-" + _run(24),
    "GR1348941" + _run(24),
    "glcbt-" + _run(24),
    "glimt-" + _run(25),
    "glptt-" + _run(40),
    "glagent-" + _run(50),
    "gloas-" + _run(64),
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIn0.Sfl3KxwRJSMeKKF2QT4f",
    "//registry.npmjs.org/:_authToken=npm_" + _run(36),
    "sk-" + _run(20) + "T3BlbkFJ" + _run(20),
    "pypi-AgEIcHlwaS5vcmc" + _run(70),
    "pypi-AgENdGVzdC5weXBpLm9yZw" + _run(70),
    "SG." + _run(22) + "." + _run(43),
    "xoxb-284710395721-4718290374652-qw3er5ty7ui9",
    "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/" + _run(24),
    "sq0csp-" + _run(43),
    "sk_live_" + _run(24),
    "123456789:" + _run(35),
    "sk-ant-api03-" + _run(40),
    "sk-proj-" + _run(30),
    "AIza" + _run(35),
    "github_pat_" + _run(40),
    "gho_" + _run(30),
    "xoxp-" + _run(12),
    "rk_test_" + _run(16),
    "hf_" + _run(34),
    "npm_" + _run(36),
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lm3Nv5T",
    "SecretAccessKey: Rc7Yh1Jd4Fs6Gp0Za2Xv8LmN4pR7tY1wK3nB6cF9",
    "redis://:Pz8qW2xN7vLm4RtYk3Hs@cache.internal:6379/0",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t\n"
    "-----END RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgE",  # cut short
    "Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
    "authorization: bearer\tZm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
    '"password": "correct-horse-battery-staple"',
    "API_KEY=" + _run(24),
    "client-secret: " + _run(20),
    # letters ``re`` folds to ASCII ones under IGNORECASE: Kelvin sign, long s, dotless i
    "to\u212aen=" + _run(20),
    "\u017fecret: " + _run(20),
    "ap\u0131_key=" + _run(20),
    "AP\u0130_KEY=" + _run(20),
    "BEARER " + _run(20),
    # issue 29: Google OAuth, PGP, Authorization schemes, cookies, .env names, Mailgun, URL
    # userinfo of a token or a password with a slash, a key named in prose
    "ya29." + _run(40),
    "1//0" + _run(40),
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF" + _run(60),
    "Authorization: Basic " + _run(24) + "==",
    "authorization: token " + _run(40),
    "Cookie: session=" + _run(30) + "; theme=dark",
    "set-cookie: sid=" + _run(20),
    "DB_PASS=" + _run(20),
    "MYSQL_PWD=" + _run(20),
    "SECRET_KEY_BASE=" + _run(64),
    "ENCRYPTION_KEY=" + _run(32),
    "JWT_SIGNING_KEY=" + _run(32),
    '"private_key_id": "' + _run(40) + '"',
    "passphrase: " + _run(20),
    "key-" + "0123456789abcdef" * 2,
    "0123456789abcdef" * 2 + "-0123abcd-4567ef89",
    "https://" + _run(40) + "@github.com/org/repo.git",
    "mongodb://app:" + _run(10) + "/" + _run(12) + "@db:27017",
    "my api key is " + _run(32),
    "the secret key: " + _run(24),
    # the first letters of a label in the cases re folds: long s, Kelvin sign, dotless i
    "\u017fession_key=" + _run(20),
    "hmac_\u212aey=" + _run(20),
    "cl\u0131ent_secret=" + _run(20),
]

PROSE = (
    "The build ran at 10:42. It read src/app.py and tests/test_app.py: 3 files, "
    "12.5 kB. Step 4: fix the import. Note: use the cache. Done at 10:43.\n"
)
PLAIN = "the quick brown fox jumps over the lazy dog and keeps running far away "
UNICODE = "Größe 10 kB — naïve café, 東京: résumé ſ ı İ \u212a “quoted” … ok. "
FILLERS = {"prose": PROSE, "plain": PLAIN, "unicode": UNICODE}


def _every(text: str) -> list:
    return list(redact._patterns())


def _reference(function, *args):
    """``function(*args)`` with every pattern searched in every text."""
    with mock.patch.object(redact, "_needed", _every):
        return function(*args)


def _long(filler: str, size: int) -> str:
    return (filler * (size // len(filler) + 1))[:size]


def test_every_pattern_has_an_example():
    for pattern, _ in redact._patterns():
        assert any(pattern.search(example) for example in EXAMPLES), pattern.pattern
    for example in EXAMPLES:
        assert secret_spans(example), example


def _placed(secret: str, filler: str) -> list[str]:
    body = _long(filler, 600)
    half = 256 - len(secret) // 2
    return [
        f"{secret}\n{body}",
        f"{body}\n{secret}",
        f"{body[:300]} {secret}\n{body[300:]}",
        f"{body[:half]} {secret}\n{body[half:]}",  # across the 256-character mark
        f"{body[:254]} {secret}",
        secret,
        f" {secret} ",
    ]


@pytest.mark.parametrize("filler", list(FILLERS))
@pytest.mark.parametrize("secret", EXAMPLES, ids=range(len(EXAMPLES)))
def test_a_secret_anywhere_in_a_long_text_is_found(secret, filler):
    for text in _placed(secret, FILLERS[filler]):
        spans = secret_spans(text)
        assert spans == _reference(secret_spans, text)
        assert spans
        assert redact.redact(text) == _reference(redact.redact, text)
        assert REDACTED in redact.redact(text)


@pytest.mark.parametrize("secret", EXAMPLES, ids=range(len(EXAMPLES)))
@pytest.mark.slow
def test_a_cut_through_a_secret_in_a_long_text_is_the_same(secret):
    """``redact_slice`` searches a region around the cut: a secret at its edges too."""
    body = _long(PROSE, 40_000)
    at = 20_000
    text = f"{body[:at]} {secret}\n{body[at:]}"
    middle = at + len(secret) // 2
    for start, end in [
        (middle, middle + 100),
        (at - 100, middle),
        (at - redact.MARGIN, at - redact.MARGIN + 50),  # the secret at the region's edge
        (at + len(secret) + redact.MARGIN - 50, at + len(secret) + redact.MARGIN + 10),
        (0, 3000),
    ]:
        assert redact_slice(text, start, end) == _reference(redact_slice, text, start, end)


def test_prose_needs_no_pattern_and_a_short_text_none_that_is_longer():
    assert redact._needed(_long(PLAIN, 5000)) == []
    assert redact._needed("user#12") == []
    shortest = min(redact._gates().widths)
    assert redact._needed("x" * (shortest - 1)) == []
    needed = redact._needed("token: " + "x" * 30)
    assert any("password" in pattern.pattern for pattern, _ in needed)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
@pytest.mark.parametrize("index", range(len(redact._patterns())))
@pytest.mark.slow
def test_generated_matches_of_every_pattern_are_found(index, data):
    pattern, _ = redact._patterns()[index]
    if "head" in pattern.groupindex:  # a look back holds its start: drawn as written
        found = data.draw(st.from_regex(redact.MAILGUN, fullmatch=True), label="match")
        assert pattern.search(found)
    else:
        found = data.draw(st.from_regex(pattern), label="match")
    before = data.draw(st.sampled_from(["", PROSE[:50], _long(UNICODE, 300), _long(PLAIN, 700)]))
    after = data.draw(st.sampled_from(["", PROSE[:40], _long(PROSE, 400)]))
    for text in (found, before + found + after):
        if pattern.search(text):  # (text after it can end a match: ``(?!\w)``)
            assert any(p is pattern for p, _ in redact._needed(text))
        assert secret_spans(text) == _reference(secret_spans, text)


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"abc", {("abc", False)}),
        (r"x?abc[0-9]+de", {("abc", False)}),
        (r"(?:foo|barbaz)\d", {("foo", False), ("barbaz", False)}),
        (r"(?:foo|\d+)x", {("x", False)}),
        (r"(?:foo|\d+)", None),
        (r"(?i:token)=", {("token", True)}),
        (r"(?i:://)", {("://", False)}),  # no letters: its case does not matter
        (r"(?<=Bearer )\w{16}", {("Bearer ", False)}),
        (r"(?!secret)\w{16}", None),
        (r"(?:ab){2,}", {("ab", False)}),
        (r"(?:ab)*c", {("c", False)}),
    ],
)
def test_the_literals_a_pattern_needs(pattern, literals):
    assert redact._requirement(re.compile(pattern)) == (
        None if literals is None else frozenset(literals)
    )


def test_ignore_case_on_ascii_text_is_lowering():
    """Literals without case are looked for in the lowered text when it is ASCII: there
    ``re.IGNORECASE`` pairs exactly the characters ``str.lower`` makes equal, and an ASCII
    character without a letter matches only itself, in any text."""
    ascii_chars = [chr(c) for c in range(128)]
    for a in ascii_chars:
        folded = re.compile(re.escape(a), re.IGNORECASE)
        for b in ascii_chars:
            assert bool(folded.fullmatch(b)) == (a.lower() == b.lower()), (a, b)
    others = "".join(c for c in ascii_chars if not c.isalpha())
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    rest = everything.translate({ord(c): None for c in others})
    assert re.compile(f"[{re.escape(others)}]", re.IGNORECASE).search(rest) is None


def test_another_pythons_parser_searches_every_pattern(monkeypatch):
    def broken(pattern):
        raise TypeError("another parser")

    monkeypatch.setattr(redact, "_parse", broken)
    redact._gates.cache_clear()
    try:
        text = _long(PLAIN, 1000) + EXAMPLES[0]
        assert len(redact._needed(text)) == len(redact._patterns())
        assert secret_spans(text) == _reference(secret_spans, text)
    finally:
        monkeypatch.undo()
        redact._gates.cache_clear()
