"""``bench/vllm_cpu.py``'s measurements, checked against the fake vLLM (tests/fake_engine.py).

The benchmark itself runs by hand on a real vLLM (docs/simulation.md); here its replay of
one session kind, its per-call prefill times read from ``/metrics`` and its merging of
rounds run against the fake engine, whose prefill times follow a known cost model.
"""

import importlib.util
from pathlib import Path

import pytest
from engine_sessions import CALLS, DRIFT_AT
from fake_engine import FakeEngine, prefill_ms

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("vllm_cpu_bench", ROOT / "bench" / "vllm_cpu.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_kind_replayed_cold_gets_the_engine_prefill_times_and_both_block_sizes(
    bench, tmp_path, monkeypatch
):
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "cache"))
    with FakeEngine("vllm", block_size=128) as engine:
        client = bench.EngineClient(bench.engine_base(engine.url))
        first = bench.replay_kind(client, engine.url, "early", tmp_path / "one", [])
        again = bench.replay_kind(client, engine.url, "early", tmp_path / "two", [])
    calls = first["calls"]
    assert first["block_size"] == 128
    assert (first["equal"], first["reported"]) == (CALLS, CALLS)
    # the rule at the GPU default of 16 over-predicts, by less than one engine block
    assert first["equal_at_16"] < CALLS
    assert 0 < first["max_over_at_16"] < 128
    assert calls[DRIFT_AT]["engine_cached_tokens"] < calls[DRIFT_AT - 1]["engine_cached_tokens"]
    for call in calls:
        expected = prefill_ms(call["uncached_tokens"], call["engine_cached_tokens"])
        assert call["engine_prefill_ms"] == pytest.approx(expected, abs=1e-3)
        assert call["cpu_ms"] is None  # no engine pids: no CPU time
    # /reset_prefix_cache before each replay: the second starts cold as the first did
    assert again["calls"][0]["engine_cached_tokens"] == 0
    assert [c["engine_cached_tokens"] for c in again["calls"]] == [
        c["engine_cached_tokens"] for c in calls
    ]


def test_rounds_merge_to_the_least_agreement_and_the_median_time(bench):
    def kind(equal, times):
        calls = [
            {"cpu_ms": t, "engine_prefill_ms": None, "prefill_ms": t, "equal": equal} for t in times
        ]
        return {
            "equal": 2 if equal else 1,
            "equal_at_16": 0,
            "tolerant_at_16": 1.0,
            "max_over_at_16": 16 if equal else 48,
            "calls": calls,
        }

    merged = bench.merged([kind(True, [1.0, 9.0]), kind(False, [3.0, 5.0]), kind(True, [2.0, 7.0])])
    assert merged["rounds"] == 3
    assert (merged["equal"], merged["max_over_at_16"]) == (1, 48)
    assert [c["cpu_ms"] for c in merged["calls"]] == [2.0, 7.0]
    assert [c["engine_prefill_ms"] for c in merged["calls"]] == [None, None]
    assert not any(c["equal"] for c in merged["calls"])


def test_the_stable_session_sent_twice_is_cached_whole_the_second_time(
    bench, tmp_path, monkeypatch
):
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "cache"))
    with FakeEngine("vllm", block_size=64) as engine:
        client = bench.EngineClient(bench.engine_base(engine.url))
        twice = bench.replay_kind(client, engine.url, bench.REPEATED, tmp_path, [])
    assert (twice["equal"], twice["reported"]) == (2 * CALLS, 2 * CALLS)
    second = twice["calls"][CALLS:]
    # every full block but the one holding the last token, which is recomputed
    assert [c["engine_cached_tokens"] for c in second] == [
        (c["input_tokens"] - 1) // 64 * 64 for c in second
    ]


def test_the_drift_call_is_set_against_the_other_calls_of_its_session(bench):
    times = [100.0] + [10.0] * (DRIFT_AT - 1) + [55.0, 10.0] + [12.0] * (CALLS - DRIFT_AT - 2)
    calls = [{"cpu_ms": t} for t in times]
    # the first call (a cold prefill) and the drift call itself are left out: the median
    # of nine 10s and nine 12s (12 if either were counted)
    assert bench.within_session(calls, "cpu_ms") == pytest.approx(55.0 / 11.0)
