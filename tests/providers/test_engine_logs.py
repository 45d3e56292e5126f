"""Self-hosted engines' logs: token-exact replays, the rules used, exact agreement, prefill."""

import json

import pytest

import cacheviz
from cacheviz import cli
from cacheviz.formats.native import record_line
from cacheviz.providers import _prefill
from cacheviz.providers.vllm import VLLMSimulator

SYSTEM = "You are a helpful assistant. " * 20


def _one_slot(previous, ids):
    """What a one-slot llama.cpp engine reuses: the common prefix, at most len - 1."""
    n = 0
    for a, b in zip(previous, ids, strict=False):
        if a != b:
            break
        n += 1
    return min(n, len(ids) - 1)


def _log(path, provider, *, ids=True, engine=None, reads=None, n=6):
    """``n`` growing chat calls; the engine's ids: a 100-token head, 30 more per call."""
    lines, messages, previous = [], [{"role": "system", "content": SYSTEM}], []
    for i in range(n):
        messages = [*messages, {"role": "user", "content": f"question {i} " * 10}]
        prompt = list(range(100)) + [1000 + j for j in range(30 * (i + 1))]
        read = _one_slot(previous, prompt) if reads is None else reads[i]
        usage = {
            "prompt_tokens": len(prompt),
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": read},
        }
        lines.append(
            record_line(
                {"model": "tiny", "messages": messages},
                provider=provider,
                model="tiny",
                api="chat.completions",
                usage=usage,
                response={"prompt_token_ids": prompt} if ids else None,
                meta={"engine": engine} if engine else None,
            )
        )
        messages = [*messages, {"role": "assistant", "content": "ok"}]
        previous = prompt
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_engine_token_ids_make_the_replay_token_exact(tmp_path):
    log = _log(tmp_path / "l.jsonl", "llamacpp")
    session = cacheviz.load(log)
    assert session.calls[2].prompt_token_ids[:3] == [0, 1, 2]
    sim = session.analyze().simulate("llamacpp", slots=1)
    assert sim.token_exact
    assert sim.calls["input_tokens"].to_list() == [130, 160, 190, 220, 250, 280]
    assert sim.calls["cache_read_tokens"].to_list() == [0, 130, 160, 190, 220, 250]
    assert sim.agreement == 1.0 and sim.agreement_calls == (6, 6)


def test_without_engine_ids_the_agreement_is_approximate(tmp_path):
    log = _log(tmp_path / "l.jsonl", "llamacpp", ids=False)
    sim = cacheviz.load(log).analyze().simulate("llamacpp")
    assert not sim.token_exact
    assert sim.to_dict()["agreement"]["basis"] == "approximate"
    # cacheviz's own token counts are not the engine's: the reads cannot all be equal
    equal, reported = sim.agreement_calls
    assert reported == 6 and equal < 6


def test_agreement_counts_exact_equality_where_the_verdict_tolerates(tmp_path):
    # the engine read 8 tokens fewer than one slot's reuse on calls 1-5: within the
    # tolerant verdict's margin, never equal
    reads = [0, 122, 152, 182, 212, 242]
    sim = cacheviz.load(_log(tmp_path / "l.jsonl", "llamacpp", reads=reads)).analyze()
    result = sim.simulate("llamacpp", slots=1)
    assert result.score == 1.0
    assert result.agreement_calls == (1, 6)


def test_the_vllm_rule_takes_the_logged_block_size_and_says_so(tmp_path):
    log = _log(tmp_path / "v.jsonl", "vllm", engine={"name": "vllm", "block_size": 128})
    sim = cacheviz.load(log).analyze().simulate("vllm")
    assert sim.parameters["block_size"] == {"value": 128, "source": "log"}
    assert sim.parameters["capacity_blocks"] == {"value": None, "source": "default"}
    assert "device" not in sim.parameters  # it only picks the block size's default
    assert sim.calls["cache_read_tokens"].to_list() == [0, 128, 128, 128, 128, 128]
    # a rule given wins over the log
    ruled = cacheviz.load(log).analyze().simulate("vllm", block_size=32)
    assert ruled.parameters["block_size"] == {"value": 32, "source": "rule"}
    assert ruled.calls["cache_read_tokens"].to_list() == [0, 128, 160, 160, 192, 224]


def test_the_vllm_block_size_follows_the_device():
    assert VLLMSimulator().block_size == 16
    assert VLLMSimulator(device="cpu").block_size == 128
    assert VLLMSimulator(device="cpu", block_size=64).block_size == 64
    with pytest.raises(ValueError, match="device must be one of gpu, cpu"):
        VLLMSimulator(device="tpu")
    with pytest.raises(ValueError, match="whole number"):
        VLLMSimulator(block_size=16.5)


def test_another_engines_log_gives_no_rules(tmp_path):
    log = _log(tmp_path / "v.jsonl", "vllm", engine={"name": "sglang", "block_size": 128})
    sim = cacheviz.load(log).analyze().simulate("vllm")
    assert sim.parameters["block_size"] == {"value": 16, "source": "default"}
    assert sim.parameters["device"] == {"value": "gpu", "source": "default"}


def test_simulate_prints_the_rules_used_and_the_exact_agreement(tmp_path, capsys):
    log = _log(tmp_path / "v.jsonl", "vllm", engine={"name": "vllm", "block_size": 128})
    assert cli.main(["simulate", str(log)]) == 0
    out = capsys.readouterr().out
    assert "rules: block_size=128 (log), capacity_blocks=none" in out
    assert "equal to the reported read on 1 of 6 calls (engine token ids)" in out
    assert cli.main(["simulate", str(log), "--json", "--rule", "block_size=16"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["parameters"]["block_size"] == {"value": 16, "source": "rule"}
    assert doc["agreement"] == {
        "share": 2 / 6,
        "equal_calls": 2,
        "reported_calls": 6,
        "basis": "engine token ids",
    }
    assert all(isinstance(c["prefill_ms"], float) for c in doc["calls"])


def test_a_bad_prompt_token_ids_is_one_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    line = record_line(
        {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]},
        provider="vllm",
        model="tiny",
        api="chat.completions",
        response={"prompt_token_ids": ["a", 1]},
    )
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(cacheviz.TranscriptError, match=r"bad.jsonl:1: .*prompt_token_ids"):
        cacheviz.load(path)


def test_the_prefill_model_fits_its_own_points_and_is_kept_per_engine_and_model():
    truth = _prefill.PrefillModel(5.0, 0.1, 2e-4)
    points = [
        (u, c, truth.estimate(u, c)) for u, c in [(4000, 0), (250, 4000), (30, 4200), (900, 100)]
    ]
    fitted = _prefill.fit(points, "test")
    assert fitted is not None
    assert fitted.fixed_ms == pytest.approx(5.0)
    assert fitted.per_token_ms == pytest.approx(0.1)
    assert fitted.per_pair_ms == pytest.approx(2e-4)
    assert _prefill.fit(points[:2], "test") is None
    assert _prefill.load("llamacpp", "tiny/model") == _prefill.DEFAULTS
    assert _prefill.save("llamacpp", "tiny/model", fitted)
    assert _prefill.load("llamacpp", "tiny/model") == fitted
    assert truth.estimate(0, 100) == 0.0


def test_a_fit_never_keeps_a_negative_coefficient():
    # times that fall with more tokens would need a negative per-token cost: dropped
    points = [(100, 0, 50.0), (200, 0, 40.0), (300, 0, 30.0), (400, 0, 20.0)]
    fitted = _prefill.fit(points, "test")
    assert fitted is not None
    assert min(fitted.fixed_ms, fitted.per_token_ms, fitted.per_pair_ms) >= 0
