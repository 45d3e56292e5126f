"""Drift chips are cut on the axis they are drawn on (issue 32).

A calibrated call's token columns are in provider tokens, while the chips are the
block's local tokens: the first difference must be placed with the local count, or the
chips before it would show tokens after it (a provider counting twice the local tokens
put it twice as far).
"""

from __future__ import annotations

from pathlib import Path

import cacheviz
from cacheviz.formats.native import record_line
from cacheviz.ui._detail import drift_detail

WORDS = " ".join(f"word{i}" for i in range(400))


def _session(tmp_path: Path) -> Path:
    lines = []
    history = [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "go on"},
    ]
    for i, tail in enumerate(("the same ending here", "an edited ending here")):
        system = [{"type": "text", "text": f"{WORDS} {tail} and the rest"}]
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "system": system,
            "messages": history[: 1 + 2 * i],
        }
        usage = {"input_tokens": 4000 + i, "cache_read_input_tokens": 0}
        lines.append(
            record_line(
                body,
                provider="anthropic",
                model="claude-sonnet-4-5",
                api="messages",
                ts=f"2026-01-01T00:00:0{i}Z",
                usage=usage,
            )
        )
    path = tmp_path / "calibrated.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_chips_end_at_the_first_difference_of_a_calibrated_call(tmp_path: Path) -> None:
    analysis = cacheviz.load(_session(tmp_path)).analyze()
    row = analysis.calls.row(1, named=True)
    assert row["token_basis"] == "calibrated"
    assert row["input_tokens"] > 3 * row["local_tokens"]  # the provider counts far more
    detail = drift_detail(analysis, 1)
    assert detail["drift"] is True
    chips = detail["chips"]
    before = "".join(chips["before"])
    assert before.endswith(" word398 word399")  # the last shared tokens, nothing after
    assert chips["current_after"][0].strip() == "an"
    assert chips["prev_after"][0].strip() == "the"
