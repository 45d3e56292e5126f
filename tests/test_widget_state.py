"""The inspector's synced state, without a browser: types, sizes, selection, re-simulation."""

import io
import json

import polars as pl
import pytest

import cacheviz
from cacheviz.formats.native import record_line
from cacheviz.widget import Inspector, inspect

SAMPLES = __import__("pathlib").Path(__file__).resolve().parent.parent / "sample_sessions"


@pytest.fixture(scope="module")
def analysis():
    return cacheviz.load(SAMPLES / "environment_details.jsonl").analyze()


def _table(data):
    return pl.read_ipc_stream(io.BytesIO(data))


def test_tables_are_arrow_and_text_free(analysis):
    widget = Inspector(analysis)
    state = widget.get_state()
    timeline = _table(state["_timeline"])
    assert timeline.height == analysis.calls.height
    assert timeline.columns == [
        "call",
        "ts_ms",
        "thread",
        "input_tokens",
        "prefix_tokens",
        "new_tokens",
        "drift",
        "cause",
        "label",
        "tokens_lost",
        "idle_gap",
    ]
    shape = _table(state["_shape"])
    assert shape.columns == ["call", "start", "end", "status"]
    # runs tile each call's token axis exactly
    ends = shape.group_by("call").agg(pl.col("end").max()).sort("call")["end"].to_list()
    assert ends == analysis.calls["input_tokens"].to_list()
    costs = _table(state["_costs"])
    assert costs["cost_usd"].sum() == pytest.approx(widget.simulation.total_cost_usd)
    meta = state["meta"]
    assert meta["totals"]["drifts"] == 3 and meta["target"]["provider"] == "anthropic"
    assert [row["target"] for row in meta["compare"]][:2] == [
        "anthropic:claude-sonnet-4-5",
        "openai:gpt-5",
    ]
    json.dumps(meta)  # JSON-ready


def test_selecting_a_drift_call_fills_the_detail(analysis):
    widget = Inspector(analysis)
    assert widget._detail == {}
    widget.set_state({"selected_call": 3})
    detail = widget._detail
    assert detail["drift"] is True and detail["cause"] == "env_details_stripped"
    assert detail["chips"]["prev_after"][1:3] == ["<", "environment"]
    assert "<environment_details>" in detail["prev"]["text"]
    assert detail["cost_usd"] > 0
    widget.selected_call = 1
    assert widget._detail["drift"] is False
    assert widget.selected()["index"] == 1


def test_changing_the_target_resimulates(analysis):
    box = inspect(analysis)
    widget = box.inspector
    provider, model, _ttl, strategy = box.children[0].children
    before = widget.meta["target"]["total_cost_usd"]
    strategy.value = "none"
    assert widget.meta["target"]["total_cost_usd"] > before
    provider.value = "deepseek"  # recorded models are Anthropic ones: needs a model
    assert "no price for these models; choose a model" in widget.status
    model.value = "deepseek-chat"
    assert widget.status == "" and widget.meta["target"]["provider"] == "deepseek"


def test_an_analysis_in_a_cell_is_the_inspector(analysis):
    bundle = analysis._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_synced_state_of_a_2000_call_session_is_under_2_mb(tmp_path):
    system = [
        {
            "type": "text",
            "text": "You are a careful engineer. " * 100,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    history = []
    lines = []
    for i in range(2000):
        history.append(
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": f"step {i} " * 20}],
            }
        )
        window = history[-12:] if history[-12:][0]["role"] == "user" else history[-11:]
        body = {"model": "claude-sonnet-4-5", "system": system, "messages": window}
        lines.append(
            record_line(
                body,
                provider="anthropic",
                model="claude-sonnet-4-5",
                api="messages",
                ts=f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
            )
        )
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines) + "\n")
    widget = Inspector(cacheviz.load(path).analyze())
    state = widget.get_state()
    size = sum(
        len(v) if isinstance(v, bytes) else len(json.dumps(v))
        for k, v in state.items()
        if not k.startswith("_model") and not k.startswith("_view")
    )
    assert size < 2_000_000, size


def test_the_selected_call_lists_its_segments(analysis):
    widget = Inspector(analysis)
    widget.selected_call = 2
    segments = widget._detail["segments"]
    assert [s["label"] for s in segments][:2] == ["read_file", "write_file"]
    assert {"label", "part", "tokens", "token_offset", "hash", "status"} == set(segments[0])
    assert widget._detail["segments_truncated"] == 0


def test_the_ttl_control_redraws_the_idle_gaps(analysis):
    widget = Inspector(analysis)
    gaps_5m = _table(widget._timeline)["idle_gap"].sum()
    widget.resimulate("anthropic", ttl="1h")
    assert widget.meta["ttl_seconds"] == 3600
    assert _table(widget._timeline)["idle_gap"].sum() <= gaps_5m
