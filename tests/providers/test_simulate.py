import json

import polars as pl
import pytest

import cacheviz
from cacheviz import _schema, cli
from cacheviz.money._simulate import SimulationError

SYSTEM = [
    {
        "type": "text",
        "text": "You are a careful engineer. " * 200,
        "cache_control": {"type": "ephemeral"},
    }
]


def _msgs(n):
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        content = [{"type": "text", "text": f"message {i} about the parser " * 5}]
        out.append({"role": role, "content": content})
    out[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return out


@pytest.fixture
def session(write_log, anthropic_body):
    bodies = [anthropic_body(_msgs(n), system=SYSTEM) for n in (1, 3, 5)]
    usage = [
        {
            "input_tokens": 10,
            "cache_creation_input_tokens": 1300,
            "cache_read_input_tokens": 0,
            "output_tokens": 20,
        },
        {
            "input_tokens": 10,
            "cache_creation_input_tokens": 90,
            "cache_read_input_tokens": 1300,
            "output_tokens": 20,
        },
        # the provider reported a miss here: the simulation will call it unexplained
        {
            "input_tokens": 10,
            "cache_creation_input_tokens": 1500,
            "cache_read_input_tokens": 0,
            "output_tokens": 20,
        },
    ]
    return cacheviz.load(write_log(bodies, usage=usage)).analyze()


def test_simulation_frame_and_totals(session):
    result = session.simulate("anthropic")
    frame = result.calls
    assert frame.schema == pl.Schema(_schema.SIMULATION)
    assert (
        frame["input_tokens"]
        == frame["uncached_tokens"] + frame["cache_read_tokens"] + frame["cache_write_tokens"]
    ).all()
    assert (
        frame["cache_read_tokens"].to_list()[1:] == frame["input_tokens"].to_list()[:-1]
    )  # append-only: each call reads the last
    assert result.total_cost_usd == pytest.approx(frame["cost_usd"].sum())
    assert 0 < result.ideal_usd <= result.total_cost_usd
    assert result.price_source.startswith("genai-prices")


def test_verdicts_score_and_token_scale(session):
    result = session.simulate("anthropic")
    assert result.calls["verdict"].to_list() == ["match", "match", "unexplained_miss"]
    assert result.score == pytest.approx(2 / 3)
    reported = [1310, 1400, 1510]
    ours = session.calls["local_tokens"].to_list()
    expected = sum(r * o for r, o in zip(reported, ours, strict=True)) / sum(o * o for o in ours)
    assert result.token_scale == pytest.approx(expected)


def test_what_ifs_and_other_providers_need_a_model(session):
    none = session.simulate("anthropic", breakpoints="none")
    assert none.calls["cache_read_tokens"].sum() == 0
    assert none.total_cost_usd > session.simulate("anthropic").total_cost_usd
    with pytest.raises(
        SimulationError,
        match=r"call 0 used 'claude-sonnet-4-5' \(anthropic\); to replay the session on deepseek, name one of its models",
    ):
        session.simulate("deepseek")
    with pytest.raises(
        SimulationError, match="unknown provider 'mystery'; expected one of anthropic"
    ):
        session.simulate("mystery")
    with pytest.raises(SimulationError, match="its rules are: breakpoints, ttl"):
        session.simulate("anthropic", retention="24h")


def test_compare_rows(session):
    frame = session.compare(["anthropic:claude-sonnet-4-5", "anthropic:claude-opus-4-1"])
    assert frame.schema == pl.Schema(_schema.COMPARE)
    assert frame["target"].to_list() == ["anthropic:claude-sonnet-4-5", "anthropic:claude-opus-4-1"]
    assert frame["cost_usd"][1] == pytest.approx(5 * frame["cost_usd"][0])  # Opus 4.1 is 5x Sonnet


def test_cli_simulate_json_contract(session, capsys):
    path = str(session.session.path)
    assert cli.main(["simulate", path, "--provider", "anthropic", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {
        "provider",
        "model",
        "price_source",
        "calls",
        "total_cost_usd",
        "ideal_usd",
    } <= set(doc)
    for call in doc["calls"]:
        assert (
            call["input_tokens"]
            == call["uncached_tokens"] + call["cache_read_tokens"] + call["cache_write_tokens"]
        )
        assert {
            "call",
            "thread",
            "model",
            "output_tokens",
            "cost_usd",
            "reported",
            "verdict",
        } <= set(call)
    assert (
        cli.main(
            ["simulate", path, "--provider", "anthropic", "--ttl", "1h", "--breakpoints", "auto"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.splitlines()[-2].startswith("total: $")
    assert (
        cli.main(
            ["compare", path, "--targets", "anthropic:claude-sonnet-4-5,anthropic:claude-haiku-4-5"]
        )
        == 0
    )
    assert "anthropic:claude-haiku-4-5" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--provider", "nope"], "unknown provider 'nope'"),
        (
            ["--provider", "anthropic", "--model", "claude-nonexistent-9"],
            "no price for model 'claude-nonexistent-9'",
        ),
        (["--provider", "anthropic", "--rule", "oops"], "--rule 'oops': expected NAME=VALUE"),
    ],
)
def test_cli_simulate_errors_are_one_line(session, capsys, args, expected):
    assert cli.main(["simulate", str(session.session.path), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err
