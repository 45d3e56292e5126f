"""Provider verdicts on Claude Code transcripts, compared with the log's own evidence.

The shapes are the documented ones (../shared/reference/verdicts.md §1-2): an assistant
line's ``message.diagnostics`` (``null`` = checked, or ``{"cache_miss_reason": {...}}``),
``compact_boundary`` records, ``parentUuid`` links; and the tools evidence Claude Code
logs: a ToolSearch result carrying ``tool_reference`` blocks (providers.md §1.2) and a
``deferred_tools_delta`` attachment. Each test builds a session, plants one pattern, and
checks the state, the comparison and the miss it gives.
"""

from __future__ import annotations

import json

import pytest

import cacheviz

OPUS = "claude-opus-5"


def _text(n: int) -> str:
    return " ".join(f"word{i % 97}" for i in range(n))


class Log:
    """A Claude Code session file built record by record, linked by ``parentUuid``."""

    def __init__(self) -> None:
        self.lines: list[dict] = []
        self.last: str | None = None
        self.count = 0
        self.calls = 0

    def _id(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count:04d}"

    def record(self, kind: str, ts: str, *, parent: str | None = "last", **fields) -> str:
        uuid = self._id(kind[0])
        line = {
            "type": kind,
            "uuid": uuid,
            "parentUuid": self.last if parent == "last" else parent,
            "sessionId": "s1",
            "timestamp": ts,
            "isSidechain": False,
            **fields,
        }
        self.lines.append(line)
        self.last = uuid
        return uuid

    def user(self, ts: str, content, **kw) -> str:
        return self.record("user", ts, message={"role": "user", "content": content}, **kw)

    def attachment(self, ts: str, attachment: dict, **kw) -> str:
        return self.record("attachment", ts, attachment=attachment, **kw)

    def call(
        self,
        ts: str,
        *,
        total: int,
        read: int,
        write: int | None = None,
        long: bool = True,
        diagnostics=...,
        content=None,
        **kw,
    ) -> str:
        write = total - read - 2 if write is None else write
        usage = {
            "input_tokens": total - read - write,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0 if long else write,
                "ephemeral_1h_input_tokens": write if long else 0,
            },
            "output_tokens": 20,
        }
        message = {
            "id": f"msg_{self.calls}",
            "role": "assistant",
            "model": kw.pop("model", OPUS),
            "content": content or [{"type": "text", "text": "done " + _text(30)}],
            "usage": usage,
        }
        if diagnostics is not ...:
            message["diagnostics"] = diagnostics
        self.calls += 1
        return self.record("assistant", ts, message=message, **kw)

    def write(self, tmp_path) -> cacheviz.Analysis:
        path = tmp_path / "11111111-2222-3333-4444-555555555555.jsonl"
        path.write_text("\n".join(json.dumps(line) for line in self.lines) + "\n")
        return cacheviz.load(path, format="claude-code").analyze()


def _miss(reason: str, missed: int | None = None) -> dict:
    found: dict = {"type": reason}
    if missed is not None:
        found["cache_missed_input_tokens"] = missed
    return {"cache_miss_reason": found}


def _steady(log: Log, n: int, *, start: int = 0, size: int = 20_000, step: int = 700) -> int:
    """``n`` calls a minute apart, each reading all the previous one left (12k head warm)."""
    total = size
    for k in range(start, start + n):
        ts = f"2026-08-05T10:{k:02d}:00Z"
        log.user(ts, f"step {k} " + _text(300))
        read = 12_000 if k == 0 else total - step
        log.call(ts.replace(":00Z", ":05Z"), total=total, read=read, diagnostics=None)
        total += step
    return total


def test_null_diagnostics_is_checked_and_an_absent_field_not_requested(tmp_path):
    log = Log()
    log.user("2026-08-05T10:00:00Z", "hi " + _text(300))
    log.call("2026-08-05T10:00:05Z", total=20_000, read=12_000, diagnostics=None)
    log.user("2026-08-05T10:01:00Z", "more " + _text(300))
    log.call("2026-08-05T10:01:05Z", total=20_700, read=19_998)  # no diagnostics key
    log.user("2026-08-05T10:02:00Z", "again " + _text(300))
    log.call(
        "2026-08-05T10:02:05Z", total=21_400, read=20_698, diagnostics={"cache_miss_reason": None}
    )
    analysis = log.write(tmp_path)
    assert analysis.calls["provider_verdict"].to_list() == ["checked", None, "checked"]
    counts = analysis.summary()["provider_verdicts"]
    assert counts["states"] == {"checked": 2, "not_requested": 1}
    assert counts["populated"] == counts["compared"] == 0
    assert counts["agree_rate"] is None


def test_tools_changed_after_a_tool_search_loaded_a_deferred_tool(tmp_path):
    log = Log()
    total = _steady(log, 3)
    search = {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "x"}}
    log.user("2026-08-05T10:03:00Z", "deploy it " + _text(300))
    log.call("2026-08-05T10:03:05Z", total=total, read=total - 700, content=[search])
    found = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "tool_reference", "tool_name": "mcp__deploy__run"}],
    }
    log.user("2026-08-05T10:03:20Z", [found])
    # the tool loaded into `tools`: the provider reads nothing and says why
    log.call(
        "2026-08-05T10:03:30Z",
        total=total + 900,
        read=0,
        diagnostics=_miss("tools_changed", total - 12_000),
    )
    analysis = log.write(tmp_path)
    calls = analysis.calls
    assert calls["provider_verdict"][4] == "tools_changed"
    assert calls["verdict_agrees"][4] is True
    assert "tool_reference mcp__deploy__run" in calls["verdict_detail"][4]
    miss = analysis.misses.row(0, named=True)
    assert miss["call"] == 4 and miss["cause"] == "tools_changed"
    assert miss["own_cause"] != "tools_changed"  # cacheviz's own reading, kept beside it
    assert analysis.summary()["provider_verdicts"]["agree_rate"] == 1.0


def test_a_deferred_tools_delta_explains_a_head_change(tmp_path):
    log = Log()
    total = _steady(log, 3)
    log.user("2026-08-05T10:03:00Z", "go on " + _text(300))
    log.attachment(
        "2026-08-05T10:03:00Z",
        {"type": "deferred_tools_delta", "addedNames": [], "removedNames": ["CronCreate"]},
    )
    log.call(
        "2026-08-05T10:03:05Z", total=total, read=0, diagnostics=_miss("system_changed", 9_000)
    )
    analysis = log.write(tmp_path)
    calls = analysis.calls
    assert calls["verdict_agrees"][3] is True
    assert "deferred_tools_delta -1 (CronCreate)" in calls["verdict_detail"][3]


def test_a_partial_read_places_the_change_after_the_static_head(tmp_path):
    # the provider reads the 12k static head only, one minute later: something after it
    # changed; messages_changed lies there, tools_changed does not (the head was read)
    for reason, agrees in (("messages_changed", True), ("tools_changed", False)):
        log = Log()
        total = _steady(log, 3)
        log.user("2026-08-05T10:03:00Z", "and " + _text(300))
        log.call("2026-08-05T10:03:05Z", total=total, read=12_000, diagnostics=_miss(reason, 8_000))
        (tmp_path / reason).mkdir()
        analysis = log.write(tmp_path / reason)
        assert analysis.calls["verdict_agrees"][3] is agrees, reason
        # a rebuilt request: the bytes prove nothing, the provider's reason takes the cause
        assert analysis.misses["cause"].to_list() == [reason]


@pytest.mark.parametrize(
    ("minutes", "read", "agrees"),
    [
        (90, 0, True),  # beyond the 1-hour TTL its writes show: expired
        (1, 13_400, True),  # within it, but the read stops short of what call 2 left: evicted
        (1, None, False),  # within it, and the read reached call 2's entry
    ],
)
def test_previous_message_not_found_against_the_idle_time(tmp_path, minutes, read, agrees):
    log = Log()
    total = _steady(log, 3)
    at = 2 + minutes
    ts = f"2026-08-05T{10 + at // 60:02d}:{at % 60:02d}:00Z"
    log.user(ts, "later " + _text(300))
    got = total - 700 if read is None else read
    log.call(
        ts.replace(":00Z", ":05Z"),
        total=total,
        read=got,
        diagnostics=_miss("previous_message_not_found"),
    )
    analysis = log.write(tmp_path)
    calls = analysis.calls
    assert calls["verdict_agrees"][3] is agrees
    assert calls["verdict_detail"][3]


def test_an_interleaved_writer_is_compared_with_the_call_it_follows(tmp_path):
    # two Claude Code processes append to one file: the second one's request follows a
    # response of two hours before (by its parentUuid), not the one logged just before it
    log = Log()
    total = _steady(log, 2)
    old_response = log.last
    log.user("2026-08-05T12:10:00Z", "other process " + _text(300))
    log.call("2026-08-05T12:10:05Z", total=total, read=total - 700, diagnostics=None)
    log.user("2026-08-05T12:10:20Z", "resumed " + _text(300), parent=old_response)
    log.call(
        "2026-08-05T12:10:30Z",
        total=total + 300,
        read=0,
        diagnostics=_miss("previous_message_not_found"),
    )
    analysis = log.write(tmp_path)
    calls = analysis.calls
    assert calls["verdict_agrees"][3] is True
    assert "since call 1" in calls["verdict_detail"][3]
    miss = analysis.misses.filter(analysis.misses["call"] == 3).row(0, named=True)
    assert miss["cause"] == "ttl_expired" and "since call 1" in miss["detail"]


def test_logged_history_edits_agree_with_messages_changed(tmp_path):
    log = Log()
    total = _steady(log, 3)
    log.user("2026-08-05T10:03:00Z", "next " + _text(300))
    log.call(
        "2026-08-05T10:03:05Z",
        total=total,
        read=12_000,
        diagnostics=_miss("messages_changed", 8_000),
        input_transformations=[
            {"type": "thinking_dropped", "path": "messages.3.content.0", "reason": "x"}
        ],
    )
    # Claude Code writes input_transformations on the message; keep the record level too
    line = log.lines[-1]
    line["message"]["input_transformations"] = line.pop("input_transformations")
    analysis = log.write(tmp_path)
    assert analysis.calls["verdict_agrees"][3] is True
    assert "thinking_dropped (x) ×1" in analysis.calls["verdict_detail"][3]


def test_the_cli_names_every_disagreement(tmp_path, capsys):
    from cacheviz import cli

    log = Log()
    total = _steady(log, 3)
    log.user("2026-08-05T10:03:00Z", "and " + _text(300))
    log.call(
        "2026-08-05T10:03:05Z", total=total, read=12_000, diagnostics=_miss("tools_changed", 8_000)
    )
    log.write(tmp_path)
    path = tmp_path / "11111111-2222-3333-4444-555555555555.jsonl"
    assert cli.main(["summary", str(path), "--format", "claude-code"]) == 0
    out = capsys.readouterr().out
    assert "⚑ provider: tools_changed (cacheviz disagrees: the provider read 12,000" in out
    assert "provider verdicts: cacheviz agrees on 0 of the 1 compared (0%)" in out
    assert cli.main(["summary", str(path), "--format", "claude-code", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["provider_verdicts"]["compared"] == 1
    assert doc["calls"][3]["verdict_detail"].startswith("the provider read 12,000")


def test_a_partial_read_names_only_the_layer_it_proves(tmp_path):
    # no verdict: the static head read, one minute later: "after token 12,000", unknown
    log = Log()
    total = _steady(log, 3)
    log.user("2026-08-05T10:03:00Z", "and " + _text(300))
    log.call("2026-08-05T10:03:05Z", total=total, read=12_000)
    analysis = log.write(tmp_path)
    miss = analysis.misses.row(0, named=True)
    assert miss["cause"] == "unknown"
    assert "the change lies after token 12,000" in miss["detail"]
    assert "nothing in the log says which block" in miss["detail"]


def test_a_partial_read_after_a_deferred_tools_delta(tmp_path):
    log = Log()
    total = _steady(log, 3)
    log.user("2026-08-05T10:03:00Z", "and " + _text(300))
    log.attachment(
        "2026-08-05T10:03:00Z",
        {"type": "deferred_tools_delta", "addedNames": ["mcp__a__b", "mcp__a__c"]},
    )
    log.call("2026-08-05T10:03:05Z", total=total, read=12_000)
    analysis = log.write(tmp_path)
    miss = analysis.misses.row(0, named=True)
    assert miss["cause"] == miss["own_cause"] == "deferred_tools_changed"
    assert "deferred_tools_delta +2 (mcp__a__b, mcp__a__c)" in miss["detail"]


def test_an_eviction_the_provider_confirms_is_provider_side(tmp_path):
    # previous_message_not_found one minute later, the static head read only: the entry
    # the previous request left is gone (evicted), the provider says as much
    log = Log()
    total = _steady(log, 3)
    log.user("2026-08-05T10:03:00Z", "and " + _text(300))
    log.call(
        "2026-08-05T10:03:05Z",
        total=total,
        read=12_000,
        diagnostics=_miss("previous_message_not_found"),
    )
    analysis = log.write(tmp_path)
    assert analysis.calls["verdict_agrees"][3] is True
    miss = analysis.misses.row(0, named=True)
    assert miss["cause"] == "provider_side" and miss["own_cause"] == "unknown"
    assert "previous_message_not_found (cacheviz agrees)" in miss["detail"]


def _tiered(log: Log, tiers: list[bool], gaps: list[int]) -> None:
    """Calls whose writes are 1-hour (True) or 5-minute (False), ``gaps`` minutes apart."""
    total, minute = 20_000, 0
    for k, (long, gap) in enumerate(zip(tiers, gaps, strict=True)):
        minute += gap
        ts = f"2026-08-05T{10 + minute // 60:02d}:{minute % 60:02d}:00Z"
        log.user(ts, f"step {k} " + _text(300))
        read = 12_000 if k == 0 else total - 700
        log.call(ts.replace(":00Z", ":05Z"), total=total, read=read, long=long, diagnostics=None)
        total += 700


def test_the_ttl_is_per_cache_entry_not_the_threads_minority(tmp_path):
    # 1-hour writes on every call but one 5-minute write: a 20-minute gap after a 1-hour
    # write is no miss, and the simulator reads the live 1-hour entry (no rewrite)
    log = Log()
    tiers = [True, True, False, True, True, True]
    _tiered(log, tiers, [0, 1, 1, 1, 20, 1])
    analysis = log.write(tmp_path)
    calls = analysis.calls
    assert calls["ttl_seconds"].to_list() == [3600, 3600, 300, 3600, 3600, 3600]
    assert analysis.misses.is_empty()
    sim = analysis.own_simulation.calls
    assert sim["cache_read_tokens"][4] == calls["reported_cache_read_tokens"][4]
    assert analysis.own_simulation.total_cost_usd == pytest.approx(analysis.billed_usd, rel=0.05)


def test_a_call_without_writes_leaves_its_threads_latest_tier(tmp_path):
    log = Log()
    log.user("2026-08-05T10:00:00Z", "hi " + _text(300))
    log.call("2026-08-05T10:00:05Z", total=20_000, read=19_998, write=0)  # writes nothing
    log.user("2026-08-05T10:01:00Z", "go " + _text(300))
    log.call("2026-08-05T10:01:05Z", total=20_700, read=19_998, long=False)
    log.user("2026-08-05T10:02:00Z", "on " + _text(300))
    log.call("2026-08-05T10:02:05Z", total=21_400, read=21_398, write=0)
    analysis = log.write(tmp_path)
    # before its thread's first write: that write's tier; after it: the latest tier
    assert analysis.calls["ttl_seconds"].to_list() == [300, 300, 300]


def test_switching_the_ttl_tier_is_a_named_cause(tmp_path):
    # 5-minute writes, then a 1-hour write 20 s later that reads nothing: not
    # provider_side but the tier switch (the other tier's entries were not read)
    log = Log()
    _tiered(log, [False, False, False], [0, 1, 1])
    total = 20_000 + 3 * 700
    log.user("2026-08-05T10:02:20Z", "now " + _text(300))
    log.call("2026-08-05T10:02:25Z", total=total, read=0, long=True, diagnostics=None)
    analysis = log.write(tmp_path)
    miss = analysis.misses.row(0, named=True)
    assert miss["call"] == 3 and miss["cause"] == "ttl_tier_switch"
    assert "left 5-minute entries; this call writes 1-hour ones" in miss["detail"]
    # the simulator follows: the unlogged prefix read nothing, a rewrite
    sim = analysis.own_simulation.calls
    assert sim["cache_read_tokens"][3] == 0
    assert analysis.own_simulation.total_cost_usd == pytest.approx(analysis.billed_usd, rel=0.05)


def test_a_retried_request_is_sent_at_its_api_error(tmp_path):
    # Claude Code logs an api_error before retrying: the request left after it, so the
    # idle gap (and the TTL expiry it causes) belongs to the retried call
    log = Log()
    _tiered(log, [False, False], [0, 1])
    log.user("2026-08-05T10:01:30Z", "tool output " + _text(300))
    log.record("system", "2026-08-05T12:00:00Z", subtype="api_error", error={}, retryAttempt=1)
    log.call("2026-08-05T12:00:05Z", total=21_400, read=12_000, long=False, diagnostics=None)
    analysis = log.write(tmp_path)
    assert analysis.calls["ts"][2].hour == 12
    miss = analysis.misses.row(0, named=True)
    assert miss["call"] == 2 and miss["cause"] == "ttl_expired"


def test_a_model_switch_loses_no_more_than_the_evidence_shows(tmp_path):
    # the thread switches to another model with a smaller request (a /compact or a
    # trimmed history); the provider reads the static head from the new model's own
    # cache, warm from other sessions: the loss is the request minus that read, not the
    # whole previous request
    log = Log()
    total = _steady(log, 3, size=60_000)
    log.user("2026-08-05T10:03:00Z", "switch " + _text(300))
    log.call(
        "2026-08-05T10:03:05Z",
        total=40_000,
        read=12_000,
        model="claude-sonnet-5",
        diagnostics=_miss("model_changed", 40_000),
    )
    analysis = log.write(tmp_path)
    drift = analysis.drifts.row(0, named=True)
    assert drift["cause"] == "model_switch" and drift["call"] == 3
    assert total - 700 > 40_000  # the previous request was larger than this one
    assert drift["tokens_lost"] == 40_000 - 12_000
    assert "the provider read 12,000 tokens from the new model's cache" in drift["detail"]
    assert analysis.calls["verdict_agrees"][3] is True


def _disagreeing(folder) -> None:
    """A session whose one verdict cacheviz disagrees with (the head read: not the tools)."""
    log = Log()
    total = _steady(log, 3)
    log.user("2026-08-05T10:03:00Z", "and " + _text(300))
    log.call(
        "2026-08-05T10:03:05Z", total=total, read=12_000, diagnostics=_miss("tools_changed", 8_000)
    )
    folder.mkdir(parents=True, exist_ok=True)
    log.write(folder)


def test_scan_gives_the_agreement_per_session(tmp_path, capsys):
    from cacheviz import cli
    from cacheviz.ui._scan import scan_data, scan_html

    _disagreeing(tmp_path / "p" / "a")
    agreeing = Log()
    agreeing.calls = 100  # other response ids: not a copy of the first session
    _steady(agreeing, 3)
    (tmp_path / "p" / "b").mkdir()
    agreeing.write(tmp_path / "p" / "b")  # only 'checked' verdicts: none compared
    result = cacheviz.scan([tmp_path / "p"], cache=False)
    rows = {r["session"].split("/")[-2]: r for r in result.sessions.iter_rows(named=True)}
    assert (rows["a"]["verdicts_compared"], rows["a"]["verdicts_agree"]) == (1, 0)
    assert rows["a"]["verdict_agree_rate"] == 0.0
    assert (rows["b"]["verdicts_compared"], rows["b"]["verdict_agree_rate"]) == (0, None)
    assert result.totals()["verdicts_compared"] == 1
    # the scan's surfaces: JSON, the table, Parquet, the HTML view
    assert cli.main(["scan", str(tmp_path / "p"), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {s["verdicts_compared"] for s in doc["sessions"]} == {0, 1}
    assert cli.main(["scan", str(tmp_path / "p"), "--by", "session", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "verdicts agree" in out and " 0/1 " in out
    result.write_parquet(tmp_path / "pq")
    import polars as pl

    sessions = pl.read_parquet(tmp_path / "pq" / "sessions.parquet")
    assert sorted(sessions["verdicts_compared"].to_list()) == [0, 1]
    assert "agree rate" in scan_html(scan_data(result))


def test_a_session_without_verdicts_has_no_agreement_figures(tmp_path):
    log = Log()
    _steady(log, 2)
    for line in log.lines:  # no diagnostics key: never asked
        line.get("message", {}).pop("diagnostics", None)
    log.write(tmp_path)
    result = cacheviz.scan([tmp_path], cache=False)
    row = result.sessions.row(0, named=True)
    assert row["verdicts_compared"] is None and row["verdict_agree_rate"] is None


def test_the_report_lists_each_disagreement_with_both_readings(tmp_path):
    from cacheviz.ui._header import meta

    _disagreeing(tmp_path)
    path = tmp_path / "11111111-2222-3333-4444-555555555555.jsonl"
    analysis = cacheviz.load(path, format="claude-code").analyze()
    verdicts = meta(analysis, ttl_seconds=None, simulation=None)["verdicts"]
    assert (verdicts["compared"], verdicts["agree"]) == (1, 0)
    (row,) = verdicts["disagreements"]
    assert row["call"] == 3 and row["provider"] == "tools_changed"
    assert row["provider_missed_tokens"] == 8_000
    assert row["cacheviz"] == analysis.calls["own_cause"][3]  # cacheviz's own cause
    assert row["detail"].startswith("the provider read 12,000")


def _two_processes(log: Log) -> None:
    """Two Claude Code processes appending to one file, told apart by their links only.

    Process A runs calls 0-1, then goes on (calls 2, 4, 6); process B resumed from A's
    call 1 and runs beside it (calls 3, 5, 7), each of its requests continuing its own
    previous response; their records interleave in the file.
    """
    total = _steady(log, 2)
    tips = {"A": log.last, "B": log.last}
    sizes = {"A": total, "B": total}
    for k in range(3):
        for who, minute in (("A", 2 + 2 * k), ("B", 3 + 2 * k)):
            ts = f"2026-08-05T10:{minute:02d}:00Z"
            log.user(ts, f"{who} step {k} " + _text(300), parent=tips[who])
            size = sizes[who]
            # each reads what its own previous call left (the other's does not serve it)
            log.call(ts.replace(":00Z", ":05Z"), total=size, read=size - 700, diagnostics=None)
            tips[who] = log.last
            sizes[who] = size + 700


def test_two_processes_in_one_file_are_two_conversations(tmp_path):
    log = Log()
    _two_processes(log)
    analysis = log.write(tmp_path)
    calls = analysis.calls
    threads = calls["thread"].to_list()
    a, b = threads[0], threads[3]
    assert a != b
    assert [t == a for t in threads] == [True, True, True, False, True, False, True, False]
    assert calls["parent_thread"][3] == a  # the fork hangs under the conversation it left
    # each conversation's calls continue its own previous one: no history drift between them
    assert analysis.drifts.height == 0
    assert calls["prev_call"].to_list()[4:] == [2, 3, 4, 5]
    # B's requests hold B's messages only (A's turns are not in them)
    session = analysis.session
    texts = [
        [session.contents[h].raw.decode() for h in call.hashes[call.message_start :]]
        for call in session.calls
    ]
    assert not any("A step" in t for t in texts[7])
    assert any("B step 2" in t for t in texts[7])
    assert not any("B step" in t for t in texts[6])
    assert analysis.misses.height == 0


def test_a_rewind_in_one_process_stays_one_conversation(tmp_path):
    # a request interrupted, then the conversation continued from the record before it:
    # the abandoned branch makes no call after, so it is one thread (as before), but the
    # requests after follow the links (the interrupted response is not in them)
    log = Log()
    total = _steady(log, 2)
    before = log.last
    log.user("2026-08-05T10:02:00Z", "go " + _text(300))
    fork_point = log.last
    log.call(
        "2026-08-05T10:02:05Z",
        total=total,
        read=total - 700,
        diagnostics=None,
        content=[{"type": "text", "text": "abandoned " + _text(40)}],
    )
    log.user("2026-08-05T10:03:00Z", "[Request interrupted by user]", parent=fork_point)
    log.call("2026-08-05T10:03:05Z", total=total + 500, read=total - 700, diagnostics=None)
    del before
    analysis = log.write(tmp_path)
    assert analysis.calls["thread"].n_unique() == 1
    last = analysis.session.calls[-1]
    texts = [analysis.session.contents[h].raw.decode() for h in last.hashes[last.message_start :]]
    assert not any("abandoned" in t for t in texts)


def test_summary_and_simulate_give_a_call_the_same_verdict(tmp_path, capsys):
    # a read stopping at the static head one minute later: summary's miss (unknown,
    # "after token N"); the replay versions the unlogged prefix from that very read, so
    # its match is circular: simulate shows the miss and leaves the call out of its score
    from cacheviz import cli

    log = Log()
    total = _steady(log, 3)
    log.user("2026-08-05T10:03:00Z", "and " + _text(300))
    log.call("2026-08-05T10:03:05Z", total=total, read=12_000)
    analysis = log.write(tmp_path)
    assert analysis.calls["miss_cause"][3] == "unknown"
    sim = analysis.simulate("anthropic")
    frame = sim.calls
    assert frame["sized_from_usage"].to_list() == [True, False, False, True]
    assert frame["verdict"][3] == "match"  # the replay was sized from the read itself
    compared = [
        v for v, s in zip(frame["verdict"], frame["sized_from_usage"], strict=True) if not s
    ]
    assert sim.score == sum(v == "match" for v in compared) / len(compared)
    path = tmp_path / "11111111-2222-3333-4444-555555555555.jsonl"
    assert cli.main(["simulate", str(path), "--format", "claude-code"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("3 "))
    assert row.rstrip().endswith("miss: unknown (sized from usage)")
    assert "of the 2 calls compared (2 left out: their simulated unlogged prefix was sized" in out
    assert cli.main(["simulate", str(path), "--format", "claude-code", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["calls"][3]["miss_cause"] == "unknown" and doc["calls"][3]["sized_from_usage"]
    assert cli.main(["summary", str(path), "--format", "claude-code", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["calls"][3]["miss"]["cause"] == doc["calls"][3]["miss_cause"]


@pytest.mark.parametrize(("after", "read_all"), [(60, True), (400, False)])
def test_an_entry_lives_from_the_latest_time_its_request_was_served(tmp_path, after, read_all):
    # a request whose answer came 8 minutes after its last record (a retry, a machine
    # asleep): the provider used its entries by then, not at the record's time, so a
    # call a minute after the answer still reads them (5-minute TTL); 400 s after, not
    log = Log()
    total = 20_000
    log.user("2026-08-05T10:00:00Z", "start " + _text(300))
    log.call("2026-08-05T10:00:05Z", total=total, read=12_000, long=False, diagnostics=None)
    log.user("2026-08-05T10:01:00Z", "run it " + _text(300))
    log.call("2026-08-05T10:09:00Z", total=total + 700, read=total - 2, long=False)
    at = 9 * 60 + after
    ts = f"2026-08-05T10:{at // 60:02d}:{at % 60:02d}Z"
    log.user(ts, "next " + _text(300))
    answer = f"2026-08-05T10:{(at + 3) // 60:02d}:{(at + 3) % 60:02d}Z"
    read = total + 700 - 2 if read_all else 12_000
    log.call(answer, total=total + 1_400, read=read, long=False)
    analysis = log.write(tmp_path)
    simulated = analysis.own_simulation.calls["cache_read_tokens"][2]
    assert (simulated >= total) is read_all
