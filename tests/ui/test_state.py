"""The one inspector state: widget, live inspector and report show the same numbers."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import polars as pl
import pytest

import cacheviz
from cacheviz import providers
from cacheviz.ui import _state as state
from cacheviz.ui.report import report_data

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"

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
    widget._message(None, {"type": "compare"})  # the comparison, once the view asks
    report = report_data(analysis)
    live = LiveInspector(analysis.session.path, poll=60)
    try:
        live.inspector._message(None, {"type": "compare"})
        live_meta = live.inspector.meta
        live_costs = live.inspector.state.costs
    finally:
        live.stop()
    for key in ("target", "compare", "totals", "billed_usd", "ttl_seconds", "waste_of"):
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


def _fail_replays_of(monkeypatch, simulator):
    """``simulator``'s replays raise a non-cacheviz exception (a fault in cacheviz)."""

    def broken(self, calls):
        raise KeyError("6af60b8bfeb90301@v1")
        yield  # a generator, as stream() is: it raises when the first call is taken

    monkeypatch.setattr(simulator, "stream", broken)


def test_a_failed_comparison_row_is_that_rows_error(write_log, anthropic_body, monkeypatch):
    from cacheviz.providers.deepseek import DeepSeekSimulator

    analysis = _session(write_log, anthropic_body)
    whole = state.build(analysis)
    _fail_replays_of(monkeypatch, DeepSeekSimulator)
    shown = state.build(analysis)
    assert shown.status == "" and shown.simulation is not None
    rows = {row["target"]: row for row in shown.meta["compare"]}
    assert set(rows) == set(whole.compare["target"])
    failed = rows.pop("deepseek:deepseek-chat")
    assert failed["error"].startswith("replay failed: internal error KeyError: ")
    assert failed["cost_usd"] is None and failed["cache_read_tokens"] is None
    others = {row["target"]: row for row in whole.meta["compare"]}
    for target, row in rows.items():
        assert row == others[target]  # computed as without the failure
        assert row["error"] is None
    # the report and the widget show the same rows
    assert report_data(analysis)["meta"]["compare"] == shown.meta["compare"]
    pytest.importorskip("anywidget")
    from cacheviz.ui.widget import Inspector

    widget = Inspector(analysis)
    widget._message(None, {"type": "compare"})  # the comparison, once the view asks
    assert widget.meta["compare"] == shown.meta["compare"]


def test_the_live_state_shows_a_failed_row_as_the_full_build(
    write_log, anthropic_body, monkeypatch
):
    from cacheviz.providers.deepseek import DeepSeekSimulator
    from cacheviz.ui._live_state import LiveState

    analysis = _session(write_log, anthropic_body)
    _fail_replays_of(monkeypatch, DeepSeekSimulator)
    live, _ = LiveState(analysis.session.path).update()
    full = state.build(analysis)
    assert live.meta["compare"] == full.meta["compare"]
    assert [r["error"] is not None for r in live.meta["compare"]].count(True) == 1
    assert live.status == full.status == ""


def test_a_failed_target_simulation_is_the_status_not_a_traceback(
    write_log, anthropic_body, monkeypatch
):
    from cacheviz.providers.anthropic import AnthropicSimulator

    analysis = _session(write_log, anthropic_body)
    monkeypatch.setattr(analysis, "own_simulation", None)  # replayed, not the analysis's own
    _fail_replays_of(monkeypatch, AnthropicSimulator)
    shown = state.build(analysis, targets=("openai:gpt-5",))
    assert shown.simulation is None
    assert shown.status.startswith("anthropic: internal error KeyError: ")
    assert "\n" not in shown.status
    assert shown.compare["error"].to_list() == [None]  # the comparison is still computed


def test_a_self_hosted_target_has_its_row_in_the_comparison(write_log, anthropic_body):
    # issue 33, item 10: the notice promises the engine's row; it is there, then gone
    analysis = _session(write_log, anthropic_body, model="claude-sonnet-4-6")
    engine = state.build(analysis, state.Target("vllm"))
    assert "its row in the comparison shows the prefill tokens" in engine.meta["notice"]
    row = engine.compare.filter(engine.compare["target"] == "vllm").row(0, named=True)
    assert row["cache_read_tokens"] == int(engine.simulation.calls["cache_read_tokens"].sum())
    assert row["cost_usd"] is None and row["error"] is None
    back = state.build(analysis, state.Target("anthropic"), compare=engine.compare)
    assert "vllm" not in back.compare["target"].to_list()
    assert back.compare.height == engine.compare.height - 1


def test_a_self_hosted_target_shows_its_prefill_factor():
    # issue 31: each drift point's prefill factor and the session's, read by the views
    analysis = cacheviz.load(SAMPLES / "timestamp_in_system.jsonl").analyze()
    engine = state.build(analysis, state.Target("llamacpp"))
    target, sim = engine.meta["target"], engine.simulation
    assert target["prefill_factor"] == sim.prefill_factor
    assert target["prefill_factor"] > 1  # a timestamp refreshed in the system prompt
    assert target["prefill_ms"] == pytest.approx(sim.calls["prefill_ms"].sum())
    assert [d["call"] for d in target["prefill_drifts"]] == analysis.drifts["call"].to_list()
    for drift in target["prefill_drifts"]:
        row = sim.calls.row(drift["call"], named=True)
        assert drift == {k: row[k] for k in drift}
        assert drift["prefill_factor"] > 1
    row = next(r for r in engine.meta["compare"] if r["target"] == "llamacpp")
    assert row["prefill_factor"] == target["prefill_factor"]
    priced = state.build(analysis, state.Target("anthropic"), compare=engine.compare)
    assert not [k for k in priced.meta["target"] if k.startswith("prefill")]
    assert not [r for r in priced.meta["compare"] if "prefill_factor" in r]
