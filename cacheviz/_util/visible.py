r"""Make control and bidi characters visible: terminal output and the report show ``\u202e``.

Transcript text is untrusted: an ESC or OSC sequence in a model or thread name must not
reach a terminal, and a right-to-left override must not reorder what a reader sees.
Each such character becomes its ``\uXXXX`` escape, which is also valid inside a JSON
string, so ``--json`` output stays parseable and means the same.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    from typing import Any

# C0 controls (but tab and newline), DEL, C1 controls, and the bidi marks and overrides
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_CR = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible(text: str, *, keep_cr: bool = False) -> str:
    r"""``text`` with control and bidi characters shown as ``\uXXXX`` escapes.

    Examples
    --------
    >>> visible("gpt\x1b]0;pwned\x07-4o \u202eevil")
    'gpt\\u001b]0;pwned\\u0007-4o \\u202eevil'
    """
    pattern = _UNSAFE_CR if keep_cr else _UNSAFE
    return pattern.sub(_escape, text) if pattern.search(text) else text


def one_line(text: str) -> str:
    r"""``text`` as one line of a terminal: :func:`visible`, with line breaks shown too.

    An error or a warning is one line even when it quotes a file name or a value that
    holds a newline.

    Examples
    --------
    >>> one_line("bad\nname.jsonl:1: not JSON\r")
    'bad\\nname.jsonl:1: not JSON\\r'
    """
    if "\n" in text or "\r" in text:
        text = text.replace("\r", "\\r").replace("\n", "\\n")
    return visible(text)


def visible_all(value: Any) -> Any:
    """:func:`visible` applied to every string inside a JSON-like value (each distinct once)."""
    return _visible_all(value, {})


def _visible_all(value: Any, done: dict[str, str]) -> Any:
    if isinstance(value, str):
        out = done.get(value)
        if out is None:
            out = done[value] = visible(value)
        return out
    if isinstance(value, (list, tuple)):
        return [_visible_all(v, done) for v in value]
    if isinstance(value, dict):
        return {_visible_all(k, done): _visible_all(v, done) for k, v in value.items()}
    return value
