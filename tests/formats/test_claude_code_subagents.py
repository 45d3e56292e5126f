"""A Claude Code session with sub-agents in the projects layout, on every surface (issue 33).

The fixture (tests/fixtures/claude_code_subagents, written by make_claude_code_subagents.py)
has the shape that crashed the DeepSeek and Google replays of the default comparison with
``KeyError '<digest>@v1'``: the main thread's unlogged prefix gets a new version (a read
stopping inside it within the TTL), then a sub-agent's first call compares its own
unlogged prefix with the versioned one where prompts branch.

Real sessions of that layout are read from ``$CACHEVIZ_CLAUDE_PROJECTS`` when it is set
(docs/testing.md); kept outside the repository.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from surfaces import check_report, cli, run_surfaces

import cacheviz
from cacheviz.money._simulate import sim_calls
from cacheviz.request._tokens import TokenCache

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
import make_claude_code_subagents as fixture  # noqa: E402

SESSION = fixture.session_path()


@pytest.fixture(scope="module")
def analysis():
    return cacheviz.load(SESSION).analyze()


def test_the_committed_fixture_is_what_its_generator_writes(tmp_path):
    fixture.write(tmp_path)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(fixture.ROOT) for p in fixture.ROOT.rglob("*") if p.is_file())
    assert written == committed
    for name in written:
        assert (fixture.ROOT / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_the_fixture_still_has_the_shape_that_crashed(analysis):
    """A versioned unlogged prefix, then a new thread's first call after it."""
    calls = sim_calls(analysis)
    # each sub-agent named by its meta.json's description (issue 33, item 7)
    assert {c.thread for c in calls} == {
        "main",
        "sub-agent: Find the orders table schema",
        "sub-agent: Find where totals are rendered",
    }
    versioned = [c.index for c in calls if "@v" in c.hashes[0]]
    assert versioned and {calls[i].thread for i in versioned} == {"main"}
    later_first = [
        c.index
        for c in calls
        if c.index > versioned[0] and c.thread not in {calls[i].thread for i in range(c.index)}
    ]
    assert later_first, "no thread starts after the main thread's prefix got a version"
    # the versioned hash shares its base digest with the main thread's earlier calls
    assert calls[versioned[0]].hashes[0].split("@v")[0] == calls[0].hashes[0]


def test_a_call_resolves_a_versioned_hash_whatever_its_own_version(analysis):
    calls = sim_calls(analysis)
    versioned = next(c for c in calls if "@v" in c.hashes[0])
    plain = next(c for c in calls if c.thread != "main")
    base = versioned.hashes[0].split("@v")[0]
    assert "@v" not in plain.hashes[0]
    cache = next(iter(analysis.token_caches.values()))
    assert isinstance(cache, TokenCache)
    assert plain.tokens(versioned.hashes[0]) == cache[base]
    assert versioned.tokens(base) == cache[base]


@pytest.mark.parametrize(("provider", "model"), [("deepseek", "deepseek-chat"), ("google", None)])
def test_deepseek_and_google_replay_it(analysis, provider, model):
    sim = analysis.simulate(provider, model or "gemini-2.5-pro")
    frame = sim.calls
    assert frame.height == analysis.calls.height
    threads = frame["thread"].to_list()
    # each sub-agent's first call: its own system prompt was never cached, nothing is read
    for name in sorted(set(threads) - {"main"}):
        first = threads.index(name)
        assert frame["cache_read_tokens"][first] == 0, (provider, name)
        assert frame["input_tokens"][first] == analysis.calls["reported_input_tokens"][first]
    assert sim.total_cost_usd is not None and sim.total_cost_usd > 0


def test_compare_has_every_default_row(analysis):
    frame = analysis.compare(["anthropic:claude-sonnet-4-6", "deepseek:deepseek-chat"])
    assert frame["error"].to_list() == [None, None]
    assert frame["cost_usd"].null_count() == 0


def test_every_surface_runs_on_it(tmp_path):
    outcome = run_surfaces(SESSION, tmp_path)
    assert outcome.errors() == {}
    assert len(outcome.compare) == 4 and all(r["error"] is None for r in outcome.compare)
    for args in (["deepseek", "--model", "deepseek-chat"], ["google"]):
        status, out, err = cli("simulate", str(SESSION), "--provider", *args, "--json")
        assert status == 0, err
        assert json.loads(out)["calls"]


def test_scan_reads_the_project_folder_as_one_session(analysis, tmp_path):
    html = tmp_path / "fleet.html"
    status, out, err = cli(
        "scan", str(fixture.ROOT), "--json", "--no-cache", "--jobs", "1", "--report", str(html)
    )
    assert status == 0, err
    doc = json.loads(out)
    assert doc["failed"] == []
    assert [s["calls"] for s in doc["sessions"]] == [analysis.calls.height]
    reports = sorted((tmp_path / "fleet_sessions").glob("*.html"))
    assert len(reports) == 1  # the session's own report, linked from the fleet view
    check_report(reports[0])


def _real_sessions() -> list[Path]:
    folder = os.environ.get("CACHEVIZ_CLAUDE_PROJECTS")
    if not folder:
        return []
    return sorted(
        p.parent.with_suffix(".jsonl")
        for p in Path(folder).rglob("subagents")
        if p.is_dir() and p.parent.with_suffix(".jsonl").is_file()
    )


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("CACHEVIZ_CLAUDE_PROJECTS"),
    reason="CACHEVIZ_CLAUDE_PROJECTS is not set: point it at Claude Code projects folders "
    "with sub-agents (docs/testing.md)",
)
def test_real_sessions_with_sub_agents_run_on_every_surface(tmp_path):
    sessions = _real_sessions()
    if not sessions:
        pytest.fail("$CACHEVIZ_CLAUDE_PROJECTS holds no <uuid>.jsonl beside a <uuid>/subagents/")
    for session in sessions:
        outcome = run_surfaces(session, tmp_path)
        assert outcome.errors() == {}, session
