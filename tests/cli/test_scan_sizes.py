"""``scan --sizes bytes``: block sizes from byte lengths, said so, cached apart (issue 32).

The default scan tokenizes every block; ``--sizes bytes`` sizes the blocks of a session
whose every call reports usage from their bytes (what ``bench/same_sizes.py`` measures).
What the log reports, and what is billed from it, must not move; the document says the
sizes were estimated; an exact scan never reuses an estimated one's cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cacheviz
from cacheviz.cli import _app as app
from cacheviz.cli._scan import SIZE_CHOICES
from cacheviz.request._tokens import SIZES
from cacheviz.scanning._cachedir import versioned

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_sessions"
REALDATA = ROOT.parent / "shared" / "realdata" / "claude_code_jsonl"


def _scan_json(capsys, *args: str) -> dict:
    assert app.main(["scan", *args, "--json", "--no-cache", "--jobs", "1"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cli_offers_the_sizes_the_analysis_knows():
    assert SIZE_CHOICES == SIZES


def test_the_default_document_does_not_mention_sizes_and_bytes_says_so(capsys):
    exact = _scan_json(capsys, str(SAMPLES))
    estimated = _scan_json(capsys, str(SAMPLES), "--sizes", "bytes")
    assert "sizes" not in exact
    assert estimated["sizes"] == "bytes"


@pytest.mark.parametrize("folder", [SAMPLES, REALDATA], ids=["samples", "realdata"])
def test_reported_usage_and_billed_do_not_move(capsys, folder):
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    exact = _scan_json(capsys, str(folder))
    estimated = _scan_json(capsys, str(folder), "--sizes", "bytes")
    kept = ("files", "sessions", "calls", "billed_usd", "unpriced_calls", "failed_files")
    assert {k: estimated["totals"][k] for k in kept} == {k: exact["totals"][k] for k in kept}
    for key in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"):
        if key in exact["totals"]:
            assert estimated["totals"][key] == exact["totals"][key], key
    by_session = {s["session"]: s["billed_usd"] for s in exact["sessions"]}
    assert {s["session"]: s["billed_usd"] for s in estimated["sessions"]} == by_session


def test_a_session_without_reported_usage_is_tokenized_either_way():
    # the sliding-window sample reports no usage: its sizes are the only truth it has
    path = SAMPLES / "sliding_window.jsonl"
    exact = cacheviz.scan([path], cache=False, jobs=1)
    estimated = cacheviz.scan([path], cache=False, jobs=1, sizes="bytes")
    assert estimated.calls.drop("path").equals(exact.calls.drop("path"))


def test_the_text_output_says_the_sizes_were_estimated(capsys):
    assert app.main(["scan", str(SAMPLES), "--no-cache", "--jobs", "1", "--sizes", "bytes"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--sizes bytes: block sizes estimated from their bytes" in out


def test_estimated_scans_are_cached_apart(tmp_path):
    assert versioned(tmp_path, None, "bytes") != versioned(tmp_path)
    assert versioned(tmp_path, None, "tokens") == versioned(tmp_path)


def test_an_unknown_sizes_value_is_one_clear_error():
    with pytest.raises(ValueError, match=r"sizes='words': expected one of tokens, bytes"):
        cacheviz.scan([SAMPLES], cache=False, sizes="words")
