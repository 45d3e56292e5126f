"""One rule for the model a provider prices a session as (issue 33, item 9)."""

import json
from pathlib import Path

import pytest

import cacheviz
from cacheviz import cli
from cacheviz.money.pricing import comparable_model
from cacheviz.ui import _state as state

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
MIXED = SAMPLES / "reported_usage.jsonl"  # claude-sonnet-4-5 plus a claude-haiku-4-5 side call
RECORDED = [("anthropic", "claude-sonnet-4-5"), ("anthropic", "claude-haiku-4-5")]


def test_the_rule():
    same = comparable_model("anthropic", RECORDED)
    assert same.model is None and same.line().startswith("priced as recorded (claude-sonnet-4-5")
    other = comparable_model("gemini", RECORDED)  # an alias
    assert (other.provider, other.model) == ("google", "gemini-2.5-pro")
    assert other.line() == (
        "priced as google:gemini-2.5-pro, the comparable model of claude-sonnet-4-5, "
        "claude-haiku-4-5"
    )
    assert comparable_model("openai", RECORDED).model == "gpt-5"
    assert comparable_model("vllm", RECORDED).model is None  # an engine prices nothing
    # the recorded provider without a price for its model: the closest priced one
    unpriced = comparable_model("anthropic", [("anthropic", "claude-sonnet-4-5-xyz")])
    assert unpriced.model is not None and unpriced.model.startswith("claude-sonnet-4-5")
    assert unpriced.reason == "the closest priced model"


def test_the_inspector_picks_by_the_same_rule():
    analysis = cacheviz.load(MIXED).analyze()
    pairs = analysis.calls.select("provider", "model").unique(maintain_order=True).rows()
    for provider in ("anthropic", "openai", "google", "deepseek", "vllm"):
        _, default = state.model_choices(analysis, provider)
        assert default == (comparable_model(provider, pairs).model or ""), provider


@pytest.mark.parametrize("provider", ["openai", "google", "deepseek"])
def test_simulate_another_vendor_needs_no_model_and_says_what_it_priced(
    capsys, monkeypatch, provider
):
    monkeypatch.setenv("COLUMNS", "200")
    assert cli.main(["simulate", str(MIXED), "--provider", provider]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    pick = comparable_model(provider, RECORDED)
    assert head == f"{provider} ({pick.line()})"
    assert f"priced as {provider}:{pick.model}, the comparable model of" in head
    assert cli.main(["simulate", str(MIXED), "--provider", provider, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == pick.model and doc["priced_as"] == pick.line()
    assert {c["model"] for c in doc["calls"]} == {pick.model}


def test_compare_has_an_as_recorded_row_equal_to_the_simulated_cost(capsys, monkeypatch):
    analysis = cacheviz.load(MIXED).analyze()
    simulated = analysis.summary()["simulated_usd"]
    assert cli.main(["compare", str(MIXED), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["targets"]
    first = rows[0]
    assert (first["target"], first["provider"], first["model"]) == ("anthropic", "anthropic", None)
    assert first["cost_usd"] == pytest.approx(simulated)
    # each recorded model re-prices the whole session: not the session as recorded
    per_model = {r["model"]: r["cost_usd"] for r in rows[1:3]}
    assert set(per_model) == {"claude-sonnet-4-5", "claude-haiku-4-5"}
    assert all(cost != pytest.approx(simulated) for cost in per_model.values())
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["compare", str(MIXED)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("as recorded (anthropic) ")
    assert out[1].split()[-2] == f"${simulated:,.4f}"
    assert max(map(len, out)) <= 80
    # a one-model session: its recorded row is the session as recorded
    frame = cacheviz.load(SAMPLES / "timestamp_in_system.jsonl").analyze()
    targets = state.comparison_targets(frame)
    assert targets[0] == "anthropic:claude-sonnet-4-5" and "anthropic" not in targets
