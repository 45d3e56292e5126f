"""The notebook inspector as a user drives it (issue 33 items 3, 4, 5, 11, 12, 17; issue 32).

Each test fails on the defect it names: the model picker leaving "recorded models" after a
provider round trip, two waste figures for one target, a waste that is not the difference
it is shown as, an empty detail on opening, a search that finds only drift labels, an
inspector marimo refuses, a comparison built before anything asks for it.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import anywidget
import pytest

import cacheviz
from cacheviz.errors import CacheVizWarning
from cacheviz.money._metrics import Waste, waste_of
from cacheviz.ui import _state as state
from cacheviz.ui._search import search_segments
from cacheviz.ui.report import read_details, report_data
from cacheviz.ui.widget import Inspector

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_sessions"
REALDATA = ROOT.parent / "shared" / "realdata"
# a Claude Code session whose recorded model is dated (claude-sonnet-4-20250514): not in
# the picker's list, so the old default picked "the closest priced" model instead
DATED = (
    REALDATA
    / "claude_code_jsonl"
    / "chiphuyen__sniffly__ba79134d-b6e9-4867-af0c-6941038c9e4b.jsonl"
)


def _analysis(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        return cacheviz.load(path).analyze()


@pytest.fixture(scope="module")
def usage():
    return _analysis(SAMPLES / "reported_usage.jsonl")


def test_returning_to_the_recorded_provider_restores_the_recorded_models():
    if not DATED.is_file():
        pytest.skip("no ../shared/realdata")
    analysis = _analysis(DATED)
    widget = Inspector(analysis)
    first = (widget.model, widget.meta["target"]["total_cost_usd"], widget.meta["waste_usd"])
    assert widget.model == "" and widget.meta["target"]["model"] is None
    widget.provider = "openai"
    assert widget.model != ""  # another vendor: its comparable model
    widget.provider = "anthropic"
    assert widget.model == ""  # back: the recorded models, not another Claude model
    assert widget.meta["target"]["model"] is None and widget.meta["target"]["own"] is True
    assert (
        widget.model,
        widget.meta["target"]["total_cost_usd"],
        widget.meta["waste_usd"],
    ) == first


def test_reselecting_the_same_settings_keeps_the_same_waste(usage):
    widget = Inspector(usage)
    opened = widget.meta["target"]["waste_usd"]
    assert opened == usage.summary()["waste_usd"]  # as the CLI, JSON, scan and report say
    # the controls as a user sets them: another strategy, then the ones the view opened with
    widget.breakpoints = "none"
    assert widget.meta["target"]["own"] is False
    widget.breakpoints = "recorded"
    widget.ttl = ""
    assert widget.meta["target"]["own"] is True
    assert widget.meta["target"]["waste_usd"] == opened
    # choosing a TTL the simulator takes as its default is the same replay too
    assert state.Target("anthropic", breakpoints="recorded").rules() == {}


def test_waste_is_billed_minus_ideal_over_the_calls_with_usage():
    # three calls with usage, one without: the one without is excluded, and said
    found = waste_of([0.30, None, 0.20, 0.10], [0.25, 0.50, 0.15, 0.12], [0.10, 0.05, 0.15, 0.10])
    assert found == Waste(
        pytest.approx(0.25), "billed", pytest.approx(0.60), pytest.approx(0.35), 3, 1
    )
    assert found.usd == pytest.approx(found.spent_usd - found.ideal_usd)
    text = found.text(lambda v: f"${v:.2f}")
    assert text == (
        "waste $0.25 = billed $0.60 − ideal $0.35 of the 3 call(s) with reported usage "
        "(1 call(s) without a billed cost excluded)"
    )
    # nothing billed: simulated - ideal over every call
    none = waste_of([None, None], [0.25, 0.50], [0.10, 0.05])
    assert none.basis == "simulated" and none.excluded == 0
    assert none.usd == pytest.approx(0.60)


def test_the_summary_line_adds_up_when_some_calls_have_no_usage(tmp_path, usage):
    lines = (SAMPLES / "reported_usage.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        record = json.loads(line)
        if i % 3 == 1:
            record.pop("response", None)  # no usage reported for this call
        out.append(json.dumps(record))
    path = tmp_path / "partial.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    analysis = _analysis(path)
    head = analysis.headline()
    sums = head["waste_of"]
    assert sums["basis"] == "billed" and sums["excluded"] == len(lines[1::3])
    billed = analysis.calls.filter(analysis.calls["billed_usd"].is_not_null())
    assert sums["spent_usd"] == pytest.approx(billed["billed_usd"].sum())
    assert sums["ideal_usd"] == pytest.approx(billed["ideal_usd"].sum())
    assert head["waste_usd"] == pytest.approx(sums["spent_usd"] - sums["ideal_usd"], abs=1e-9)
    # every surface has the same figure: the per-call column sums to it, the inspector shows it
    assert analysis.calls["waste_usd"].sum() == pytest.approx(head["waste_usd"])
    widget = Inspector(analysis)
    assert widget.meta["target"]["waste_usd"] == head["waste_usd"]
    assert widget.meta["target"]["waste_of"] == sums
    from cacheviz.cli._summary import _headline

    doc = {**analysis.summary(), "billed_usd": analysis.billed_usd}
    line = _headline(doc)
    assert f"of the {sums['calls']} call(s) with reported usage" in line
    assert f"({sums['excluded']} call(s) without a billed cost excluded)" in line


def test_the_inspector_opens_on_the_call_the_report_opens_on(usage):
    widget = Inspector(usage)
    assert widget.selected_call == report_data(usage)["selected_call"] >= 0
    assert widget._detail and widget._detail["call"] == widget.selected_call


def test_the_comparison_is_built_only_when_asked(usage, monkeypatch):
    calls = []
    real = type(usage).compare
    monkeypatch.setattr(type(usage), "compare", lambda self, t: calls.append(t) or real(self, t))
    widget = Inspector(usage)
    widget.provider = "openai"  # a control: the target only, not the comparison
    assert calls == [] and widget.meta["compare_built"] is False
    widget._message(None, {"type": "compare"})  # the providers panel came into view
    assert len(calls) == 1 and widget.meta["compare_built"] is True
    assert [r["target"] for r in widget.meta["compare"]] == list(widget.targets)
    widget.provider = "anthropic"  # kept across re-simulations, not built again
    assert len(calls) == 1 and widget.meta["compare"]


def test_full_text_search_finds_message_text_not_only_drift_labels(usage):
    # a word of a message's text (not of any segment label) is found, with its call
    text = "5-word title"
    found = search_segments(usage, text)
    assert found["results"], found
    first = found["results"][0]
    assert text.lower() in first["snippet"].lower()
    assert usage.calls["model"][first["call"]] == "claude-haiku-4-5"
    assert all(text.lower() not in str(r["label"]).lower() for r in found["results"])
    # the widget answers the front end's request in `_found`
    widget = Inspector(usage)
    widget._message(None, {"type": "search", "text": text})
    assert widget._found["results"] == found["results"]
    # the report's texts are the same ones: its search (widgets/src/lib/search.js) reads them
    details = read_details(report_data(usage))
    assert any(text in t for t in details["texts"].values())


def test_search_reads_the_redacted_text_only(tmp_path):
    secret = "sk-ant-api03-" + "A1b2C3d4" * 11 + "AA"
    lines = (SAMPLES / "reported_usage.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["request"]["messages"][0]["content"] = f"my key is {secret} please"
    path = tmp_path / "secret.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    analysis = _analysis(path)
    assert search_segments(analysis, "my key is")["results"]
    assert search_segments(analysis, secret[:30])["results"] == []


def test_the_one_line_is_an_anywidget_in_every_front_end(usage):
    shown = cacheviz.inspect(usage)
    assert isinstance(shown, anywidget.AnyWidget)  # marimo refuses ipywidgets boxes
    assert set(shown._choices) == {"provider", "model", "ttl", "breakpoints"}
    # a bare Analysis in a marimo cell: its display protocol gives the same anywidget,
    # which marimo's own formatter renders (no mo.ui.anywidget wrapping)
    from marimo._output.formatting import get_formatter

    shown_bare = usage._display_()
    assert isinstance(shown_bare, Inspector)
    formatter = get_formatter(usage)
    assert formatter is not None
    mime, _payload = formatter(usage)
    assert mime == "text/html" and "marimo-anywidget" in _payload
