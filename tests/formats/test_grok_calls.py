"""Grok Build's ``usage.jsonl``: one row per model call, next to ``updates.jsonl``.

The rows are written in the shape of Grok Build's ``UsageRecord`` (schema 1: the full
prompt in ``input_tokens``, cache reads in ``cached_tokens``, no cache writes), one per
model answer of a turn, keyed by the turn's ``prompt_id``. The expected numbers come from
the rows and the turn's own ``usage``, never from the reader.
"""

import json
import re
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning
from tests.formats.test_grok import MODEL, PROJECT, SESSION, _turn, grok_session, updates

# turn p-1 (two answers: a tool call, then the reply) adds up to its turn_completed usage:
# inputTokens 30,000, cachedReadTokens 24,000, outputTokens 900, reasoningTokens 300
FIRST = [
    {
        "input_tokens": 14_000,
        "cached_tokens": 11_000,
        "output_tokens": 500,
        "reasoning_tokens": 200,
    },
    {
        "input_tokens": 16_000,
        "cached_tokens": 13_000,
        "output_tokens": 400,
        "reasoning_tokens": 100,
    },
]
# turn p-2 has one answer of MODEL; in updates() its usage also holds a grok-code-fast-1 call
# that is no answer of this conversation (a sub-agent's): its row alone does not add up
SECOND = [
    {"input_tokens": 17_000, "cached_tokens": 16_000, "output_tokens": 120, "reasoning_tokens": 40}
]


def _row(prompt: str, counts: dict, minute: int, ticks: int | None = None) -> dict:
    row = {
        "schema_version": 1,
        "event_ulid": f"01K{prompt}{minute:02d}",
        "timestamp": f"2026-09-21T10:{minute:02d}:00.250Z",
        "turn_type": "main",
        "agent_kind": "main",
        "session_id": SESSION,
        "prompt_id": prompt,
        "model_id": MODEL,
        **counts,
        "total_tokens": counts["input_tokens"] + counts["output_tokens"],
        "cost_missing": ticks is None,
        "incomplete": False,
        "api_duration_ms": 1_500 + minute,
    }
    if ticks is not None:
        row["cost_usd_ticks"] = ticks
    return row


def main_only() -> list[dict]:
    """updates() with turn p-2's usage its one answer's: every turn adds up."""
    records = updates()
    only = {k: SECOND[0][v] for k, v in _NAMES.items()}
    records[-1]["params"]["update"] = _turn("p-2", {MODEL: {**only, "modelCalls": 1}}, calls=1)
    return records


_NAMES = {
    "inputTokens": "input_tokens",
    "cachedReadTokens": "cached_tokens",
    "outputTokens": "output_tokens",
    "reasoningTokens": "reasoning_tokens",
}


def rows() -> list[dict]:
    return [
        _row("p-1", FIRST[0], 1, ticks=600_000_000),
        _row("p-1", FIRST[1], 2),
        _row("p-2", SECOND[0], 3),
    ]


def with_calls(root: Path, calls: list[dict] | None = None, records: list[dict] | None = None):
    path = grok_session(root, records)
    lines = rows() if calls is None else calls
    (path.parent / "usage.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def _turn_usage(prompt: str, records: list[dict] | None = None) -> dict:
    for record in records or updates():
        update = record["params"]["update"]
        if update.get("prompt_id") == prompt:
            return update["usage"]
    raise AssertionError(prompt)


def test_each_model_call_with_its_reported_usage_when_the_calls_add_up(tmp_path):
    records = main_only()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheVizWarning)
        session = cacheviz.load(with_calls(tmp_path, records=records))
    assert len(session.calls) == 3  # p-1's two answers, p-2's one
    first, second, third = session.calls
    for call, counts in zip(session.calls, [*FIRST, *SECOND], strict=True):
        usage = call.usage
        assert usage is not None and usage.provenance == "reported"
        assert usage.input_tokens == counts["input_tokens"]  # the full prompt: inclusive
        assert usage.cache_read_tokens == counts["cached_tokens"]
        assert usage.cache_write_tokens == 0  # the turn wrote none
        assert usage.output_tokens == counts["output_tokens"]
        assert usage.reasoning_tokens == counts["reasoning_tokens"]
        assert call.model == MODEL and call.provider == "xai"
    assert first.meta["reported_cost_usd"] == pytest.approx(0.06)
    assert "reported_cost_usd" not in second.meta  # cost_missing
    assert second.meta["stop_reason"] == "end_turn" and "stop_reason" not in first.meta
    assert first.meta["grok_api_duration_ms"] == 1_501
    assert first.ts is not None and first.ts.isoformat() == "2026-09-21T10:01:00.250000+00:00"
    # never twice: nothing is left at the session's scope
    assert session.session_usage == [] and session.reported_totals is None
    assert session.analyze().billed_scope == "calls"
    for prompt, calls in (("p-1", (first, second)), ("p-2", (third,))):
        turn = _turn_usage(prompt, records)
        assert sum(c.usage.input_tokens for c in calls) == turn["inputTokens"]
        assert sum(c.usage.output_tokens for c in calls) == turn["outputTokens"]


def test_a_turn_that_does_not_add_up_bills_the_session_per_turn_with_one_warning(tmp_path):
    with pytest.warns(CacheVizWarning) as caught:
        session = cacheviz.load(with_calls(tmp_path))
    messages = [str(w.message) for w in caught if "usage.jsonl" in str(w.message)]
    assert len(messages) == 1 and "\n" not in messages[0]
    assert "1 turn(s)" in messages[0] and "prompt p-2" in messages[0]
    assert "grok-code-fast-1: calls sum inputTokens 0 vs 2000" in messages[0]
    # as without usage.jsonl: one call per turn, every turn at the session's scope
    assert len(session.calls) == 2 and all(c.usage is None for c in session.calls)
    want = sum(_turn_usage(p)["inputTokens"] for p in ("p-1", "p-2"))
    assert sum(u.usage.input_tokens or 0 for u in session.session_usage) == want


def test_each_call_asks_with_the_conversation_before_its_answer(tmp_path):
    session = cacheviz.load(with_calls(tmp_path, records=main_only()))
    first, second, _ = session.calls
    labels = [[b.label for b in c.blocks if b.part == "messages"] for c in (first, second)]
    # the first answer is asked with the prompt; the second with the tool's result too
    assert labels == [["user#0"], ["user#0", "assistant#1", "user#2"]]
    assert first.line is not None and second.line is not None and first.line < second.line


def test_calls_that_do_not_add_up_keep_the_turns_total_with_one_warning(tmp_path):
    calls = rows()
    calls[1]["output_tokens"] += 7  # no longer the turn's outputTokens
    with pytest.warns(CacheVizWarning) as caught:
        session = cacheviz.load(with_calls(tmp_path, calls))
    messages = [str(w.message) for w in caught if "usage.jsonl" in str(w.message)]
    assert len(messages) == 1 and "\n" not in messages[0]
    assert "2 turn(s)" in messages[0] and "outputTokens 907 vs 900" in messages[0]  # p-1, p-2
    # as without usage.jsonl: one call per turn, every turn at the session's scope
    assert len(session.calls) == 2 and all(c.usage is None for c in session.calls)
    want = sum(_turn_usage(p)["inputTokens"] for p in ("p-1", "p-2"))
    assert sum(u.usage.input_tokens or 0 for u in session.session_usage) == want


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda calls: calls.insert(1, calls[0]), "3 model call(s) in usage.jsonl, 2 answer(s)"),
        (lambda calls: calls[0].update(incomplete=True), "has no complete usage"),
        (lambda calls: calls[0].update(model_id="grok-4.6-build"), "not in the turn's modelUsage"),
        (lambda calls: calls[0].update(cached_tokens=99_999), "has no complete usage"),
        (lambda calls: calls[0].pop("output_tokens"), "has no complete usage"),
    ],
)
def test_a_turn_whose_calls_cannot_be_trusted_is_billed_as_a_whole(tmp_path, change, reason):
    calls = rows()[:2]
    change(calls)
    with pytest.warns(CacheVizWarning, match=re.escape(reason)):
        session = cacheviz.load(with_calls(tmp_path, calls))
    assert len(session.calls) == 2 and all(c.usage is None for c in session.calls)


def test_the_same_bill_per_call_as_per_turn(tmp_path):
    """xAI's prices are per token: the calls that add up to a turn cost what the turn did."""
    records = main_only()
    per_turn = cacheviz.load(grok_session(tmp_path / "old", records)).analyze().billed_usd
    per_call = cacheviz.load(with_calls(tmp_path / "new", records=records)).analyze().billed_usd
    assert per_call == pytest.approx(per_turn)
    assert per_turn > 0


def test_a_sub_agents_calls_are_not_billed_per_call_either(tmp_path):
    root = tmp_path / "sessions"
    child = with_calls(root, records=main_only())
    (root / PROJECT / "019f8870-0000-7000-8000-00000000p000" / "subagents" / SESSION).mkdir(
        parents=True
    )
    session = cacheviz.load(child)
    assert session.session_usage == [] and all(c.usage is None for c in session.calls)


def test_without_usage_jsonl_nothing_changes(tmp_path):
    """Logs before August 2026 (no usage.jsonl): one call per turn, billed per session."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheVizWarning)
        session = cacheviz.load(grok_session(tmp_path))
    assert len(session.calls) == 2 and all(c.usage is None for c in session.calls)


ROW_JUNK = st.one_of(
    st.just("{oops"),
    st.just("[1]"),
    st.just('{"prompt_id": "p-1", "input_tokens": "many"}'),
    st.just('{"prompt_id": "p-1", "input_tokens": -1, "cached_tokens": 0, "output_tokens": 1}'),
    st.just('{"prompt_id": 7}'),
    st.just(json.dumps(_row("p-1", FIRST[0], 9) | {"timestamp": "yesterday"})),
    st.just(json.dumps(_row("p-9", FIRST[0], 9))),
    st.text(max_size=20),
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_usage_rows_load_or_fail_in_one_line(tmp_path_factory, data, loads_or_fails_cleanly):
    lines = [json.dumps(r) for r in rows()]
    for _ in range(data.draw(st.integers(1, 3))):
        lines[data.draw(st.integers(0, len(lines) - 1))] = data.draw(ROW_JUNK)
    path = with_calls(tmp_path_factory.mktemp("grok"))
    (path.parent / "usage.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def load(p: Path, errors: str):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheVizWarning)
            return cacheviz.load(p, format="grok", errors=errors)

    loads_or_fails_cleanly(path, load)
