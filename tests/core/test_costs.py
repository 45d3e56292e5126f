"""Costs (cacheviz.money._costs): billed from reported usage, and the costs an analysis holds."""

from __future__ import annotations

import pytest
from cost_frames import CostColumns, diagnose_costs

import cacheviz
from cacheviz.model import Call, Usage
from cacheviz.money._costs import billed_cost
from cacheviz.money.pricing import Rates

RATES = Rates(input=3e-6, cache_read=0.3e-6, cache_write=3.75e-6, cache_write_1h=6e-6, output=15e-6)


def _call(usage):
    return Call(0, 1, None, "anthropic", "messages", "claude-sonnet-4-5", [], usage=usage)


def test_billed_prices_each_part_of_the_usage():
    usage = Usage(
        input_tokens=10_000,
        cache_read_tokens=6_000,
        cache_write_tokens=3_000,
        cache_write_1h_tokens=1_000,
        output_tokens=500,
    )
    expected = (
        1_000 * RATES.input  # uncached: 10,000 - 6,000 - 3,000
        + 6_000 * RATES.cache_read
        + 2_000 * RATES.cache_write  # 5-minute writes
        + 1_000 * RATES.cache_write_1h
        + 500 * RATES.output
    )
    assert billed_cost(_call(usage), RATES) == pytest.approx(expected)


def test_not_reported_is_not_billed():
    assert billed_cost(_call(None), RATES) is None
    assert billed_cost(_call(Usage(input_tokens=5, output_tokens=None)), RATES) is None


def _session(write_log, anthropic_body):
    system = [{"type": "text", "text": "You are a careful engineer. " * 200}]
    bodies, usage, history = [], [], []
    for i in range(3):
        history = [*history, {"role": "user", "content": f"step {i} " + "w " * 60}]
        bodies.append(anthropic_body(history, system=system))
        history = [*history, {"role": "assistant", "content": "ok"}]
        usage.append(
            {
                "input_tokens": 10,
                "cache_read_input_tokens": 1400 * i,
                "cache_creation_input_tokens": 1500 if i == 0 else 90,
                "output_tokens": 5,
            }
        )
    return cacheviz.load(write_log(bodies, usage=usage))


def test_diagnose_costs_returns_columns_and_leaves_the_input_alone(write_log, anthropic_body):
    analysis = _session(write_log, anthropic_body).analyze()
    before = analysis.calls.clone()
    costs = diagnose_costs(analysis)
    assert isinstance(costs, CostColumns)
    assert analysis.calls.equals(before)
    assert costs.calls["billed_usd"].null_count() == 0
    assert costs.billed_usd == pytest.approx(costs.calls["billed_usd"].sum())
    assert costs.own_simulation is not None and costs.own_simulation.provider == "anthropic"


def test_the_analysis_holds_what_the_costs_computed(write_log, anthropic_body):
    analysis = _session(write_log, anthropic_body).analyze()
    assert analysis.billed_usd == pytest.approx(analysis.calls["billed_usd"].sum())
    ideal, simulated = analysis.calls["ideal_usd"], analysis.calls["simulated_usd"]
    assert ideal.null_count() == simulated.null_count() == 0
    assert ((ideal - simulated) <= 1e-12).all()
