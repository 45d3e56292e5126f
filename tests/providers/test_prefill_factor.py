"""The prefill factor: a drift point's estimated prefill over the same call's with its prefix kept."""

import json

import pytest

import cacheviz
from cacheviz import cli
from cacheviz.formats.native import record_line
from cacheviz.money._simulate import stable_read
from cacheviz.providers import _prefill

DRIFT_AT = 3


def _prompt(i):
    """The engine's ids of call ``i``: a 100-token head (changed at token 5 from the drift on)."""
    head = list(range(100))
    if i >= DRIFT_AT:
        head[5] = 9999
    return head + [1000 + j for j in range(30 * (i + 1))]


def _log(path, n=6):
    """A one-slot llama.cpp session whose system prompt changes before call ``DRIFT_AT``."""
    lines, messages = [], []
    previous: list[int] = []
    for i in range(n):
        system = "You are a helpful assistant. " * 20 + ("(v2)" if i >= DRIFT_AT else "")
        messages = [*messages, {"role": "user", "content": f"question {i} " * 10}]
        prompt = _prompt(i)
        read = 0
        for a, b in zip(previous, prompt, strict=False):
            if a != b:
                break
            read += 1
        usage = {
            "prompt_tokens": len(prompt),
            "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": min(read, len(prompt) - 1)},
        }
        lines.append(
            record_line(
                {"model": "tiny", "messages": [{"role": "system", "content": system}, *messages]},
                provider="llamacpp",
                model="tiny",
                api="chat.completions",
                usage=usage,
                response={"prompt_token_ids": prompt},
                meta={"engine": {"name": "llamacpp", "slots": 1, "host_cache_tokens": 0}},
            )
        )
        messages = [*messages, {"role": "assistant", "content": "ok"}]
        previous = prompt
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_stable_read_is_the_previous_prompt_whole_as_the_rule_reads_it():
    assert stable_read(5, 220, 190) == 190
    assert stable_read(0, 150, 190) == 149  # the last token is always computed
    assert stable_read(0, 220, 190, unit=16) == 176  # vLLM's blocks, SGLang's pages
    assert stable_read(200, 220, 190) == 200  # never less than the call read


def test_a_drift_point_is_its_prefill_over_the_same_call_with_its_prefix_kept(tmp_path):
    analysis = cacheviz.load(_log(tmp_path / "l.jsonl")).analyze()
    assert analysis.drifts["call"].to_list() == [DRIFT_AT]
    sim = analysis.simulate("llamacpp")
    assert sim.token_exact
    model = _prefill.load("llamacpp", "tiny")
    row = sim.calls.row(DRIFT_AT, named=True)
    assert (row["input_tokens"], row["cache_read_tokens"]) == (220, 5)
    assert row["prefill_ms"] == pytest.approx(model.estimate(215, 5), abs=1e-3)
    assert row["prefill_ms_stable"] == pytest.approx(model.estimate(30, 190), abs=1e-3)
    assert row["prefill_factor"] == pytest.approx(row["prefill_ms"] / row["prefill_ms_stable"])
    assert row["prefill_factor"] > 2  # 215 new tokens, 5 cached, against 30 after 190
    others = sim.calls.filter(sim.calls["call"] != DRIFT_AT)
    assert others["prefill_ms_stable"].to_list() == others["prefill_ms"].to_list()
    assert set(others["prefill_factor"].to_list()) == {1.0}
    total, stable = sim.calls["prefill_ms"].sum(), sim.calls["prefill_ms_stable"].sum()
    assert sim.prefill_factor == pytest.approx(total / stable)
    assert 1 < sim.prefill_factor < row["prefill_factor"]
    # vLLM's rule reads whole blocks: the prefix it would have kept is floored to one
    vllm = analysis.simulate("vllm", block_size=16).calls.row(DRIFT_AT, named=True)
    assert vllm["prefill_ms_stable"] == pytest.approx(model.estimate(220 - 176, 176), abs=1e-3)


def test_a_priced_provider_has_no_prefill_factor(tmp_path):
    analysis = cacheviz.load(_log(tmp_path / "l.jsonl")).analyze()
    sim = analysis.simulate("openai", "gpt-4o")
    assert sim.prefill_factor is None
    assert sim.calls["prefill_factor"].null_count() == sim.calls.height
    rows = {r["target"]: r for r in analysis.compare(["llamacpp", "openai:gpt-4o"]).to_dicts()}
    assert rows["llamacpp"]["prefill_factor"] == pytest.approx(
        analysis.simulate("llamacpp").prefill_factor
    )
    assert rows["openai:gpt-4o"]["prefill_factor"] is None


def test_simulate_prints_and_writes_the_prefill_factor(tmp_path, capsys):
    log = _log(tmp_path / "l.jsonl")
    assert cli.main(["simulate", str(log), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    drift = doc["calls"][DRIFT_AT]
    assert drift["prefill_factor"] == pytest.approx(
        drift["prefill_ms"] / drift["prefill_ms_stable"]
    )
    assert doc["prefill_factor"] == pytest.approx(
        sum(c["prefill_ms"] for c in doc["calls"])
        / sum(c["prefill_ms_stable"] for c in doc["calls"])
    )
    assert cli.main(["simulate", str(log)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"{doc['prefill_factor']:.2f}x the " in out
    assert "ms of the same session without drift" in out
    assert f"call {DRIFT_AT} {drift['prefill_factor']:.1f}x" in out


def test_compare_gives_an_engines_prefill_factor(tmp_path, capsys):
    log = _log(tmp_path / "l.jsonl")
    factor = cacheviz.load(log).analyze().simulate("llamacpp").prefill_factor
    assert cli.main(["compare", str(log), "--targets", "llamacpp,openai:gpt-4o", "--json"]) == 0
    rows = {r["target"]: r for r in json.loads(capsys.readouterr().out)["targets"]}
    assert rows["llamacpp"]["prefill_factor"] == pytest.approx(factor)
    assert rows["openai:gpt-4o"]["prefill_factor"] is None
    assert cli.main(["compare", str(log), "--targets", "llamacpp,openai:gpt-4o"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"estimated prefill {factor:.2f}x the same session without drift" in out
