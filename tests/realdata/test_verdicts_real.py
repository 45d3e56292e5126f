"""Provider verdicts on real Claude Code 2.1.2xx sessions, compared with cacheviz's reading.

The two sessions in ../shared/realdata carry ``message.diagnostics`` on every line; more
public sessions of the same kind are read when ``CACHEVIZ_VERDICT_EXAMPLES`` names a
folder holding them (kept outside the repository; docs/analysis.md gives the figures).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import polars as pl
import pytest

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.reported._verdict import comparable

CLAUDE = "claude_code_jsonl"
HANNIBAL = (
    "hannibal8856__claude_backup__5a198443-bfd3-4234-9f06-40b43ef7f2dc.jsonl",
    "hannibal8856__claude_backup__de421898-a940-4237-b2af-265dbd3454a1.jsonl",
)


def _analyze(path: Path) -> cacheviz.Analysis | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        try:
            return cacheviz.load(path, format="claude-code", errors="skip").analyze()
        except TranscriptError:
            return None  # no API call in the file


def _check(analysis: cacheviz.Analysis) -> dict[str, int]:
    calls = analysis.calls
    verdicts = calls["provider_verdict"].to_list()
    agrees = calls["verdict_agrees"].to_list()
    # every comparable verdict is compared, and only those
    for verdict, agree in zip(verdicts, agrees, strict=True):
        assert (agree is not None) is comparable(verdict), verdict
    # no miss where the provider read at least 95 % of the request
    misses = analysis.misses.join(calls.select("call", "reported_input_tokens"), on="call")
    false = misses.filter(
        pl.col("reported_cache_read_tokens") >= 0.95 * pl.col("reported_input_tokens")
    )
    assert false.is_empty(), false
    counts = analysis.summary()["provider_verdicts"]
    assert counts["compared"] == counts["comparable"]
    return counts


@pytest.mark.parametrize("name", HANNIBAL)
def test_every_verdict_of_a_real_session_is_compared_and_explained(realdata, name):
    path = realdata / CLAUDE / name
    if not path.exists():
        pytest.skip(f"{name} is not in ../shared/realdata")
    analysis = _analyze(path)
    assert analysis is not None
    counts = _check(analysis)
    states = counts["states"]
    # "diagnostics": null on (nearly) every line is the provider's answer, not "not asked"
    assert states["checked"] > 0.9 * analysis.calls.height
    assert states.get("not_requested", 0) <= 1
    assert counts["compared"] >= 2
    assert counts["agree_rate"] >= 0.9
    # every disagreement says why
    detail = analysis.calls.filter(pl.col("verdict_agrees").is_not_null())["verdict_detail"]
    assert detail.is_not_null().all() and (detail.str.len_chars() > 0).all()


def test_public_sessions_with_verdicts():
    folder = os.environ.get("CACHEVIZ_VERDICT_EXAMPLES")
    if not folder:
        pytest.skip("CACHEVIZ_VERDICT_EXAMPLES is not set (a folder of public sessions)")
    compared = agree = 0
    for path in sorted(Path(folder).rglob("*.jsonl")):
        owner = path.parent.parent.with_suffix(".jsonl")
        if path.parent.name == "subagents" and owner.is_file():
            continue  # read with its session
        analysis = _analyze(path)
        if analysis is None:
            continue
        counts = _check(analysis)
        compared += counts["compared"]
        agree += counts["agree"]
    assert compared
    assert agree >= 0.9 * compared


def test_two_processes_in_a_public_session_are_two_conversations():
    # hannibal8856/claude_backup's 43e7d642 (Claude Code 2.1.2xx): a second process
    # resumed the session and both appended to the file for a day (29 switches between
    # them); read by their parentUuid links they are two conversations, with no drift
    # between them (read as one, three false block_removed drifts) and the simulation
    # within 1 % of billed (3.6 % over as one)
    folder = os.environ.get("CACHEVIZ_VERDICT_EXAMPLES")
    if not folder:
        pytest.skip("CACHEVIZ_VERDICT_EXAMPLES is not set (a folder of public sessions)")
    found = sorted(Path(folder).rglob("43e7d642-30bc-4598-813c-34286ed31a9d.jsonl"))
    if not found:
        pytest.skip("session 43e7d642 is not in CACHEVIZ_VERDICT_EXAMPLES")
    analysis = _analyze(found[0])
    assert analysis is not None
    threads = analysis.calls["thread"].value_counts().sort("thread")
    assert threads.height == 2 and threads["count"].min() >= 40
    assert analysis.drifts.height == 0
    simulated = float(analysis.calls["simulated_usd"].sum())
    billed = analysis.billed_usd
    assert billed is not None and abs(simulated - billed) <= 0.01 * billed
