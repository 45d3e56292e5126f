"""The rules of ``cacheviz.redact`` itself, fast (a mutation-testing selection, issue 21).

What the module promises (its docstrings, docs/recording.md "What is redacted, where"):
a cut text is redacted whole, then cut (:func:`redact_slice`, :func:`redact_cut`), so a
secret crossing a cut shows as ``[REDACTED]``, never as a piece; ``redact_cut``'s ``mark``
stands where text was cut off; redaction turned off returns text as it is; spans are
merged; the literal gates (:func:`redact._needed`) find what searching every pattern finds,
and prose without any literal is searched with no pattern at all; detect-secrets' plugins
load with ``requests`` deferred, leaving a ``requests`` imported before untouched.
"""

from __future__ import annotations

import importlib
import re
import sys

import pytest

from cacheviz import redact as module
from cacheviz.redact import (
    MARGIN,
    REDACTED,
    redact,
    redact_all,
    redact_cut,
    redact_slice,
    redaction,
    secret_spans,
)

# made-up credentials (none is real)
KEY = "sk-ant-api03-Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7iO9qW4rT6yP3uI8oL1kJ-ZZZZAA"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lm3Nv5T"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "-----END RSA PRIVATE KEY-----"
)
# prose holding none of the patterns' literals (no digits, no ``.``, ``:``, ``=``, ``-``)
PROSE = "the quick brown fox jumps over the lazy dog and then naps "


def _filler(n: int) -> str:
    return (PROSE * (n // len(PROSE) + 1))[:n]


def _whole_then_cut(text: str, start: int, end: int) -> str:
    """The definition: the spans of the *whole* text, each crossing ``[start, end)``
    replaced by one ``[REDACTED]``, the rest of the piece as it is."""
    out, position = [], start
    for span_start, span_end in secret_spans(text):
        if span_end <= start or span_start >= end:
            continue
        out += [text[position : max(position, span_start)], REDACTED]
        position = max(position, span_end)
    out.append(text[position:end])
    return "".join(out)


# -- redact_slice: the whole text redacted, then cut ---------------------------------------


def _long_text() -> tuple[str, list[tuple[int, int]]]:
    """Two secrets past the first ``MARGIN`` characters, a third one after the margin."""
    text = (
        _filler(MARGIN + 3000)
        + f"key {KEY} and "
        + _filler(300)
        + f"Authorization: Bearer {AWS_SECRET} "
        + _filler(MARGIN + 2000)
        + f"password={AWS_SECRET}"
        + _filler(500)
    )
    spans = secret_spans(text)
    assert len(spans) == 3 and all(start > MARGIN for start, _ in spans)
    return text, spans


@pytest.mark.slow
def test_a_slice_far_into_a_text_is_the_whole_text_redacted_then_cut():
    text, spans = _long_text()
    cuts = {MARGIN + 100, len(text) - 10}
    for start, end in spans:
        cuts |= {start - 1, start, start + 1, (start + end) // 2, end - 1, end, end + 1}
    for cut in sorted(cuts):
        for width in (1, 40, 700):
            for start, end in ((cut, cut + width), (cut - width, cut)):
                got = redact_slice(text, start, end)
                assert got == _whole_then_cut(text, start, end), (start, end)
                assert "Zx9vQ2mL" not in got and "MDENG" not in got


def test_a_slice_at_a_secret_s_edge_neither_shows_nor_marks_it():
    text, [(start, end), *_] = _long_text()
    after = redact_slice(text, end, end + 5)
    assert after == text[end : end + 5] and REDACTED not in after
    before = redact_slice(text, start - 5, start)
    assert before == text[start - 5 : start]
    assert redact_slice(text, start + 3, start + 9) == REDACTED  # inside: the secret whole


def test_a_slice_of_a_short_text_equals_the_cut_of_its_redaction():
    text = f"a {KEY} b password={AWS_SECRET} c"
    assert (
        redact_slice(text, 0, len(text)) == redact(text) == "a [REDACTED] b password=[REDACTED] c"
    )
    assert redact_slice(text, 1, len(text) - 1) == " [REDACTED] b password=[REDACTED] "


def test_touching_spans_merge_into_one():
    """An AWS secret key (its value only) directly followed by a PEM block: two matches
    that touch are one span, one ``[REDACTED]``."""
    text = f"aws configure set aws_secret_access_key {AWS_SECRET}{PEM} done"
    label = len("aws configure set aws_secret_access_key ")
    assert secret_spans(text) == [(label, len(text) - len(" done"))]
    assert redact(text) == "aws configure set aws_secret_access_key [REDACTED] done"


# -- redact_cut: the one way a text is shortened for display -------------------------------


def test_a_text_that_fits_is_redacted_whole_without_a_mark():
    assert redact_cut("short", 5) == "short"
    assert redact_cut("short", 6) == "short"
    assert redact_cut(f"k {KEY}", 200) == f"k {REDACTED}"
    assert redact_cut("", 3) == ""


def test_a_cut_keeps_limit_characters_the_mark_last():
    text = _filler(100)
    assert redact_cut(text, 10) == text[:9] + "…"
    assert redact_cut(text, 10, mark="...") == text[:7] + "..."
    assert redact_cut(text, 10, mark="") == text[:10]
    assert redact_cut(text, 10, -5) == text[:9] + "…"  # a start before the text is 0
    assert redact_cut("abcdefg", 6) == "abcde…"


def test_a_window_from_start_marks_the_cut_before_it():
    text = "abcdefghij"
    assert redact_cut(text, 4, 2) == "…cde…"  # text[2:6], its last place the mark
    assert redact_cut(text, 8, 2) == "…cdefghij"  # reaches the end: no mark after
    assert redact_cut(text, 20, 2) == "…cdefghij"
    assert redact_cut(text, 20, 1) == "…bcdefghij"  # a short text from a start is cut too
    assert redact_cut(text, 3, 5, mark="<>") == "<>f<>"


def test_a_secret_across_either_cut_shows_as_redacted_never_a_piece():
    pre, post = "x" * 19 + " ", " " + "y" * 19
    text = pre + KEY + post
    end = len(pre) + len(KEY)
    assert redact_cut(text, 30) == pre + REDACTED + "…"  # the cut after, inside
    assert redact_cut(text, 200, 30) == "…" + REDACTED + post  # the cut before, inside
    assert redact_cut(text, 10, 40) == "…" + REDACTED + "…"  # both cuts inside it
    assert redact_cut(text, 12, end - 1) == "…" + REDACTED + post[:10] + "…"
    assert redact_cut(text, 12, end) == "…" + post[:11] + "…"  # after it: nothing of it
    for start in range(0, len(text), 7):
        for limit in (5, 25, 60):
            got = redact_cut(text, limit, start)
            assert "Zx9vQ2mL" not in got and "sk-ant" not in got, (start, limit)


def test_turned_off_a_cut_shows_the_text_as_it_is():
    text = "x" * 19 + " " + KEY + " " + "y" * 19
    with redaction(enabled=False):
        assert redact_cut(text, 30) == text[:29] + "…"
        assert redact_cut(text, 30, 30) == "…" + text[30:59] + "…"
        assert redact_slice(text, 5, 50) == text[5:50]
        assert secret_spans(text) == []  # no chip is masked either
        assert redact_all({"k": [text]}) == {"k": [text]}
    assert secret_spans(text) == [(20, 20 + len(KEY))]  # on again


# -- the literal gates: the same secrets as searching every pattern ------------------------

GATED = [
    f"key {KEY} here",
    "AKIAZ7XQ4MNB2LPRW3TD",
    "akia is a prefix AKIA" + "Z7XQ4MNB2LPRW3TD",
    f"aws_secret_access_key = {AWS_SECRET}",
    f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
    f"aws configure set aws_secret_access_key {AWS_SECRET}",
    "https://admin:Vn5bG8hJ2kL9@db.example.com",
    "redis://:Pz8qW2xN7vLm4RtYk3Hs@cache.internal:6379/0",
    "ghp_" + "Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7",
    "xoxb-284710395721-4718290374652-qw3er5ty7ui9",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIn0.Sfl3KxwRJSMeKKF2QT4f",
    PEM,
    "AUTHORIZATION: BEARER Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
    "authorization: Bearer\tZm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
    'CONFIG {"Password": "correct-horse-battery-staple"}',
    "hf_" + "Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7",
    # non-ASCII texts: re folds the long s and the Kelvin sign to ASCII under IGNORECASE
    "café paſſword: correct-horse-battery-staple",
    f"naïve AWS_SECRET_ACCESS_\u212aEY = {AWS_SECRET}",
    f"déjà vu: Bearer {AWS_SECRET}",
    "café XOXB-284710395721-4718290374652-qw3er5ty7ui9 ok",  # one literal, without case
    f'naïve AWS_KEY = "{AWS_SECRET}"',
]


def test_the_gates_built_afresh_find_every_secret_searching_all_patterns_finds(monkeypatch):
    module._gates.cache_clear()  # built here, by this test (and by the code under test)
    try:
        texts = [*GATED, *(f"{_filler(300)} {t} {_filler(40)}" for t in GATED)]
        gated = [secret_spans(t) for t in texts]
        assert all(gated), [t for t, spans in zip(texts, gated, strict=True) if not spans]
        monkeypatch.setattr(module, "_needed", lambda text: list(module._patterns()))
        assert gated == [secret_spans(t) for t in texts]
    finally:
        module._gates.cache_clear()


def test_prose_without_any_literal_is_searched_with_no_pattern():
    """Most text holds none of the literals: no pattern is tried on it (the speed the
    gates exist for); a text shorter than every pattern's shortest match neither."""
    module._gates.cache_clear()
    try:
        assert module._needed(_filler(2000)) == []
        assert module._needed("ab") == []
        assert module._needed(f"{_filler(200)}{KEY}")  # a literal: its patterns are tried
    finally:
        module._gates.cache_clear()


@pytest.mark.parametrize(
    ("pattern", "flags", "required"),
    [
        # a run of literal characters is a literal, matched with its case
        ("sk-ant-[A-Za-z0-9]{10,}", 0, {("sk-ant-", False)}),
        # the most selective item of a sequence: the longer literal ...
        ("a[0-9]+bcd", 0, {("bcd", False)}),
        ("abc[0-9]d", 0, {("abc", False)}),
        # ... then the fewer literals
        ("(?:ab|cd)xy", 0, {("xy", False)}),
        # a run before a branch starts each alternative's
        ("xy(?:ab|cd)", 0, {("xyab", False), ("xycd", False)}),
        ("xy(?:ab|[0-9])", 0, {("xy", False)}),
        # a branch drops a literal that holds another (a text with it holds the other)
        ("(?:password|pass|xpassy)=", 0, {("pass", False)}),
        ("(?i:password|PASS)=", 0, {("PASS", True)}),
        ("(?:password|(?i:PASS))=", 0, {("PASS", True)}),
        ("(?:(?i:password)|pass)=", 0, {("password", True), ("pass", False)}),
        # a branch: one of its alternatives' literals; nothing when one requires nothing
        ("(?:foo|barx)[0-9]", 0, {("foo", False), ("barx", False)}),
        ("(?:foo|[0-9])z", 0, {("z", False)}),
        ("(?:foo|[0-9])", 0, None),
        # a repeat of at least one requires its content; an optional one nothing
        ("(?:abc)+", 0, {("abc", False)}),
        ("(?:abc){1,3}", 0, {("abc", False)}),
        ("(?:abc){2}", 0, {("abc", False)}),
        ("(?:abc)+?", 0, {("abc", False)}),
        ("(?:abc)++", 0, {("abc", False)}),
        ("(?:abc)*", 0, None),
        ("(?:abc)?x", 0, {("x", False)}),
        # lookaround text is in the searched text; a negative assertion requires nothing
        ("(?=abc)[a-z]+", 0, {("abc", False)}),
        ("(?<=Bearer )[A-Za-z]{16,}", 0, {("Bearer ", False)}),
        ("(?!abc)[a-z]+y", 0, {("y", False)}),
        # an assertion matches no text: a run goes on across a negative one, and a
        # lookbehind of literals starts one (``_words``' shape: a set, then the letter)
        ("p(?<![a-z]p)ass", 0, {("pass", False)}),
        ("ab\\bcd", 0, {("abcd", False)}),
        ("[ab](?<=a)pi", 0, {("api", False)}),
        ("x[ab](?<=[ab])pi", 0, {("pi", False)}),
        (
            "[ab](?i:(?<=a)(?:pi|ccess)|(?<=b)ear)",
            0,
            {("api", True), ("access", True), ("bear", True)},
        ),
        ("(?>abc)", 0, {("abc", False)}),
        # case: the flag (inline, scoped, given to compile) makes letters fold ...
        ("(?i)abc", 0, {("abc", True)}),
        ("abc", re.IGNORECASE, {("abc", True)}),
        ("(?i:abc)d", 0, {("abc", True)}),
        ("(?i)a(?-i:bcd)", 0, {("bcd", False)}),
        ("(abcd)[0-9]", 0, {("abcd", False)}),  # a group keeps the pattern's case
        ("(?i)(abcd)[0-9]", 0, {("abcd", True)}),
        # ... but ASCII without letters matches only itself
        ("(?i)[a-z]+://", 0, {("://", False)}),
        ("[a-z]+", 0, None),
    ],
)
def test_a_pattern_requires_the_literals_its_matches_contain(pattern, flags, required):
    got = module._requirement(re.compile(pattern, flags))
    assert got == (None if required is None else frozenset(required))
    example = {"(?:foo|barx)[0-9]": "barx1", "(?:abc){2}": "abcabc"}.get(pattern)
    if got and example:  # the literal is in a text the pattern matches
        assert any(text in example for text, _ in got)


def test_every_pattern_has_a_required_literal_in_its_matches():
    """No pattern is searched in every text; each literal is in the example it matches."""
    for pattern, _ in module._patterns():
        required = module._requirement(pattern)
        assert required, pattern.pattern
    for text in GATED:
        for pattern, _ in module._patterns():
            if pattern.search(text) is None:
                continue
            required = module._requirement(pattern)
            assert any(
                re.search(re.escape(lit), text, re.IGNORECASE if cased else 0)
                for lit, cased in required
            ), (pattern.pattern, text)


# -- detect-secrets' plugins: requests deferred, an imported one left alone ----------------


def _plugin_modules() -> list[str]:
    return [f"detect_secrets.plugins.{name}" for name, _ in module._PLUGINS]


def test_the_plugins_load_with_requests_deferred_then_real_on_first_use(monkeypatch):
    import requests

    monkeypatch.delitem(sys.modules, "requests")
    for name in _plugin_modules():  # imported again, by _plugin_classes
        monkeypatch.delitem(sys.modules, name, raising=False)
    classes = module._plugin_classes()
    assert [(m, cls.__name__) for m, cls in classes] == list(module._PLUGINS)
    assert "requests" not in sys.modules  # a later ``import requests`` gets the real one
    aws = sys.modules["detect_secrets.plugins.aws"]
    stand_in = aws.requests
    assert isinstance(stand_in, module._Deferred) and stand_in.__name__ == "requests"
    monkeypatch.setitem(sys.modules, "requests", requests)  # imported meanwhile
    assert stand_in.get is requests.get  # the first use imports the real module
    assert stand_in.Session is requests.Session  # and then behaves as it
    assert sys.modules["requests"] is requests


def test_the_stand_in_in_sys_modules_gives_way_to_the_real_module(monkeypatch):
    import requests

    stand_in = module._Deferred("requests")
    monkeypatch.setitem(sys.modules, "requests", stand_in)
    real = importlib.import_module
    monkeypatch.setattr(
        importlib,
        "import_module",
        lambda name, *a: requests if name == "requests" else real(name, *a),
    )
    assert "requests" in sys.modules
    assert stand_in.codes is requests.codes
    assert sys.modules.get("requests") is not stand_in  # removed before the real import


def test_a_requests_imported_while_the_plugins_load_is_left_in_place(monkeypatch):
    """Should a plugin use ``requests`` as it is imported, the real module it gets stays."""
    import requests

    monkeypatch.delitem(sys.modules, "requests")
    real = importlib.import_module

    def import_module(name, *args):
        if name.startswith("detect_secrets.plugins."):
            sys.modules["requests"] = requests  # what importing the real one leaves
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", import_module)
    module._plugin_classes()
    assert sys.modules.get("requests") is requests


def test_a_requests_imported_before_is_left_in_place(monkeypatch):
    import requests

    for name in _plugin_modules():
        monkeypatch.delitem(sys.modules, name, raising=False)
    module._plugin_classes()
    assert sys.modules["requests"] is requests
    assert sys.modules["detect_secrets.plugins.aws"].requests is requests
