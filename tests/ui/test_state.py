"""The one inspector state: widget, live inspector and report show the same numbers."""

from __future__ import annotations

import base64
import io

import polars as pl
import pytest

import cacheviz
from cacheviz import providers
from cacheviz.ui import _state as state
from cacheviz.ui.report import report_data

SYSTEM = [{"type": "text", "text": "You are a careful engineer. " * 200}]


def _session(write_log, anthropic_body, *, model="claude-sonnet-4-6", n=4):
    bodies, usage, history = [], [], []
    for i in range(n):
        history = [*history, {"role": "user", "content": f"step {i}: " + "words " * 80}]
        bodies.append(anthropic_body(history, system=SYSTEM, model=model))
        history = [*history, {"role": "assistant", "content": f"done {i}"}]
        usage.append(
            {
                "input_tokens": 20,
                "cache_read_input_tokens": 1500 * i,
                "cache_creation_input_tokens": 1600 if i == 0 else 120,
                "output_tokens": 10,
            }
        )
    return cacheviz.load(write_log(bodies, usage=usage)).analyze()


def _frame(encoded):
    return pl.read_ipc_stream(io.BytesIO(base64.b64decode(encoded)))


def test_the_report_shows_the_billed_series(write_log, anthropic_body):
    analysis = _session(write_log, anthropic_body)
    costs = _frame(report_data(analysis)["costs"])
    assert costs["billed_usd"].null_count() == 0
    assert costs["billed_usd"].to_list() == analysis.calls["billed_usd"].to_list()


def test_the_comparison_names_the_recorded_model(write_log, anthropic_body):
    analysis = _session(write_log, anthropic_body, model="claude-sonnet-4-6")
    shown = state.build(analysis)
    targets = shown.compare["target"].to_list()
    assert targets[0] == "anthropic:claude-sonnet-4-6"
    assert "anthropic:claude-sonnet-4-5" not in targets
    # and its row is the header's simulated cost
    row = shown.compare.row(0, named=True)
    assert row["cost_usd"] == pytest.approx(shown.meta["target"]["total_cost_usd"])


def test_widget_report_and_live_meta_agree(write_log, anthropic_body, tmp_path):
    pytest.importorskip("anywidget")
    from cacheviz.ui.live import LiveInspector
    from cacheviz.ui.widget import Inspector

    analysis = _session(write_log, anthropic_body)
    widget = Inspector(analysis)
    report = report_data(analysis)
    live = LiveInspector(analysis.session.path, poll=60)
    try:
        live_meta = live.inspector.meta
        live_costs = live.inspector.state.costs
    finally:
        live.stop()
    for key in ("target", "compare", "totals", "billed_usd", "ttl_seconds"):
        assert widget.meta.get(key) == report["meta"].get(key) == live_meta.get(key), key
    assert live_costs["billed_usd"].null_count() == 0


def test_update_appends_with_the_billed_series(write_log, anthropic_body):
    pytest.importorskip("anywidget")
    from cacheviz.ui.widget import Inspector

    first = _session(write_log, anthropic_body, n=2)
    whole = _session(write_log, anthropic_body, n=4)
    widget = Inspector(first)
    assert widget.update(whole) in {"appended", "replaced"}
    assert widget.state.costs.height == 4
    assert widget.state.costs["billed_usd"].null_count() == 0
    assert widget.update(whole) == "unchanged"


def test_another_vendor_gets_its_comparable_model(write_log, anthropic_body):
    analysis = _session(write_log, anthropic_body)
    target = state.resolve_target(analysis, "gemini")
    assert target.provider == "google"
    assert target.model == providers.profile("google").reference_model
    assert state.resolve_target(analysis).model is None  # the recorded models


def test_ttl_marks_follow_the_target(write_log, anthropic_body):
    analysis = _session(write_log, anthropic_body)
    assert state.build(analysis).ttl_seconds == providers.profile("anthropic").ttls["5m"]
    one_hour = state.build(analysis, state.Target("anthropic", ttl="1h"))
    assert one_hour.ttl_seconds == providers.profile("anthropic").ttls["1h"]
    assert one_hour.simulation.provider == "anthropic"


def test_a_failed_simulation_is_a_status_not_an_exception(write_log, anthropic_body):
    analysis = _session(write_log, anthropic_body)
    shown = state.build(analysis, state.Target("anthropic", "no-such-model-xyz"))
    assert shown.simulation is not None  # unpriced="skip": simulated, not priced
    assert "no price" in shown.status


def test_the_target_says_whether_it_is_self_hosted(write_log, anthropic_body):
    # the front end words the empty cost chart from this flag, not from provider names
    analysis = _session(write_log, anthropic_body)
    assert state.build(analysis).meta["target"]["self_hosted"] is False
    for engine in providers.self_hosted():
        meta = state.build(analysis, state.Target(engine), with_compare=False).meta
        assert meta["target"]["provider"] == engine
        assert meta["target"]["self_hosted"] is True
