"""Issue 20, item 10 (data side): the scan page's tables and chart, the model picker."""

from __future__ import annotations

import re
from pathlib import Path

from cacheviz.money import pricing
from cacheviz.money.pricing import priced_models
from cacheviz.ui import _scan as scan_view

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"


def test_scan_tables_never_print_none_and_the_chart_has_a_y_axis(tmp_path, monkeypatch):
    import cacheviz

    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("reported_usage", "timestamp_in_system"):
        (folder / f"{name}.jsonl").write_text((SAMPLES / f"{name}.jsonl").read_text())
    data = scan_view.scan_data(cacheviz.scan([folder]))
    assert any(row["part"] is None for row in data["busters"])  # a miss has no part
    page = scan_view.scan_html(data)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    assert "None" not in cells
    labels = re.findall(r"text-anchor='end'>([^<]*)</text>", page)
    assert len(labels) == scan_view._TICKS + 1 and labels[0] == "$0.00"
    assert "USD per day" in page
    hits = dict(
        zip(
            (r["name"] for r in data["sessions"]),
            (r["hit_ratio"] for r in data["sessions"]),
            strict=True,
        )
    )
    assert (
        hits["logs/timestamp_in_system.jsonl"] is None and hits["logs/reported_usage.jsonl"] > 0.5
    )
    assert "n/a" in cells


def test_model_picker_newest_first_without_retired_models():
    models = priced_models("anthropic")
    assert "claude-2" not in models and "claude-3-opus-latest" not in models
    assert models.index("claude-sonnet-5-5") < models.index("claude-sonnet-4-5")
    assert models.index("claude-opus-5") < models.index("claude-opus-4-5")
    assert models[-1] not in ("claude-fable-5", "claude-fable-5-1")
    everything = priced_models("anthropic", retired=True)
    assert "claude-2" in everything and everything.index("claude-2") > everything.index(
        "claude-3-haiku"
    )
    kept = priced_models("anthropic", retired=["claude-3-5-sonnet"])
    assert "claude-3-5-sonnet" in kept and "claude-2" not in kept


def test_recency_reads_versions_not_sizes_or_dates():
    names = ["gpt-oss-120b", "gpt-4o-2024-05-13", "gpt-5.6-terra", "gpt-5", "gpt-6-sol"]
    assert sorted(names, key=pricing.recency) == [
        "gpt-6-sol",
        "gpt-5.6-terra",
        "gpt-5",
        "gpt-4o-2024-05-13",
        "gpt-oss-120b",
    ]


def test_the_sessions_own_retired_model_stays_in_the_picker(tmp_path):
    import cacheviz
    from cacheviz.formats.native import record_line
    from cacheviz.ui import _state as state

    body = {
        "model": "claude-3-5-sonnet",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
    }
    path = tmp_path / "old.jsonl"
    path.write_text(
        record_line(body, provider="anthropic", model=body["model"], api="messages") + "\n"
    )
    options, _ = state.model_choices(cacheviz.load(path).analyze(), "anthropic")
    values = [value for _, value in options]
    assert "claude-3-5-sonnet" in values and "claude-2" not in values
