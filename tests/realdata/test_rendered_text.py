"""Every block's text reaches the tokenizer, on every real file a reader takes.

A message's size is its rendered text's tokens (:func:`render_text`). A message shape the
renderer did not know was once sized as empty (a Gemini ``Content``'s ``parts`` in Qwen
Code, Crush's ``{type, data}`` parts): only the message framing was counted, and every
number read at a position inside such a session was wrong. Here, a block whose value
holds text (a string of more than 20 characters, ids and encrypted payloads set aside)
must not render empty. Files: the bundled samples, ``../shared/realdata`` (when present)
and ``$CACHEVIZ_EXAMPLES`` (when set; docs/testing.md).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

import cacheviz
from cacheviz.errors import CacheVizError
from cacheviz.model import OPAQUE
from cacheviz.request._blocks import render_text

ROOT = Path(__file__).resolve().parents[2]
REALDATA = ROOT.parent / "shared" / "realdata"
EXAMPLES = os.environ.get("CACHEVIZ_EXAMPLES")
# values that are not text a model reads (sent, but opaque or an identifier)
NOT_TEXT = frozenset(
    {"encrypted_content", "signature", "id", "tool_call_id", "tool_use_id", "call_id"}
)
_SUFFIXES = (".jsonl", ".json", ".db", ".sqlite")


def _files() -> list[Path]:
    roots = [ROOT / "sample_sessions", REALDATA]
    if EXAMPLES:
        roots.append(Path(EXAMPLES))
    found: list[Path] = []
    for root in roots:
        if root.is_dir():
            found += sorted(
                p
                for p in root.rglob("*")
                if p.is_file() and p.suffix in _SUFFIXES and "/subagents/" not in p.as_posix()
            )
    return found


def _longest_text(value: Any, key: str = "") -> int:
    """The longest string in ``value`` that is text (not an id nor an encrypted payload)."""
    if key in NOT_TEXT:
        return 0
    if isinstance(value, str):
        return len(value.strip())
    if isinstance(value, dict):
        return max((_longest_text(v, k) for k, v in value.items()), default=0)
    if isinstance(value, list):
        return max((_longest_text(v) for v in value), default=0)
    return 0


FILES = _files()


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_no_block_with_text_renders_empty(path):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session = cacheviz.load(path)
    except (CacheVizError, ValueError, OSError):
        pytest.skip(f"{path.name} is not a session cacheviz reads (a metadata file, a part)")
    empty = []
    for content in session.contents.values():
        if content.kind == OPAQUE:
            continue
        _, text = render_text(content)
        if not text.strip() and _longest_text(content.value) > 20:
            empty.append(content.raw[:120])
    assert empty == [], f"{path}: {len(empty)} block(s) with text render empty: {empty[:2]}"
