"""cacheviz.live._incremental: a log followed as it grows gives, after every append, the same
analysis as a full load and analysis of the same lines."""

from __future__ import annotations

import random
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from cacheviz import providers
from cacheviz.errors import CacheVizWarning
from cacheviz.formats import native
from cacheviz.live import _sim_stream as sim_stream
from cacheviz.live._incremental import LiveLog
from cacheviz.live._sim_stream import SimulationStream
from cacheviz.money._simulate import sim_calls, simulate
from cacheviz.money.pricing import PriceBook
from cacheviz.prefix._thread import name_from_totals, name_threads

sys.path.insert(0, str(Path(__file__).parents[1]))  # live_sessions
from live_sessions import session_lines

SAMPLES = Path(__file__).resolve().parents[2] / "sample_sessions"
SAMPLE_NAMES = sorted(p.name for p in SAMPLES.glob("*.jsonl"))


def _sample(name: str) -> list[str]:
    return (SAMPLES / name).read_text(encoding="utf-8").splitlines(keepends=True)


def _full(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)  # the generated logs' bad lines
        return native.read(path, errors="skip").analyze()


def assert_same_analysis(live: LiveLog, path: Path) -> None:
    """The live analysis equals the full one of ``path``, frame for frame."""
    full = _full(path)
    got = live.analysis
    assert got is not None
    assert_frame_equal(got.calls, full.calls)
    assert_frame_equal(got.drifts, full.drifts)
    assert_frame_equal(got.misses, full.misses)
    assert got.offsets == full.offsets
    assert got.local_offsets == full.local_offsets
    assert got.calibration.basis == full.calibration.basis
    assert got.calibration.rates == full.calibration.rates
    assert got.billed_usd == full.billed_usd
    assert got.unpriced_models == full.unpriced_models
    assert (got.own_simulation is None) == (full.own_simulation is None)
    if full.own_simulation is not None:
        mine, theirs = got.own_simulation, full.own_simulation
        assert_frame_equal(mine.calls, theirs.calls)
        for name in ("provider", "model", "price_source", "total_cost_usd", "ideal_usd"):
            assert getattr(mine, name) == getattr(theirs, name), name
        assert mine.token_scale == theirs.token_scale
        assert mine.score == theirs.score
    assert got.session.skipped == full.session.skipped
    assert got.summary() == full.summary()
    assert_frame_equal(got.segments, full.segments)


CASES = (
    [pytest.param(_sample(name), id=name) for name in SAMPLE_NAMES]
    + [pytest.param(session_lines(seed), id=f"generated-{seed}") for seed in range(6)]
    + [pytest.param(session_lines(7, shuffle=True), id="generated-logged-late")]
)


@pytest.mark.parametrize("lines", CASES)
@pytest.mark.slow
def test_after_every_append_the_analysis_is_the_full_one(tmp_path, lines):
    log = tmp_path / "run.jsonl"
    log.write_text("", encoding="utf-8")
    live = LiveLog(log)
    assert live.update() == 0
    assert live.analysis is None
    for line in lines:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        live.update()
        if live.calls:
            assert_same_analysis(live, log)


@pytest.mark.parametrize("seed", [1, 5])
@pytest.mark.slow
def test_several_lines_at_once_and_in_memory(tmp_path, seed):
    lines = session_lines(seed)
    rng = random.Random(seed)
    log = tmp_path / "run.jsonl"
    log.write_text("", encoding="utf-8")
    written: list[str] = []
    on_disk = LiveLog(log)
    in_memory = LiveLog(lambda: [line.rstrip("\n") for line in written])
    at = 0
    while at < len(lines):
        step = rng.randint(1, 5)
        chunk = lines[at : at + step]
        at += step
        written.extend(chunk)
        with log.open("a", encoding="utf-8") as handle:
            handle.write("".join(chunk))
        on_disk.update()
        in_memory.update()
        if on_disk.calls:
            assert_same_analysis(on_disk, log)
            # a log in memory has no file: its calls name none (source null)
            assert in_memory.analysis.calls["source"].null_count() == len(in_memory.calls)
            assert_frame_equal(
                in_memory.analysis.calls.drop("source"), on_disk.analysis.calls.drop("source")
            )
            assert_frame_equal(in_memory.analysis.misses, on_disk.analysis.misses)


def test_an_append_only_log_is_extended_call_by_call(tmp_path, monkeypatch):
    """Each update analyses the new calls only: the earlier ones are not looked at again."""
    lines = _sample("append_only.jsonl")
    log = tmp_path / "run.jsonl"
    log.write_text(lines[0], encoding="utf-8")
    live = LiveLog(log)
    assert live.update() == 1
    seen: list[int] = []
    tokenized: list[str] = []
    original = LiveLog._analyse_one
    monkeypatch.setattr(
        LiveLog, "_analyse_one", lambda self, i: (seen.append(i), original(self, i))[1]
    )
    for cache in live.caches.values():
        original_ensure = cache.ensure
        monkeypatch.setattr(
            cache,
            "ensure",
            lambda hashes, ensure=original_ensure, cache=cache: (
                tokenized.extend(h for h in hashes if h not in cache._lengths),
                ensure(hashes),
            )[1],
        )
    for k, line in enumerate(lines[1:], 1):
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        assert live.update() == 1
        assert seen == [k]
        seen.clear()
    assert live.rebuilds == 0 and live.reloads == 0
    full = _full(log)
    # each block tokenized once, when the call that first sends it arrives
    assert len(tokenized) == len(set(tokenized))
    assert set(tokenized) == {h for c in full.session.calls[1:] for h in c.hashes} - set(
        full.session.calls[0].hashes
    )
    assert_same_analysis(live, log)


def test_a_torn_last_line_waits_for_its_newline(tmp_path):
    lines = _sample("reported_usage.jsonl")
    log = tmp_path / "run.jsonl"
    log.write_text("".join(lines[:3]), encoding="utf-8")
    live = LiveLog(log)
    assert live.update() == 3
    before = live.analysis
    half = len(lines[3]) // 2
    with log.open("a", encoding="utf-8") as handle:
        handle.write(lines[3][:half])
    assert live.update() == 0  # half a line: not read, not counted as a bad line
    assert live.analysis is before
    assert live.reader.skipped == []
    with log.open("a", encoding="utf-8") as handle:
        handle.write(lines[3][half:-1])  # complete JSON, but no newline yet
    assert live.update() == 0
    with log.open("a", encoding="utf-8") as handle:
        handle.write("\n")
    assert live.update() == 1
    assert_same_analysis(live, log)


def test_a_log_rewritten_or_logged_out_of_order_is_read_again(tmp_path):
    lines = _sample("append_only.jsonl")
    log = tmp_path / "run.jsonl"
    log.write_text("".join(lines[:6]), encoding="utf-8")
    live = LiveLog(log)
    live.update()
    log.write_text("".join(lines[:3]), encoding="utf-8")  # shorter: rewritten
    assert live.update() == -1
    assert live.reloads == 1
    assert_same_analysis(live, log)
    # a call sent before the last one logged: the log's order is by request time
    with log.open("a", encoding="utf-8") as handle:
        handle.write(lines[5])
    live.update()
    with log.open("a", encoding="utf-8") as handle:
        handle.write(lines[4])
    assert live.update() == -1
    assert live.reloads == 2
    assert_same_analysis(live, log)


def test_a_session_wide_change_recomputes_the_earlier_rows(tmp_path):
    """TTL evidence that appears late changes the thread's earlier rows: all recomputed."""
    lines = session_lines(2, breakpoints_from=12)
    log = tmp_path / "run.jsonl"
    log.write_text("", encoding="utf-8")
    live = LiveLog(log)
    outcomes = []
    for line in lines:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        outcomes.append(live.update())
    assert -1 in outcomes
    assert live.rebuilds >= 1
    assert live.analysis.calls.filter(pl.col("thread") == "main")[
        "ttl_seconds"
    ].unique().to_list() == [300]
    assert_same_analysis(live, log)


@pytest.mark.parametrize("provider", [p.id for p in providers.profiles()])
def test_a_simulation_streamed_call_by_call_is_the_full_replay(provider):
    analysis = _full(SAMPLES / "side_calls.jsonl")
    model = (
        None
        if providers.profile(provider).self_hosted
        else providers.profile(provider).reference_model
    )
    full = simulate(analysis, provider, model, unpriced="skip")
    stream = SimulationStream(provider, model, prices=PriceBook(), unpriced="skip")
    built = sim_calls(analysis, local=providers.profile(provider).self_hosted)
    recorded = analysis.calls["provider"].to_list()
    prefixes = analysis.calls["prefix_tokens"].to_list()
    for call in built:
        stream.extend([call], recorded, prefixes)
    got = stream.simulation()
    assert_frame_equal(got.calls, full.calls)
    for name in ("total_cost_usd", "ideal_usd", "token_scale", "score", "price_source"):
        assert getattr(got, name) == getattr(full, name), name


def test_a_simulator_without_stream_is_replayed_whole(monkeypatch):
    analysis = _full(SAMPLES / "reported_usage.jsonl")
    cls = providers.simulator_class("anthropic")

    class OnlyRun:
        provider = "anthropic"

        def run(self, calls):
            return cls().run(calls)

    monkeypatch.setattr(sim_stream, "make_simulator", lambda provider, **rules: OnlyRun())
    replay = sim_stream._Replay("anthropic")
    results = [replay.step(call) for call in sim_calls(analysis)]
    assert results == cls().run(sim_calls(analysis))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.slow
def test_thread_names_from_running_totals_are_name_threads(tmp_path, seed):
    log = tmp_path / "run.jsonl"
    log.write_text("", encoding="utf-8")
    live = LiveLog(log)
    for line in session_lines(seed, 40):
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        live.update()
        if not live.calls:
            continue
        weights = [offsets[-1] for offsets in live.local]
        walk = live._threads
        want = name_threads(
            live.calls,
            live.raw,
            walk.parents,
            walk.hinted,
            walk.logged,
            weights,
            live.store.contents,
        )
        assert name_from_totals(walk.totals, walk.parents, walk.hinted, walk.logged) == want
        assert walk.named() == want


def test_whitespace_lines_are_read_as_the_loader_reads_them(tmp_path):
    """Blank lines are left out; a form feed line is a bad line once the file has text."""
    lines = ["\x0c\n", "\n", "  \t\n", *_sample("append_only.jsonl")[:3], "\x0c\n"]
    log = tmp_path / "run.jsonl"
    log.write_text("", encoding="utf-8")
    live = LiveLog(log)
    for line in lines:
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        live.update()
        if live.calls:
            assert_same_analysis(live, log)
    assert [s.line for s in live.analysis.session.skipped] == [1, 7]


def test_a_model_that_starts_caching_recomputes_its_earlier_misses(tmp_path):
    """No miss while a model shows no caching; its first read makes the earlier ones
    misses again, live as in a full analysis."""
    model = "some-lab/some-model"
    text = " ".join(f"word{i % 97}" for i in range(2_000))
    lines, messages = [], []
    for i, read in enumerate([0, 0, 0, 2_500]):
        messages = [*messages, {"role": "user", "content": f"q{i} " + text}]
        total = 3_000 + 1_000 * i
        usage = {
            "input_tokens": total - read,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": 0,
            "output_tokens": 5,
        }
        body = {"model": model, "max_tokens": 10, "messages": messages}
        lines.append(
            native.record_line(
                body,
                provider="openrouter",
                model=model,
                api="messages",
                ts=f"2026-01-01T00:00:0{i}Z",
                usage=usage,
            )
            + "\n"
        )
        messages = [*messages, {"role": "assistant", "content": "ok"}]
    log = tmp_path / "run.jsonl"
    log.write_text("", encoding="utf-8")
    live = LiveLog(log)
    for k, line in enumerate(lines):
        with log.open("a", encoding="utf-8") as handle:
            handle.write(line)
        live.update()
        assert_same_analysis(live, log)
        if k == 2:
            assert live.analysis.misses.is_empty()
    assert live.rebuilds >= 1
    assert not live.analysis.misses.is_empty()
