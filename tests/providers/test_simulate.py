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


def _fail_deepseek(monkeypatch):
    """DeepSeek's replay raises a non-cacheviz exception (a fault, as the KeyError was)."""
    from cacheviz.providers.deepseek import DeepSeekSimulator

    def broken(self, calls):
        raise KeyError("6af60b8bfeb90301@v1")

    monkeypatch.setattr(DeepSeekSimulator, "run", broken)


TARGETS = ["anthropic:claude-sonnet-4-5", "deepseek:deepseek-chat", "openai:gpt-5"]


def test_a_failed_target_is_its_rows_error_and_the_others_are_computed(session, monkeypatch):
    whole = session.compare(TARGETS)
    _fail_deepseek(monkeypatch)
    frame = session.compare(TARGETS)
    assert frame.schema == pl.Schema(_schema.COMPARE)
    assert frame["target"].to_list() == TARGETS
    failed = frame.row(1, named=True)
    assert failed["error"] == (
        "replay failed: internal error KeyError: '6af60b8bfeb90301@v1' "
        "(a cacheviz bug: please report it with the transcript's format)"
    )
    assert (failed["provider"], failed["model"]) == ("deepseek", "deepseek-chat")
    numbers = ("input_tokens", "cache_read_tokens", "cost_usd", "ideal_usd", "price_source")
    assert all(failed[k] is None for k in numbers)
    # the other rows are the ones computed without the failure
    assert frame.filter(pl.col("target") != TARGETS[1]).equals(
        whole.filter(pl.col("target") != TARGETS[1])
    )
    assert whole["error"].null_count() == whole.height
    with pytest.raises(KeyError):
        session.compare(TARGETS, errors="raise")


def test_a_model_without_a_price_is_a_no_price_row(session):
    frame = session.compare(["anthropic:MiniMax-M2.1", "openai:gpt-5"])
    row = frame.row(0, named=True)
    assert row["cost_usd"] is None and row["ideal_usd"] is None  # null, not 0
    assert row["error"] == (
        "no price for 'MiniMax-M2.1' on anthropic: "
        "pass a price file (--prices FILE, prices= in Python)"
    )
    # its tokens are the replay's (pricing does not change them)
    priced = session.compare(["anthropic:claude-sonnet-4-5"]).row(0, named=True)
    for key in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "uncached_tokens"):
        assert row[key] == priced[key]
    assert frame["error"][1] is None and frame["cost_usd"][1] > 0
    # another vendor without a model: name one
    other = session.compare(["openai"]).row(0, named=True)
    assert other["cost_usd"] is None
    assert other["error"].startswith("no price for 'claude-sonnet-4-5' on openai: name a model")
    with pytest.raises(cacheviz.errors.UnknownModelError):
        session.compare(["anthropic:MiniMax-M2.1"], errors="raise")


def test_a_misspelt_provider_fails_the_comparison(session):
    with pytest.raises(SimulationError, match="unknown provider 'antropic'"):
        session.compare(["antropic:claude-sonnet-4-5", "openai:gpt-5"])
    with pytest.raises(SimulationError, match="errors='rows'"):
        session.compare(["openai:gpt-5"], errors="rows")


def test_cli_compare_marks_the_failed_and_unpriced_rows(session, monkeypatch, capsys):
    path = str(session.session.path)
    targets = "anthropic:MiniMax-M2.1,openai:gpt-5"
    assert cli.main(["compare", path, "--targets", targets]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[-3:] == ["no", "price", "-"]
    assert out[2].split()[-1].startswith("$")
    assert out[3] == (
        "anthropic:MiniMax-M2.1: no price for 'MiniMax-M2.1' on "
        "anthropic: pass a price file (--prices FILE, prices= in Python)"
    )
    assert cli.main(["compare", path, "--targets", targets, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["targets"]
    assert [r["cost_usd"] is None for r in rows] == [True, False]
    _fail_deepseek(monkeypatch)
    assert cli.main(["compare", path, "--targets", ",".join(TARGETS)]) == 1  # a row failed
    out = capsys.readouterr().out.splitlines()
    assert out[2].split() == ["deepseek:deepseek-chat", "-", "-", "-", "failed", "-"]
    assert out[4].startswith("deepseek:deepseek-chat: replay failed: internal error KeyError")
    assert cli.main(["compare", path, "--targets", "antropic:x"]) == 2


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
