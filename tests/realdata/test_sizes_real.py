"""``sizes="bytes"`` on the real sessions every call of which reports usage: what it keeps.

Byte sizes are mapped onto the reported usage by the calibration, so a call's input in
provider tokens, its billed cost and its reported columns are those of the BPE analysis
on every session; the figures read at positions inside a call may move
(``bench/same_sizes.py`` lists them; docs/performance.md, "Sizes from byte lengths").
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from cacheviz import _schema
from cacheviz.analysis import analyze_columns
from cacheviz.errors import CacheVizError
from cacheviz.formats import READERS, detect

KEPT = [
    "call",
    "provider",
    "model",
    "input_tokens",
    "billed_usd",
    *(n for n in _schema.CALLS if n.startswith("reported_")),
]


def _sessions(realdata: Path) -> list[tuple[Path, str]]:
    out = []
    for path in sorted(realdata.rglob("*")):
        if not path.is_file() or path.suffix == ".md":
            continue
        try:
            fmt = detect(path)
        except (CacheVizError, OSError, ValueError):
            continue
        out.append((path, fmt))
    return out


def test_bytes_keep_the_reported_and_billed_figures_of_every_call(realdata: Path) -> None:
    checked = 0
    for path, fmt in _sessions(realdata):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                bpe = analyze_columns(READERS[fmt].read(path, errors="raise"))
                session = READERS[fmt].read(path, errors="raise")
            except CacheVizError:
                continue
            own = analyze_columns(session, sizes="bytes")
        if not all(c.usage and c.usage.input_tokens is not None for c in session.calls):
            assert own.calls == bpe.calls, path.name  # tokenized: the same analysis
            continue
        assert {c.sizes for c in own.prefix.token_caches.values()} == {"bytes"}
        for name in KEPT:
            assert own.calls[name] == bpe.calls[name], (path.name, name)
        assert own.calls["input_tokens"] == own.calls["reported_input_tokens"], path.name
        assert own.costs.billed_usd == bpe.costs.billed_usd, path.name
        checked += 1
    if not checked:
        pytest.skip("no session of ../shared/realdata reports usage on every call")
