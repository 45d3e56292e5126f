"""llama.cpp itself against cacheviz's self-hosted rules, call by call, on its token ids."""

from __future__ import annotations

import json
import os
import statistics

import pytest
from engine_sessions import CALLS, DRIFT_AT, KINDS, LINEAR, sessions, threads

import cacheviz
from cacheviz.formats.native import record_line
from cacheviz.providers import _prefill
from cacheviz.providers._base import HandBuilt
from cacheviz.providers.llamacpp import LlamaCppSimulator
from cacheviz.providers.sglang import SGLangSimulator

ONE_SLOT = {"slots": 1, "host_cache_tokens": 0}  # the in-process Llama API


def _reuse(calls):
    return [len(c["ids"]) - c["evaluated"] for c in calls]


def _rule(simulator, kind, calls):
    build = HandBuilt()
    sim_calls = [
        build.call(i, [c["ids"]], thread=thread)
        for i, (c, thread) in enumerate(zip(calls, threads(kind), strict=True))
    ]
    return [r.cache_read_tokens for r in simulator.run(sim_calls)]


@pytest.mark.parametrize("kind", KINDS)
def test_the_llamacpp_rule_equals_the_engine_on_every_call(measured, kind):
    calls = measured["sessions"][kind]
    assert len(calls) == CALLS
    assert _rule(LlamaCppSimulator(**ONE_SLOT), kind, calls) == _reuse(calls)


@pytest.mark.parametrize("kind", LINEAR)
def test_the_sglang_rule_equals_the_engine_on_linear_sessions(measured, kind):
    calls = measured["sessions"][kind]
    assert _rule(SGLangSimulator(), kind, calls) == _reuse(calls)


def test_interleaved_threads_keep_only_the_slots_previous_prompt(measured):
    calls = measured["sessions"]["interleaved"]
    reuse = _reuse(calls)
    # the slot holds the other thread's prompt: only the head both threads share is reused
    a, b = calls[0]["ids"], calls[1]["ids"]
    head = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
    assert all(r <= head for r in reuse)
    # SGLang's radix cache would keep both threads: it predicts more on every later call
    sglang = _rule(SGLangSimulator(), "interleaved", calls)
    assert all(s > r for s, r in zip(sglang[2:], reuse[2:], strict=True))


def _log(path, kind, calls):
    lines = []
    for i, (messages, call, thread) in enumerate(
        zip(sessions()[kind], calls, threads(kind), strict=True)
    ):
        n = len(call["ids"])
        usage = {
            "prompt_tokens": n,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": n - call["evaluated"]},
        }
        lines.append(
            record_line(
                {"model": "tiny-qwen2", "messages": messages},
                provider="llamacpp",
                model="tiny-qwen2",
                api="chat.completions",
                ts=f"2026-12-06T10:00:{i:02d}Z",
                usage=usage,
                response={
                    "prompt_token_ids": call["ids"],
                    "timings": {"prompt_ms": call["prefill_ms"]},
                },
                meta={"thread": thread, "engine": {"name": "llamacpp", **ONE_SLOT}},
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_simulate_on_the_engine_log_agrees_call_by_call_and_estimates_the_drift(measured, tmp_path):
    points = [
        (c["evaluated"], len(c["ids"]) - c["evaluated"], c["prefill_ms"])
        for kind in KINDS
        for c in measured["sessions"][kind]
    ]
    fitted = _prefill.fit(points, "engine tier")
    assert fitted is not None
    _prefill.save("llamacpp", "tiny-qwen2", fitted)
    figures = {"llama_cpp": measured["llama_cpp"], "fit": repr(fitted)}
    sims = {}
    for kind in KINDS:
        log = _log(tmp_path / f"{kind}.jsonl", kind, measured["sessions"][kind])
        sim = cacheviz.load(log).analyze().simulate("llamacpp")
        assert sim.token_exact
        assert sim.parameters["slots"] == {"value": 1, "source": "log"}
        assert sim.agreement_calls == (CALLS, CALLS), kind
        sims[kind] = sim
    # the drift call's prefill over a stable call's: the median of the stable session's
    # later calls (one short call's time swings 5x on a loaded machine), alike for both
    stable, early = measured["sessions"]["stable"], measured["sessions"]["early"]
    engine_factor = early[DRIFT_AT]["prefill_ms"] / statistics.median(
        c["prefill_ms"] for c in stable[1:]
    )
    # the estimate: simulate's prefill factor of the drift point (its prefill_ms over the
    # same call's with its prefix kept), on the engine's log alone
    estimated_factor = sims["early"].calls["prefill_factor"][DRIFT_AT]
    same_call = early[DRIFT_AT]["prefill_ms"] / stable[DRIFT_AT]["prefill_ms"]
    figures["early_drift_factor"] = {
        "engine": engine_factor,
        "engine_same_call": same_call,
        "estimated": estimated_factor,
    }
    session_ms = {k: sum(c["prefill_ms"] for c in measured["sessions"][k]) for k in KINDS}
    figures["session_prefill_ms"] = session_ms
    # each session against the stable one, measured, and simulate's session prefill factor
    figures["session_factor"] = {
        k: {
            "engine": session_ms[k] / session_ms["stable"],
            "estimated": sims[k].prefill_factor,
        }
        for k in KINDS
    }
    figures["stable_call_ms_median"] = statistics.median(c["prefill_ms"] for c in stable[1:])
    figures["drift_call"] = {
        "tokens": len(early[DRIFT_AT]["ids"]),
        "uncached": early[DRIFT_AT]["evaluated"],
        "ms": early[DRIFT_AT]["prefill_ms"],
    }
    figures["n_p_eval_equals_evaluated"] = sum(
        c["n_p_eval"] == c["evaluated"] for k in KINDS for c in measured["sessions"][k]
    )
    report = os.environ.get("CACHEVIZ_ENGINE_REPORT")
    if report:
        with open(report, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)
    assert estimated_factor == pytest.approx(engine_factor, rel=0.25)
    assert sims["stable"].prefill_factor == 1.0  # no drift point: its own stable session
