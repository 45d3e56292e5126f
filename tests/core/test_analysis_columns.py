"""analysis.analyze_columns / costs.cost_lists: the analysis as lists, the same values.

``cacheviz scan`` flattens thousands of sessions and takes each analysis as plain lists
(no polars frame per session). These check the list path against the independent
frame-based code it replaced (``simulate.sim_calls``, ``simulate.simulate``) and that
the lists hold exactly what the frames hold (values and Python types).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from cost_frames import diagnose_costs
from polars.testing import assert_frame_equal

import cacheviz
from cacheviz import _schema
from cacheviz.analysis import analyze, analyze_columns, prefix_lists
from cacheviz.errors import CacheVizWarning
from cacheviz.money._simulate import sim_calls, sim_calls_of, simulate
from cacheviz.money.pricing import PriceBook

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
SAMPLE_NAMES = sorted(p.name for p in SAMPLES.glob("*.jsonl"))


def _load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        return cacheviz.load(path)


def _realdata_sessions(realdata: Path, limit: int = 12):
    out = []
    for path in sorted(realdata.rglob("*.jsonl"))[:limit]:
        try:
            out.append(_load(path))
        except cacheviz.CacheVizError:
            continue
    return out


def _same_values(frame_values: list, values: list) -> bool:
    return len(frame_values) == len(values) and all(
        a == b and type(a) is type(b) for a, b in zip(frame_values, values, strict=True)
    )


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_the_lists_hold_what_the_frames_hold(name):
    session = _load(SAMPLES / name)
    columns = analyze_columns(session)
    analysis = analyze(session)
    for table, schema, lists in (
        (analysis.calls, _schema.CALLS, columns.calls),
        (analysis.drifts, _schema.DRIFTS, columns.drifts),
        (analysis.misses, _schema.MISSES, columns.costs.misses),
    ):
        assert set(lists) == set(schema)
        for column in schema:
            if schema[column] == _schema.CALLS["ts"]:
                # a datetime comes back from polars in UTC: the same instant
                assert table[column].to_list() == lists[column], column
                continue
            assert _same_values(table[column].to_list(), lists[column]), column


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_the_replay_inputs_are_simulate_sim_calls(name):
    session = _load(SAMPLES / name)
    analysis = analyze(session)
    lists = prefix_lists(session)  # the lists cost_lists builds its replay input from
    ours = sim_calls_of(
        session.calls,
        lists.call_cols,
        lists.token_caches,
        lists.offsets,
        lists.local_offsets,
    )
    theirs = sim_calls(analysis)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        for field in a.__dataclass_fields__:
            if field == "tokens":
                assert [list(a.tokens(h)) for h in a.hashes] == [
                    list(b.tokens(h)) for h in b.hashes
                ]
            else:
                assert getattr(a, field) == getattr(b, field), field


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_the_own_simulation_is_simulate(name):
    session = _load(SAMPLES / name)
    analysis = analyze(session)
    own = analysis.own_simulation
    if own is None:
        pytest.skip("no provider with caching rules")
    full = simulate(analysis, own.provider, unpriced="skip")
    assert_frame_equal(own.calls, full.calls, check_exact=True)
    for field in ("provider", "model", "price_source", "total_cost_usd", "ideal_usd"):
        assert getattr(own, field) == getattr(full, field), field
    for field in ("token_scale", "score", "rules"):
        assert getattr(own, field) == getattr(full, field), field
    book = PriceBook()
    own = analyze(session, prices=book).own_simulation
    assert own.prices is book and own.unpriced == "skip"  # as simulate(..., unpriced="skip")


def test_diagnose_costs_on_frames_is_the_list_path():
    session = _load(SAMPLES / "reported_usage.jsonl")
    analysis = analyze(session)
    got = diagnose_costs(analysis)
    assert_frame_equal(got.calls, analysis.calls, check_exact=True)
    assert_frame_equal(got.drifts, analysis.drifts, check_exact=True)
    assert_frame_equal(got.misses, analysis.misses, check_exact=True)
    assert got.billed_usd == analysis.billed_usd


def test_one_price_book_for_many_sessions_gives_each_its_own_numbers(realdata):
    """A scan's worker prices its batch with one book, its rates resolved once for all."""
    sessions = _realdata_sessions(realdata)
    assert sessions
    book, rates = PriceBook(), {}
    shared = [analyze_columns(s, prices=book, rates=rates) for s in sessions]
    assert rates and all(cache.book is book for cache in rates.values())
    for session, columns in zip(sessions, shared, strict=True):
        alone = analyze(session)  # a fresh book: nothing resolved before
        assert_frame_equal(
            _schema.frame(_schema.CALLS, columns.calls), alone.calls, check_exact=True
        )
        assert_frame_equal(
            _schema.frame(_schema.DRIFTS, columns.drifts), alone.drifts, check_exact=True
        )
        assert_frame_equal(
            _schema.frame(_schema.MISSES, columns.costs.misses), alone.misses, check_exact=True
        )


def test_rates_of_another_price_book_are_not_used():
    session = _load(SAMPLES / "reported_usage.jsonl")
    other = PriceBook()
    rates = {}
    analyze_columns(session, prices=other, rates=rates)
    kept = dict(rates)
    book = PriceBook()
    analyze_columns(session, prices=book, rates=rates)
    assert all(rates[key] is not kept[key] and rates[key].book is book for key in kept)
