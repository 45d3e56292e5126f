"""Speed-ups lose nothing: the fast paths give what the straightforward ones gave.

The content browser is built from the rows it lists, each distinct block redacted once
(issue 19); here it is checked against the row-by-row walk it replaced, on every
sample and on a session with secrets and control characters. Timings are in bench/.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import cacheviz
from cacheviz._schema import clean
from cacheviz._util.visible import visible, visible_all
from cacheviz.redact import redact, redact_all
from cacheviz.ui import _content as content
from cacheviz.ui._segment_rows import STATUS, UNLOGGED_STATUS
from cacheviz.ui._shape import shape_runs
from cacheviz.ui.report import TEXT_CHARS

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "sample_sessions").glob("*.jsonl"))
SECRET = "sk-ant-api03-ThisIsNotARealKey0123456789"


def _walked(analysis: Any, rows: pl.DataFrame, texts: dict[str, str], limit: int) -> dict:
    """The content browser as it was: every row of the call, one by one."""
    sent: list[dict[str, Any]] = []
    context: list[dict[str, Any]] = []
    unlogged = n_sent = n_context = 0
    for seg in rows.iter_rows(named=True):
        if seg["opaque"]:
            unlogged += seg["tokens"] or 0
            continue
        is_context = seg["part"] in ("tools", "system")
        is_sent = seg["status"] != "same"
        if not (is_context or is_sent):
            continue
        item: dict[str, Any] = {
            "label": clean(seg["label"]),
            "part": seg["part"],
            "tokens": seg["tokens"],
            "status": seg["status"],
        }
        role = content._role(analysis, seg["hash"]) if seg["part"] == "messages" else None
        if role:
            item["role"] = role
        item["hash"] = seg["hash"]
        if seg["hash"] not in texts:
            texts[seg["hash"]] = content.segment_text(analysis, seg["hash"], limit)
        if is_sent:
            n_sent += 1
            if len(sent) < content.MAX_SENT:
                sent.append(item)
        else:
            n_context += 1
            if len(context) < content.MAX_CONTEXT:
                context.append(item)
    return {
        "sent": sent,
        "sent_more": n_sent - len(sent),
        "context": context,
        "context_more": n_context - len(context),
        "unlogged_tokens": unlogged,
    }


def _check(analysis: Any) -> None:
    old_texts: dict[str, str] = {}
    old = {
        int(call): _walked(analysis, rows, old_texts, TEXT_CHARS)
        for (call,), rows in analysis.segments.partition_by("call", as_dict=True).items()
    }
    texts: dict[str, str] = {}
    assert content.all_contents(analysis, texts, TEXT_CHARS) == old
    assert texts == old_texts
    # the report's: every string redacted then escaped, as redact_all + visible_all did
    shown: dict[str, str] = {}
    finished = content.all_contents(
        analysis, shown, TEXT_CHARS, finish=lambda text: visible(redact(text))
    )
    assert finished == visible_all(redact_all(old))
    assert shown == old_texts
    for call in range(min(analysis.calls.height, 3)):
        rows = analysis.segments.filter(pl.col("call") == call)
        assert content.call_content(analysis, call) == content.content_of(analysis, rows)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_content_browser_is_the_row_walk_on_samples(path: Path) -> None:
    _check(cacheviz.load(path).analyze())


def test_content_browser_redacts_and_escapes_like_the_walk(write_log, anthropic_body) -> None:
    system = [{"type": "text", "text": f"tools \u202e reversed, key {SECRET} " * 40}]
    calls = []
    history: list[dict[str, Any]] = []
    for i in range(6):
        history.append({"role": "user", "content": f"step {i} password={SECRET}\x1b[31m"})
        calls.append(anthropic_body(list(history), system=system))
        history.append({"role": "assistant", "content": f"done {i}"})
    analysis = cacheviz.load(write_log(calls)).analyze()
    _check(analysis)
    texts: dict[str, str] = {}
    content.all_contents(analysis, texts, TEXT_CHARS, finish=lambda t: visible(redact(t)))
    assert texts
    assert not any(SECRET in text for text in texts.values())


def test_redact_all_once_per_distinct_string_is_redact_of_each() -> None:
    value = {
        "a": [SECRET, "plain", SECRET, ("Bearer abcdefghijklmnopqrstuv", 3)],
        SECRET: {"b": "plain", "c": None, "d": 1.5},
    }
    expected = {
        "a": [
            redact(SECRET),
            "plain",
            redact(SECRET),
            [redact("Bearer abcdefghijklmnopqrstuv"), 3],
        ],
        redact(SECRET): {"b": "plain", "c": None, "d": 1.5},
    }
    assert redact_all(value) == expected
    assert SECRET not in str(redact_all(value))
    assert visible_all(["\x1b", "\x1b", {"\u202e": "x"}]) == [
        visible("\x1b"),
        visible("\x1b"),
        {visible("\u202e"): "x"},
    ]


def test_tokens_in_small_batches_are_the_tokens_of_one_batch(monkeypatch) -> None:
    """Tokenizing in bounded batches (for memory) gives every block the same tokens."""
    from cacheviz.request import _tokens as tokens

    path = SAMPLES[0]
    whole = cacheviz.load(path).analyze()
    monkeypatch.setattr(tokens, "_BATCH_CHARS", 200)  # many batches, some of one block
    batched = cacheviz.load(path).analyze()
    for name, cache in whole.token_caches.items():
        other = batched.token_caches[name]
        assert len(cache) == len(other) > 10
        for digest in whole.session.contents:
            assert cache[digest] == other[digest]
    assert whole.summary() == batched.summary()


def _walked_segments(analysis: Any) -> list[tuple[Any, ...]]:
    """The segments frame as a row-by-row walk computes it (status, sizes, stability)."""
    prev_calls = analysis.calls["prev_call"].to_list()
    prefixes = analysis.calls["prefix_tokens"].to_list()
    threads = analysis.calls["thread"].to_list()
    calls = analysis.session.calls
    seen: dict[tuple[str, str, int], set[str]] = {}
    for call in calls:
        for block in call.blocks:
            seen.setdefault((threads[call.index], block.part, block.position), set()).add(
                block.hash
            )
    rows = []
    for call in calls:
        own = analysis.offsets[call.index]
        prev = prev_calls[call.index]
        before = {} if prev is None else {(b.part, b.position): b.hash for b in calls[prev].blocks}
        for j, block in enumerate(call.blocks):
            tokens, offset = own[j + 1] - own[j], own[j] - own[0]
            prefix = prefixes[call.index]
            if prefix is not None and offset + tokens <= prefix:
                status = "same"
            elif (block.part, block.position) not in before:
                status = "new"
            elif before[(block.part, block.position)] == block.hash:
                status = "invalidated"
            else:
                status = "changed"
            key = (threads[call.index], block.part, block.position)
            stability = "immutable" if len(seen[key]) == 1 else "dynamic"
            place = (call.index, block.part, block.position, block.hash)
            rows.append((*place, tokens, offset, status, stability))
    return rows


_SEGMENT_COLUMNS = ("call", "part", "position", "hash", "tokens", "token_offset")
_SEGMENT_COLUMNS += ("status", "stability")
REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_segments_frame_is_the_row_walk_on_samples(path: Path) -> None:
    analysis = cacheviz.load(path).analyze()
    assert analysis.segments.select(_SEGMENT_COLUMNS).rows() == _walked_segments(analysis)


def test_segments_frame_is_the_row_walk_on_a_claude_code_session() -> None:
    found = sorted((REALDATA / "claude_code_jsonl").rglob("*.jsonl"))
    if not found:
        pytest.skip("../shared/realdata/claude_code_jsonl is absent")
    analysis = cacheviz.load(min(found, key=lambda p: p.stat().st_size)).analyze()
    assert analysis.segments.select(_SEGMENT_COLUMNS).rows() == _walked_segments(analysis)


def test_previous_codes_bisected_are_the_join() -> None:
    """The (call, slot) lookup: a bisection of sorted keys gives what a join gives."""
    import random

    from cacheviz.prefix._segments import previous_codes

    rng = random.Random(19)
    keys = sorted(rng.sample(range(10_000), 500))
    codes = [rng.randrange(50) for _ in keys]
    wanted = [rng.choice([None, -3, 10_001, rng.randrange(10_002), *keys]) for _ in range(2_000)]
    wanted_s = pl.Series(wanted, dtype=pl.Int64)
    shuffled = list(zip(keys, codes, strict=True))
    rng.shuffle(shuffled)
    joined = previous_codes(
        pl.Series([k for k, _ in shuffled]), wanted_s, pl.Series([c for _, c in shuffled])
    )
    bisected = previous_codes(pl.Series(keys), wanted_s, pl.Series(codes))
    table = dict(zip(keys, codes, strict=True))
    assert bisected.to_list() == joined.to_list() == [table.get(w) for w in wanted]


def test_compare_on_one_sim_calls_is_each_target_alone() -> None:
    """The comparison replays copies of one ``sim_calls``: each row as its own replay."""
    from cacheviz.money._simulate import sim_calls, simulate

    analysis = cacheviz.load(SAMPLES[0]).analyze()
    targets = ["anthropic:claude-sonnet-4-5", "openai:gpt-5", "deepseek:deepseek-chat"]
    targets += ["google:gemini-2.5-pro", "vllm", "anthropic:claude-opus-4-1"]
    frame = analysis.compare(targets)
    for row in frame.iter_rows(named=True):
        provider, _, model = row["target"].partition(":")
        alone = simulate(analysis, provider, model or None)
        assert row["cost_usd"] == alone.total_cost_usd
        assert row["cache_read_tokens"] == int(alone.calls["cache_read_tokens"].sum())
    built = sim_calls(analysis)
    before = [(c.model, c.warm_tokens) for c in built]
    shared = simulate(analysis, "openai", "gpt-5", calls=built)
    assert [(c.model, c.warm_tokens) for c in built] == before  # the caller's, unchanged
    assert shared.calls.equals(simulate(analysis, "openai", "gpt-5").calls)


def _walked_runs(analysis: Any) -> list[tuple[int, int, int, int]]:
    """Runs of one status per call, walking the segment rows one by one."""
    runs: list[list[int]] = []
    columns = ("call", "token_offset", "tokens", "status", "opaque")
    for call, offset, tokens, status, opaque in analysis.segments.select(columns).iter_rows():
        code = UNLOGGED_STATUS if opaque else STATUS[status]
        if runs and runs[-1][0] == call and runs[-1][3] == code:
            runs[-1][1] = min(runs[-1][1], offset)
            runs[-1][2] = max(runs[-1][2], offset + tokens)
        else:
            runs.append([call, offset, offset + tokens, code])
    return [tuple(run) for run in runs]


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_shape_runs_are_the_row_walk_on_samples(path: Path) -> None:
    analysis = cacheviz.load(path).analyze()
    assert shape_runs(analysis).rows() == _walked_runs(analysis)


def _replayed(analysis: Any, targets: list[str], **kwargs: Any) -> pl.DataFrame:
    """The comparison with every target replayed (no reuse of the analysis's own)."""
    from cacheviz.money import _simulate as simulate

    saved = simulate.own_replay
    simulate.own_replay = lambda *args, **kw: None
    try:
        return analysis.compare(targets, **kwargs)
    finally:
        simulate.own_replay = saved


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_compare_reusing_the_own_replay_is_the_replay(path: Path) -> None:
    """A target that is the analysis's own replay takes it: the same row as replaying it."""
    from cacheviz.ui import _state as state

    analysis = cacheviz.load(path).analyze()
    targets = state.comparison_targets(analysis)
    assert analysis.compare(targets).equals(_replayed(analysis, targets))
    assert analysis.compare(targets, ttl="1h").equals(_replayed(analysis, targets, ttl="1h"))


def test_the_own_replay_is_taken_only_when_it_is_the_same_replay(tmp_path: Path) -> None:
    import json

    from cacheviz.money._simulate import own_replay
    from cacheviz.money.pricing import PriceBook

    path = SAMPLES[0]  # one model, priced: its first target is its own replay
    analysis = cacheviz.load(path).analyze()
    own = analysis.own_simulation
    model = analysis.session.calls[0].model
    book = PriceBook()
    taken = own_replay(analysis, own.provider, model, book, {})
    assert taken is not None and taken.model == model and taken.calls is own.calls
    assert own_replay(analysis, own.provider, None, own.prices, {}) is not None
    assert own_replay(analysis, own.provider, model, book, {"ttl": "1h"}) is None  # rules
    assert own_replay(analysis, own.provider, model + "-other", book, {}) is None  # a model
    assert own_replay(analysis, "openai", "gpt-5", book, {}) is None  # another provider
    assert own_replay(analysis, "no-such-provider", None, book, {}) is None
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"models": [{"model": [model], "input_mtok": 300.0, "output_mtok": 1500.0}]})
    )
    assert own_replay(analysis, own.provider, model, PriceBook(prices), {}) is None
    # analysed with other prices: the comparison with the bundled ones is replayed
    custom = cacheviz.load(path).analyze(prices=prices)
    assert own_replay(custom, own.provider, model, book, {}) is None
    target = f"{own.provider}:{model}"
    assert custom.compare([target]).equals(analysis.compare([target]))
    assert custom.compare([target], prices=prices).equals(
        _replayed(custom, [target], prices=prices)
    )
    # a call the own replay could not price: the comparison replays it (and raises)
    analysis.own_simulation = dataclasses.replace(
        own, calls=own.calls.with_columns(pl.lit(None, dtype=pl.Float64).alias("cost_usd"))
    )
    assert own_replay(analysis, own.provider, model, book, {}) is None
