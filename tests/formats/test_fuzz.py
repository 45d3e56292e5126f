"""Fuzz properties of the readers, checked against independent oracles."""

import json
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning
from cacheviz.redact import redact_slice

KEY = "sk-ant-api03-Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7iO9qW4rT6yP3uI8oL1kJ-ZZZZAA"
BAD_LINES = ["{oops", "[1, 2]", '{"request": 3}', "\x00\x01", '"just a string"', "{" * 3000]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(2, 6),
    bad=st.lists(st.tuples(st.integers(0, 6), st.sampled_from(BAD_LINES)), min_size=1, max_size=4),
)
def test_skipping_lines_never_changes_the_surviving_calls(write_log, n, bad):
    """Oracle: the same log with the bad lines never written, read strictly."""
    bodies = [
        {
            "model": "claude-sonnet-4-5",
            "system": "You are careful. " * 50,
            "messages": [{"role": "user", "content": f"question {i} " * (i + 1)}],
        }
        for i in range(n)
    ]
    good = write_log(bodies, name="good.jsonl").read_text().splitlines()
    lines = list(good)
    for at, text in sorted(bad, reverse=True):  # any line, the first one too
        lines.insert(min(at, len(lines)), text)
    path = write_log(lines, name="mixed.jsonl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheVizWarning)
        session = cacheviz.load(path, errors="skip", format="cacheviz")
    skipped = [s.line for s in session.skipped]
    assert len(skipped) == len(bad)
    message = " ".join(str(w.message) for w in caught)
    assert all(f"line {line} (" in message for line in skipped)  # every line named
    oracle = cacheviz.load(write_log(good, name="oracle.jsonl"))
    got = session.analyze().calls["input_tokens"].to_list()
    assert got == oracle.analyze().calls["input_tokens"].to_list()


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(alphabet="ab \n=:\"'", max_size=300),
    after=st.text(alphabet="cd \n", max_size=300),
    start=st.integers(0, 700),
    width=st.integers(1, 400),
    label=st.sampled_from(["", "key ", "Authorization: Bearer ", "api_key=", '"token": "']),
)
def test_no_cut_ever_shows_a_piece_of_a_key(before, after, start, width, label):
    """Oracle: the key itself; any 8 of its characters in the output is a leak."""
    text = f"{before}{label}{KEY}{after}"
    shown = redact_slice(text, start, start + width)
    core = KEY[len("sk-ant-api03-") :]
    assert not any(core[i : i + 8] in shown for i in range(len(core) - 7))
    # text outside the key comes through unchanged
    key_at = text.index(KEY)
    if start + width <= key_at:
        assert shown == text[start : start + width]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.integers(1, 20_000), opener=st.sampled_from(["[", '{"a":']))
def test_any_nesting_depth_is_a_clean_answer(tmp_path, depth, opener):
    closer = "]" if opener == "[" else "}"
    path = tmp_path / "deep.jsonl"
    path.write_text(opener * depth + "1" + closer * depth + "\n")
    try:
        cacheviz.load(path)
    except cacheviz.errors.TranscriptError as exc:
        assert "\n" not in str(exc)
    else:  # pragma: no cover - no reader takes a bare nested array
        raise AssertionError("a nested array loaded as a transcript")


def test_json_output_stays_json_with_escapes(write_log, capsys):
    from cacheviz import cli

    model = "m\x1b]0;x\x07\u202e"
    path = write_log([{"model": model, "messages": [{"role": "user", "content": "hi"}]}])
    assert cli.main(["summary", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"][0]["model"] == model
