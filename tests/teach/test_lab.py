"""The lab's toy agent follows the block order it is given; the TTFT model is its formula."""

import pytest

from cacheviz.check import check
from cacheviz.teach.lab import PrefillModel, estimate_ttft, layout_requests, layout_session


def test_static_blocks_first_and_dynamic_ones_appended_cache():
    analysis = layout_session(["tools", "system", "history", "time", "profile"], live_profile=True)
    analysis = analysis.analyze()
    assert analysis.drifts.height == 0 and check(analysis).findings == []
    assert all(analysis.calls["prefix_tokens"][1:] > 0)


def test_a_timestamp_before_the_history_breaks_every_call():
    analysis = layout_session(["tools", "time", "system", "history"]).analyze()
    assert analysis.drifts["call"].to_list() == list(range(1, analysis.calls.height))
    assert [f.rule for f in check(analysis).findings] == ["dynamic_system"]


def test_a_date_only_time_block_is_stable():
    analysis = layout_session(["time", "tools", "system", "history"], timestamp=False).analyze()
    assert analysis.drifts.height == 0


def test_breakpoints_are_what_anthropic_caches():
    order = ["tools", "system", "history"]
    on = layout_session(order).analyze().simulate("anthropic")
    off = layout_session(order, breakpoints=False).analyze().simulate("anthropic")
    assert on.calls["cache_read_tokens"].sum() > 0
    assert off.calls["cache_read_tokens"].sum() == 0


def test_order_must_hold_the_history():
    with pytest.raises(ValueError, match="include 'history'"):
        layout_requests(["tools", "system"])


def test_ttft_model():
    model = PrefillModel(base_seconds=0.5, prefill_seconds_per_token=0.001, cached_fraction=0.1)
    assert model.ttft(1000, 0) == pytest.approx(1.5)
    assert model.ttft(0, 1000) == pytest.approx(0.6)
    simulation = layout_session(["tools", "system", "history"]).analyze().simulate("anthropic")
    estimates = estimate_ttft(simulation, model)
    assert len(estimates) == simulation.calls.height
    first = simulation.calls.row(0, named=True)
    assert estimates[0] == pytest.approx(model.ttft(first["input_tokens"], 0))


def test_an_early_timestamp_makes_the_engines_prefill_longer():
    from cacheviz.teach.lab import prefill_factor

    rules = {"slots": 1, "host_cache_tokens": 0}
    first = layout_session(["time", "tools", "system", "history"], steps=6).analyze()
    last = layout_session(["tools", "system", "history", "time"], steps=6).analyze()
    drifting, stable = first.simulate("llamacpp", **rules), last.simulate("llamacpp", **rules)
    factor = prefill_factor(drifting, stable)
    assert factor > 2
    # the first call is cold in both: the same prompt head, about the same prefill
    assert prefill_factor(drifting, stable, call=0) == pytest.approx(1, rel=0.2)
    # the later the call, the longer the history recomputed behind the timestamp
    assert prefill_factor(drifting, stable, call=drifting.calls.height - 1) > factor


def test_without_llama_cpp_there_is_no_live_prefill(monkeypatch):
    import sys

    from cacheviz.teach.lab import live_prefill

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # not importable
    assert live_prefill(layout_session(["system", "history"]), "model.gguf") is None


def test_a_timestamp_refreshed_once_is_one_early_drift():
    order = ["time", "tools", "system", "history"]
    once = layout_session(order, turns=1, steps=6, refresh_time_at=3).analyze()
    assert once.drifts["call"].to_list() == [3]
    assert once.drifts["label"].to_list() == ["system[0]"]
    never = layout_session(order, turns=1, steps=6, refresh_time_at=6).analyze()
    assert never.drifts.height == 0


def test_without_an_engine_the_early_drift_is_estimated(monkeypatch, tmp_path):
    import sys

    from cacheviz.teach.lab import EARLY_ORDER, ONE_SLOT, early_drift

    lab = early_drift(steps=6, drift_at=3)
    assert not lab.measured
    assert lab.source.startswith("prefill_ms; no engine: set CACHEVIZ_LAB_MODEL")
    early = layout_session(EARLY_ORDER, turns=1, steps=6, refresh_time_at=3).analyze()
    sim = early.simulate("llamacpp", **ONE_SLOT)
    # the estimate is simulate's prefill factor (one definition), and the chart its points
    assert lab.estimated_drift_factor == sim.calls["prefill_factor"][3]
    assert lab.estimated_session_factor == sim.prefill_factor
    assert [p.prefill_ms for p in lab.runs["early"]] == sim.calls["prefill_ms"].to_list()
    assert [p.uncached for p in lab.runs["early"]] == sim.calls["uncached_tokens"].to_list()
    drift, stable = lab.runs["early"][3], lab.runs["stable"][3]
    assert drift.uncached > 5 * stable.uncached and drift.prefill_ms > 2 * stable.prefill_ms
    # the stable twin is the same call with its prefix kept: the same factor, both ways
    assert lab.drift_factor == pytest.approx(lab.estimated_drift_factor, rel=0.02)
    assert lab.headline().startswith("estimated (prefill_ms; no engine")
    assert f"{lab.estimated_drift_factor:.1f}x" in lab.headline()
    assert "no model file at" in early_drift(tmp_path / "none.gguf", steps=3, drift_at=1).source
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # not importable
    assert "llama-cpp-python is not installed" in early_drift(model, steps=3, drift_at=1).source
