"""cacheviz scan: walking folders, exact accounting across files, rollups, cache, engines."""

import json
import os
import shutil
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor

import polars as pl
import pytest

import cacheviz
from cacheviz.cli import main
from cacheviz.errors import CacheVizWarning
from cacheviz.scanning import _pool as pool_module

SONNET = "claude-sonnet-4-5-20250929"
# Anthropic's published Claude Sonnet 4.5 prices, USD per million tokens (providers.md §1):
# input 3, 5-minute cache write 3.75 (1.25x), 1-hour cache write 6 (2x), cache read 0.30,
# output 15.
SONNET_MTOK = {"input": 3.0, "write_5m": 3.75, "write_1h": 6.0, "read": 0.30, "output": 15.0}


def _usage(uncached, read, write_5m, out, write_1h=0):
    return {
        "input_tokens": uncached,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write_5m + write_1h,
        "cache_creation": {
            "ephemeral_5m_input_tokens": write_5m,
            "ephemeral_1h_input_tokens": write_1h,
        },
        "output_tokens": out,
    }


def _user(uuid, text, ts, session="s1", sidechain=False):
    return {
        "type": "user",
        "uuid": uuid,
        "sessionId": session,
        "timestamp": ts,
        "isSidechain": sidechain,
        "message": {"role": "user", "content": text},
    }


def _assistant(uuid, mid, text, usage, ts, session="s1", model=SONNET):
    return {
        "type": "assistant",
        "uuid": uuid,
        "sessionId": session,
        "timestamp": ts,
        "isSidechain": False,
        "requestId": f"req_{mid}",
        "message": {
            "id": mid,
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "usage": usage,
        },
    }


def _write(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _parent_records():
    return [
        _user("u1", "hello", "2026-03-01T10:00:00Z"),
        # one response streamed over three lines: output grows, input/cache repeat
        _assistant("a1", "msg_1", "Hi", _usage(5, 0, 12000, 2), "2026-03-01T10:00:02Z"),
        _assistant("a1b", "msg_1", "Hi there", _usage(5, 0, 12000, 30), "2026-03-01T10:00:03Z"),
        _assistant("a1c", "msg_1", "Hi there!", _usage(5, 0, 12000, 77), "2026-03-01T10:00:04Z"),
        _user("u2", "explain", "2026-03-01T10:01:00Z"),
        _assistant("a2", "msg_2", "Sure", _usage(7, 12000, 300, 120), "2026-03-01T10:01:05Z"),
    ]


def _forked_records():
    """A sub-agent forked from the parent: replays its conversation, then goes on."""
    replay = [dict(r, sessionId="s1") for r in _parent_records()]
    return [
        *replay,
        _user("f1", "now you", "2026-03-01T10:02:00Z"),
        _assistant("f2", "msg_f", "Done", _usage(9, 12300, 50, 40), "2026-03-01T10:02:04Z"),
    ]


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


@pytest.fixture
def claude_home(tmp_path):
    root = tmp_path / "claude" / "projects"
    _write(root / "-work-app" / "s1.jsonl", _parent_records())
    _write(root / "-work-app" / "s1" / "subagents" / "agent-f.jsonl", _forked_records())
    return root


def test_a_forked_sub_agent_does_not_count_its_parents_responses_twice(claude_home, cache_dir):
    result = cacheviz.scan([claude_home], cache=cache_dir)
    # the parent made msg_1 and msg_2; the fork replayed both and made msg_f
    assert sorted(result.calls["response_id"].to_list()) == ["msg_1", "msg_2", "msg_f"]
    assert result.duplicates_dropped == 2
    assert result.files["status"].to_list() == ["ok"]  # the sub-agent is read with its session
    kept = result.calls.filter(pl.col("response_id") == "msg_1")
    assert kept["thread"].to_list() == ["main"]  # the parent's copy is kept
    assert kept["parent_thread"].to_list() == [None]
    own = result.calls.filter(pl.col("response_id") == "msg_f")
    assert own["parent_thread"].to_list() == ["main"]


def test_a_resumed_session_in_another_file_is_deduplicated_too(claude_home, cache_dir):
    _write(claude_home / "-work-app" / "s2.jsonl", _parent_records())
    result = cacheviz.scan([claude_home], cache=cache_dir)
    assert result.calls.height == 3
    assert result.duplicates_dropped == 4
    assert result.totals()["calls"] == 3


def test_output_tokens_are_the_last_streamed_record(claude_home, cache_dir):
    result = cacheviz.scan([claude_home], cache=cache_dir)
    first = result.calls.filter(pl.col("response_id") == "msg_1").row(0, named=True)
    assert first["reported_output_tokens"] == 77
    assert first["reported_input_tokens"] == 5 + 0 + 12000
    assert result.totals()["output_tokens"] == 77 + 120 + 40


def test_a_conflicting_repeat_of_a_message_id_keeps_the_first_and_names_both_lines(tmp_path):
    records = _parent_records()
    records.append(_assistant("a9", "msg_2", "Sure", _usage(999, 0, 0, 5), "2026-03-01T10:01:09Z"))
    path = _write(tmp_path / "s.jsonl", records)
    with pytest.warns(
        CacheVizWarning, match=r"s\.jsonl:7: repeats line 6.s message with other usage; kept line 6"
    ):
        session = cacheviz.load(path)
    second = [c for c in session.calls if c.meta.get("response_id") == "msg_2"]
    assert len(second) == 1
    assert second[0].usage.input_tokens == 7 + 12000 + 300
    assert second[0].meta["request_id"] == "req_msg_2"


def test_5m_and_1h_cache_writes_are_priced_apart(tmp_path, cache_dir):
    records = [
        _user("u1", "hello", "2026-03-01T10:00:00Z"),
        _assistant("a1", "msg_1", "Hi", _usage(10, 0, 1000, 100), "2026-03-01T10:00:02Z"),
        _user("u2", "more", "2026-03-01T10:01:00Z"),
        _assistant(
            "a2", "msg_2", "Ok", _usage(10, 0, 0, 100, write_1h=1000), "2026-03-01T10:01:02Z"
        ),
    ]
    _write(tmp_path / "p" / "s.jsonl", records)
    result = cacheviz.scan([tmp_path / "p"], cache=cache_dir)
    billed = dict(zip(result.calls["response_id"], result.calls["billed_usd"], strict=True))
    mtok = SONNET_MTOK
    base = (10 * mtok["input"] + 100 * mtok["output"]) / 1e6
    assert billed["msg_1"] == pytest.approx(base + 1000 * mtok["write_5m"] / 1e6)
    assert billed["msg_2"] == pytest.approx(base + 1000 * mtok["write_1h"] / 1e6)
    assert billed["msg_2"] - billed["msg_1"] == pytest.approx(1000 * (6.0 - 3.75) / 1e6)


def _day_records():
    return [
        _user("u1", "late", "2026-03-01T23:30:00Z"),
        _assistant("a1", "msg_1", "x", _usage(1, 0, 100, 1), "2026-03-01T23:30:02Z"),
        _user("u2", "later", "2026-03-02T00:30:00Z"),
        _assistant("a2", "msg_2", "y", _usage(1, 100, 10, 1), "2026-03-02T00:30:02Z"),
    ]


@pytest.mark.parametrize(
    ("tz", "days"),
    [
        ("UTC", {"2026-03-01": 1, "2026-03-02": 1}),  # either side of midnight UTC
        ("America/New_York", {"2026-03-01": 2}),  # 18:30 and 19:30 the same evening
        ("Asia/Tokyo", {"2026-03-02": 2}),  # 08:30 and 09:30 the next morning
    ],
)
def test_rollup_by_day_across_midnight_in_a_time_zone(tmp_path, cache_dir, tz, days):
    _write(tmp_path / "p" / "s.jsonl", _day_records())
    result = cacheviz.scan([tmp_path / "p"], cache=cache_dir)
    table = result.rollup("day", tz=tz)
    assert dict(zip(table["day"], table["calls"], strict=True)) == days
    assert table["cache_write_tokens"].sum() == 110


def test_cli_rollup_json_defaults_to_utc_and_takes_tz_since_until(tmp_path, capsys, cache_dir):
    _write(tmp_path / "p" / "s.jsonl", _day_records())
    os.environ["CACHEVIZ_CACHE_DIR"] = str(cache_dir)
    try:
        assert main(["scan", str(tmp_path / "p"), "--json"]) == 0
        utc = json.loads(capsys.readouterr().out)
        assert [r["day"] for r in utc["rollup"]] == ["2026-03-01", "2026-03-02"]
        argv = ["scan", str(tmp_path / "p"), "--json", "--tz", "Asia/Tokyo", "--since", "20260302"]
        assert main(argv) == 0
        tokyo = json.loads(capsys.readouterr().out)
        assert [(r["day"], r["calls"]) for r in tokyo["rollup"]] == [("2026-03-02", 2)]
        assert main(["scan", str(tmp_path / "p"), "--json", "--until", "2026-03-01"]) == 0
        first_day = json.loads(capsys.readouterr().out)  # UTC: the call before midnight
        assert [(r["day"], r["calls"]) for r in first_day["rollup"]] == [("2026-03-01", 1)]
        assert first_day["totals"]["calls"] == 1  # totals cover the period asked for
        assert first_day["totals"]["cache_write_tokens"] == 100
        assert [s["calls"] for s in first_day["sessions"]] == [1]
        assert main(["scan", str(tmp_path / "p"), "--tz", "Mars/Olympus"]) == 2
        assert "--tz 'Mars/Olympus'" in capsys.readouterr().err
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]


def test_json_follows_the_contract(claude_home, capsys, cache_dir):
    os.environ["CACHEVIZ_CACHE_DIR"] = str(cache_dir)
    try:
        assert main(["scan", str(claude_home), "--json"]) == 0
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]
    doc = json.loads(capsys.readouterr().out)
    assert {"path", "format", "calls", "billed_usd", "ideal_usd", "drifts"} <= set(
        doc["sessions"][0]
    )
    totals = doc["totals"]
    for key in ("files", "sessions", "calls", "input_tokens", "cache_read_tokens"):
        assert key in totals
    assert {"cache_write_tokens", "output_tokens", "billed_usd"} <= set(totals)
    # inclusive input: uncached + read + write of msg_1, msg_2, msg_f
    assert totals["input_tokens"] == (5 + 12000) + (7 + 12000 + 300) + (9 + 12300 + 50)
    assert doc["duplicates_dropped"] == 2
    assert isinstance(doc["busters"], list)


def test_reasoning_tokens_are_summed_where_reported_and_shown_apart(
    claude_home, tmp_path, capsys, cache_dir
):
    from tests.formats.test_qwen_code import _chat

    os.environ["CACHEVIZ_CACHE_DIR"] = str(cache_dir)
    try:
        assert main(["scan", str(claude_home), "--json"]) == 0
        claude = json.loads(capsys.readouterr().out)
        _write(tmp_path / "qwen" / "s1.jsonl", _chat())  # one answer reports 12 thought tokens
        assert main(["scan", str(tmp_path / "qwen"), "--json"]) == 0
        qwen = json.loads(capsys.readouterr().out)
        assert main(["scan", str(tmp_path / "qwen")]) == 0
        table = capsys.readouterr().out
        assert main(["scan", str(claude_home)]) == 0
        plain = capsys.readouterr().out
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]
    assert claude["totals"]["reasoning_tokens"] is None  # not reported: null, not 0
    assert qwen["totals"]["reasoning_tokens"] == 12
    assert sum(r["reasoning_tokens"] or 0 for r in qwen["rollup"]) == 12
    header = next(line for line in table.splitlines() if line.startswith("day"))
    assert header.split().index("reasoning") == header.split().index("output") + 1
    assert "reasoning" not in plain


def test_parquet_holds_one_row_per_deduplicated_call(claude_home, tmp_path, cache_dir):
    os.environ["CACHEVIZ_CACHE_DIR"] = str(cache_dir)
    try:
        assert main(["scan", str(claude_home), "--parquet", str(tmp_path / "pq")]) == 0
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]
    calls = pl.read_parquet(tmp_path / "pq" / "calls.parquet")
    assert calls.height == 3
    assert calls["response_id"].n_unique() == 3
    for name in ("sessions", "drifts", "misses", "busters"):
        assert (tmp_path / "pq" / f"{name}.parquet").is_file()


def test_unknown_files_are_skipped_and_failing_files_listed(tmp_path, capsys, cache_dir):
    folder = tmp_path / "mixed"
    _write(folder / "good.jsonl", _parent_records())
    (folder / "notes.txt").write_text("shopping list\n")
    (folder / "broken.jsonl").write_text(
        json.dumps(_user("u1", "hi", "2026-03-01T10:00:00Z")) + "\n{not json\n"
    )
    result = cacheviz.scan([folder], cache=cache_dir)
    status = dict(zip(result.files["path"], result.files["status"], strict=True))
    assert status == {
        str(folder / "broken.jsonl"): "failed",
        str(folder / "good.jsonl"): "ok",
        str(folder / "notes.txt"): "unknown",
    }
    (error,) = result.failed["error"].to_list()
    assert error.startswith(f"{folder / 'broken.jsonl'}:2: ") and "\n" not in error
    os.environ["CACHEVIZ_CACHE_DIR"] = str(cache_dir)
    try:
        assert main(["scan", str(folder)]) == 0
        out = capsys.readouterr()
        assert "1 unknown files skipped, 1 failed" in out.out
        assert f"cacheviz: failed: {folder / 'broken.jsonl'}:2:" in out.err
        assert main(["scan", str(folder), "--strict"]) == 2
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]


def test_a_file_without_a_call_is_empty_not_failed(tmp_path, capsys, cache_dir):
    """A session opened and left (Claude Code writes them) is counted apart, not failed.

    A file with a bad line and no call is still a failure: something could not be read.
    """
    folder = tmp_path / "left"
    _write(folder / "good.jsonl", _parent_records())
    _write(folder / "opened.jsonl", [_user("u1", "hi", "2026-03-01T10:00:00Z", session="s9")])
    (folder / "broken.jsonl").write_text(
        json.dumps(_user("u1", "hi", "2026-03-01T10:00:00Z", session="s8")) + "\n{not json\n"
    )
    for jobs in (1, 2):
        result = cacheviz.scan([folder], cache=False, jobs=jobs)
        rows = {r["path"]: r for r in result.files.iter_rows(named=True)}
        assert rows[str(folder / "opened.jsonl")]["status"] == "empty"
        assert rows[str(folder / "opened.jsonl")]["format"] == "claude-code"
        assert "no API call could be read" in rows[str(folder / "opened.jsonl")]["error"]
        assert rows[str(folder / "broken.jsonl")]["status"] == "failed"
        assert result.failed["path"].to_list() == [str(folder / "broken.jsonl")]
    os.environ["CACHEVIZ_CACHE_DIR"] = str(cache_dir)
    try:
        assert main(["scan", str(folder), "--json"]) == 0
        out = capsys.readouterr()
        totals = json.loads(out.out)["totals"]
        assert (totals["empty_files"], totals["failed_files"], totals["files"]) == (1, 1, 1)
        assert "opened.jsonl" not in out.err
        assert main(["scan", str(folder)]) == 0  # the kept answer
        out = capsys.readouterr()
        assert "0 unknown files skipped, 1 without a call, 1 failed" in out.out
        (folder / "broken.jsonl").unlink()
        assert main(["scan", str(folder), "--strict"]) == 0  # nothing failed
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]


def _counting(monkeypatch):
    seen = []
    original = pool_module.run_unit

    def run(unit, known=None, prices=None, rates=None, timeout=None, sizes="tokens"):
        seen.append(unit.path.name)
        return original(unit, known, prices, rates, timeout, sizes)

    monkeypatch.setattr(pool_module, "run_unit", run)
    return seen


def test_the_scan_cache_reanalyses_only_a_file_that_grew(tmp_path, cache_dir, monkeypatch):
    folder = tmp_path / "p"
    grows = _write(folder / "a.jsonl", _parent_records())
    _write(folder / "b.jsonl", _renamed(_day_records(), "b"))
    first = cacheviz.scan([folder], cache=cache_dir)
    assert first.calls.height == 4
    seen = _counting(monkeypatch)
    again = cacheviz.scan([folder], cache=cache_dir)
    assert seen == []  # nothing changed: everything from the cache
    assert again.calls.sort(["path", "call"]).equals(first.calls.sort(["path", "call"]))
    with grows.open("a") as handle:
        handle.write(json.dumps(_user("u3", "and?", "2026-03-01T10:05:00Z")) + "\n")
        handle.write(
            json.dumps(
                _assistant("a3", "msg_3", "And.", _usage(3, 12300, 20, 9), "2026-03-01T10:05:02Z")
            )
            + "\n"
        )
    grown = cacheviz.scan([folder], cache=cache_dir)
    assert seen == ["a.jsonl"]
    assert grown.calls.height == 5
    assert "msg_3" in grown.calls["response_id"].to_list()
    # the cache now holds both files' rows: the reused b.jsonl kept, a.jsonl replaced
    later = cacheviz.scan([folder], cache=cache_dir)
    assert seen == ["a.jsonl"]
    assert later.calls.sort(["path", "call"]).equals(grown.calls.sort(["path", "call"]))
    only_b = cacheviz.scan([folder / "b.jsonl"], cache=cache_dir)
    assert only_b.calls.height == 2


def test_a_touched_but_unchanged_file_is_not_analysed_again(tmp_path, cache_dir, monkeypatch):
    path = _write(tmp_path / "p" / "a.jsonl", _parent_records())
    first = cacheviz.scan([tmp_path / "p"], cache=cache_dir)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    seen = _counting(monkeypatch)
    again = cacheviz.scan([tmp_path / "p"], cache=cache_dir)
    assert seen == ["a.jsonl"]  # hashed: same content, rows reused
    assert again.calls.equals(first.calls)
    seen.clear()
    third = cacheviz.scan([tmp_path / "p"], cache=cache_dir)
    assert seen == []  # the new mtime was recorded
    assert third.calls.equals(first.calls)


def _renamed(records, tag):
    """The records of another session: its own session id and message ids."""
    return [
        dict(r, sessionId=tag, message=dict(r["message"], id=f"{r['message']['id']}_{tag}"))
        if r["type"] == "assistant"
        else dict(r, sessionId=tag)
        for r in records
    ]


def _projects(tmp_path, n=6):
    root = tmp_path / "projects"
    for i in range(n):
        _write(root / f"proj{i % 2}" / f"s{i}.jsonl", _renamed(_parent_records(), f"s{i}"))
    return root


def _sorted(frame):
    return frame.sort(["path", "call"])


@pytest.mark.slow
def test_the_process_pool_gives_the_same_rows_as_one_process(tmp_path, monkeypatch):
    root = _projects(tmp_path)
    local = cacheviz.scan([root], cache=False, jobs=1)
    monkeypatch.setattr(pool_module, "POOL_BYTES", 0)  # a pool even for this little work
    pooled = cacheviz.scan([root], cache=False, jobs=2)
    assert local.calls.height == 12
    assert _sorted(pooled.calls).equals(_sorted(local.calls))
    assert "POLARS_MAX_THREADS" not in os.environ  # set for the workers only


def test_any_executor_runs_the_per_file_work(tmp_path):
    root = _projects(tmp_path)
    local = cacheviz.scan([root], cache=False, jobs=1)
    with ThreadPoolExecutor(2) as pool:
        threaded = cacheviz.scan([root], cache=False, executor=pool)
    assert _sorted(threaded.calls).equals(_sorted(local.calls))


@pytest.mark.slow
def test_a_dask_local_cluster_gives_the_same_rows_as_a_local_run(tmp_path):
    distributed = pytest.importorskip("distributed")
    root = _projects(tmp_path)
    local = cacheviz.scan([root], cache=False, jobs=1)
    with (
        warnings.catch_warnings(),
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        warnings.simplefilter("ignore")
        remote = cacheviz.scan([root], cache=False, executor=client.get_executor())
    assert _sorted(remote.calls).equals(_sorted(local.calls))
    assert remote.duplicates_dropped == local.duplicates_dropped


def test_a_whale_usage_ledger_is_a_usage_only_session_with_hash_level_drifts(tmp_path, cache_dir):
    rows = [
        {
            "ts": 1772359200000 + i * 60000,
            "session": "w1",
            "model": "deepseek-chat",
            "prefix_fingerprint": fp,
            "prompt_tokens": 5000 + 100 * i,
            "completion_tokens": 50,
            "prompt_cache_hit_tokens": hit,
            "prompt_cache_miss_tokens": 5000 + 100 * i - hit,
            "cache_hit_ratio": hit / (5000 + 100 * i),
            "reasoning_replay_tokens": 0,
            "cost_usd": 0.001,
        }
        for i, (fp, hit) in enumerate([("aaa", 0), ("aaa", 4864), ("bbb", 0), ("bbb", 5120)])
    ]
    path = tmp_path / ".whale" / "usage.jsonl"
    _write(path, rows)
    session = cacheviz.load(path)
    assert session.format == "whale-usage"
    assert all(c.meta["usage_only"] for c in session.calls)
    assert [c.usage.cache_read_tokens for c in session.calls] == [0, 4864, 0, 5120]
    analysis = session.analyze()
    assert analysis.drifts["call"].to_list() == [2]  # the fingerprint changed at call 2
    result = cacheviz.scan([path.parent], cache=cache_dir)
    assert result.sessions["usage_only"].to_list() == [True]
    assert result.sessions["reported_cost_usd"].to_list() == [pytest.approx(0.004)]
    assert result.sessions["session"].to_list() == [f"{path}#w1"]
    assert result.projects["prefixes"].to_list() == [2]
    assert result.sessions["billed_usd"].to_list()[0] > 0  # priced beside Whale's own figure
    buster = result.busters.row(0, named=True)
    assert (buster["kind"], buster["part"], buster["label"]) == (
        "drift",
        "system",
        "prefix_fingerprint",
    )


def test_a_cline_ui_messages_file_alone_is_usage_only(realdata, tmp_path):
    (source,) = (realdata / "cline_task").glob("*ui_messages.json")
    alone = tmp_path / "ui_messages.json"
    shutil.copy(source, alone)
    session = cacheviz.load(alone)
    assert session.format == "cline-ui"
    whole = cacheviz.load(source)
    assert len(session.calls) == len(whole.calls)
    assert [c.usage for c in session.calls] == [c.usage for c in whole.calls]
    assert all(c.meta["usage_only"] for c in session.calls)


def _claude_code_sums(files, repeats=None):
    """Independent sums over Claude Code logs: the last record of each message id in
    the first file (in name order) that logs it, as a scan of separate files keeps it.

    ``repeats`` (a list) gets the number of message ids logged in more than one file.
    """
    last = {}
    files_of = {}
    for path in files:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            message = record.get("message")
            if record.get("type") != "assistant" or not isinstance(message, dict):
                continue
            if message.get("model") == "<synthetic>" or not message.get("usage"):
                continue
            files_of.setdefault(message["id"], []).append(path)
            if files_of[message["id"]][0] == path:
                last[message["id"]] = message["usage"]
            files_of[message["id"]] = list(dict.fromkeys(files_of[message["id"]]))
    if repeats is not None:
        repeats.append(sum(len(f) - 1 for f in files_of.values()))
    sums = {"input": 0, "read": 0, "write": 0, "output": 0}
    for usage in last.values():
        read = usage.get("cache_read_input_tokens", 0)
        write = usage.get("cache_creation_input_tokens", 0)
        sums["input"] += usage["input_tokens"] + read + write
        sums["read"] += read
        sums["write"] += write
        sums["output"] += usage["output_tokens"]
    return len(last), sums


def _cline_sums(path):
    sums = {"input": 0, "read": 0, "write": 0, "output": 0}
    calls = 0
    for event in json.loads(path.read_text()):
        if event.get("say") != "api_req_started":
            continue
        info = json.loads(event.get("text") or "{}")
        if info.get("tokensIn") is None and info.get("cost") is None:
            continue
        calls += 1
        read, write = info.get("cacheReads") or 0, info.get("cacheWrites") or 0
        sums["input"] += info["tokensIn"] + read + write
        sums["read"] += read
        sums["write"] += write
        sums["output"] += info["tokensOut"]
    return calls, sums


def test_realdata_totals_match_independent_sums(realdata, tmp_path):
    claude = sorted((realdata / "claude_code_jsonl").glob("*.jsonl"))
    (cline_ui,) = (realdata / "cline_task").glob("*ui_messages.json")
    repeats = []
    calls_cc, cc = _claude_code_sums(claude, repeats)
    calls_cl, cl = _cline_sums(cline_ui)
    result = cacheviz.scan(
        [realdata / "claude_code_jsonl", realdata / "cline_task"], cache=tmp_path / "c"
    )
    totals = result.totals()
    # the aside_question fork, stored apart from its session here, replays 22 responses
    assert result.duplicates_dropped == repeats[0] == 22
    assert totals["calls"] == calls_cc + calls_cl
    assert totals["input_tokens"] == cc["input"] + cl["input"]
    assert totals["cache_read_tokens"] == cc["read"] + cl["read"]
    assert totals["cache_write_tokens"] == cc["write"] + cl["write"]
    assert totals["output_tokens"] == cc["output"] + cl["output"]
    cost = sum(
        json.loads(e["text"]).get("cost") or 0
        for e in json.loads(cline_ui.read_text())
        if e.get("say") == "api_req_started"
    )
    assert totals["reported_cost_usd"] == pytest.approx(cost)


def test_claude_codes_tool_results_and_memory_are_not_counted_as_unknown_files(tmp_path, cache_dir):
    # ~/.claude/projects/<project>/memory/*.md and <session>/tool-results/*.txt are Claude
    # Code's own state: a sweep of public projects found 122 "unknown files" that were them
    project = tmp_path / "projects" / "-home-me-app"
    sid = "5f0c2a9e-1b2c-4d3e-8f40-0123456789ab"
    _write(project / f"{sid}.jsonl", _parent_records())
    (project / sid / "tool-results").mkdir(parents=True)
    (project / sid / "tool-results" / "b1x2y3.txt").write_text("a long tool output\n")
    gone = "9e8d7c6b-5a49-4382-9170-fedcba987654"  # a session whose log is gone
    (project / gone / "tool-results").mkdir(parents=True)
    (project / gone / "tool-results" / "b4z5.txt").write_text("output\n")
    (project / "memory").mkdir()
    (project / "memory" / "MEMORY.md").write_text("- build with docker\n")
    (tmp_path / "projects" / "-home-me-other" / "memory").mkdir(parents=True)
    (tmp_path / "projects" / "-home-me-other" / "memory" / "notes.md").write_text("x\n")
    (project / "notes.txt").write_text("shopping list\n")  # still an unknown file
    result = cacheviz.scan([tmp_path / "projects"], cache=cache_dir)
    status = dict(zip(result.files["path"], result.files["status"], strict=True))
    assert status == {str(project / f"{sid}.jsonl"): "ok", str(project / "notes.txt"): "unknown"}


def test_the_whole_realdata_folder_scans_without_failures(realdata, tmp_path):
    result = cacheviz.scan([realdata], cache=tmp_path / "c")
    assert result.failed.height == 0
    assert result.files.filter(pl.col("status") == "unknown")["path"].to_list() == [
        str(realdata / "README.md")
    ]
    formats = set(result.sessions["format"])
    assert {"claude-code", "codex", "cline", "gemini-cli", "claude-trace"} <= formats


@pytest.mark.slow
def test_no_path_scans_the_default_locations_and_says_which_were_found(
    tmp_path, monkeypatch, tokenizer_copies
):
    home = tmp_path / "home"
    _write(home / ".claude" / "projects" / "p" / "s1.jsonl", _parent_records())
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("CACHEVIZ_CACHE_DIR", str(tmp_path / "c"))
    tokenizer_copies.seed()  # the process reads the tokenizer copy, not tiktoken's file
    out = subprocess.run(
        [sys.executable, "-m", "cacheviz", "scan"], capture_output=True, text=True, check=True
    ).stdout
    assert f"found   claude-code  {home / '.claude' / 'projects'}" in out
    assert f"absent  codex        {home / '.codex' / 'sessions'}" in out
    assert "1 files, 1 sessions, 2 calls" in out


def test_the_scan_report_is_self_contained_escaped_and_redacted(tmp_path, cache_dir):
    secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"
    folder = tmp_path / secret
    _write(folder / "<img src=x onerror=alert(1)>.jsonl", _parent_records())
    out = tmp_path / "scan.html"
    os.environ["CACHEVIZ_CACHE_DIR"] = str(cache_dir)
    try:
        assert main(["scan", str(tmp_path), "--report", str(out)]) == 0
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]
    page = out.read_text()
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;.jsonl" in page
    assert secret not in page and "[REDACTED]" in page
    assert "Content-Security-Policy" in page
    assert page.count("<rect class='billed' x=") == 2  # one day billed, and the legend
    # the session links to its own inspector report, written beside the page
    assert "<a href='scan_sessions/001.html'>" in page
    assert "cacheviz-root" in (tmp_path / "scan_sessions" / "001.html").read_text()


def test_picking_a_session_in_the_scan_widget_opens_its_inspector(claude_home, cache_dir):
    pytest.importorskip("ipywidgets")
    from cacheviz.ui._scan import ScanView

    result = cacheviz.scan([claude_home], cache=cache_dir)
    assert "application/vnd.jupyter.widget-view+json" in result._repr_mimebundle_()
    view = ScanView(result)
    (option,) = view.sessions.options
    assert "s1.jsonl" in option[0]
    assert view.inspector.children == ()
    view.sessions.value = option[1]
    (inspector,) = view.inspector.children
    assert "Inspector" in repr(inspector)


def test_a_progress_bar_only_when_asked_or_on_a_terminal(claude_home, capsys):
    cacheviz.scan([claude_home], cache=False)  # stderr is not a terminal under pytest
    assert capsys.readouterr().err == ""
    cacheviz.scan([claude_home], cache=False, progress=True)
    assert "scanning" in capsys.readouterr().err


def test_the_agents_folder_layouts_are_walked_into_sessions(realdata, tmp_path):
    home = tmp_path / "home"
    (codex,) = (realdata / "codex_rollout").glob("*.jsonl")
    target = home / ".codex" / "sessions" / "2025" / "12" / "26" / codex.name.split("__")[-1]
    target.parent.mkdir(parents=True)
    shutil.copy(codex, target)
    (gemini,) = (realdata / "gemini_cli").glob("*.jsonl")
    chats = home / ".gemini" / "tmp" / "0f1e2d" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(gemini, chats / "session-1.jsonl")
    task = home / "cline" / "tasks" / "1769053680585"
    task.mkdir(parents=True)
    for path in (realdata / "cline_task").glob("*.json"):
        shutil.copy(path, task / path.name.split("__")[-1])
    result = cacheviz.scan([home], cache=tmp_path / "c")
    sessions = {(r["format"], r["project"]) for r in result.sessions.iter_rows(named=True)}
    assert sessions == {
        ("codex", "local-voice-assistant-codex"),  # the cwd it ran in
        ("gemini-cli", "0f1e2d"),
        ("cline", "tasks"),
    }
    assert result.files.height == 3  # the task's three files are one session
    assert result.files.filter(pl.col("format") == "cline")["path"].to_list() == [
        str(task / "api_conversation_history.json")
    ]


def test_a_response_logged_by_two_tools_counts_once(realdata, tmp_path):
    (trace,) = (realdata / "anthropic_raw").glob("*.jsonl")
    shutil.copy(trace, tmp_path / "trace.jsonl")
    first = json.loads(trace.read_text().splitlines()[0])
    logged_id = first["response"]["body"]["id"] if first["response"].get("body") else None
    if logged_id is None:  # a streamed response: the id is in message_start
        for line in first["response"]["body_raw"].splitlines():
            if line.startswith("data:") and '"message_start"' in line:
                logged_id = json.loads(line[5:])["message"]["id"]
    records = _parent_records()
    for record in records:
        if record["type"] == "assistant" and record["message"]["id"] == "msg_1":
            record["message"]["id"] = logged_id
    _write(tmp_path / "cc" / "s.jsonl", records)
    result = cacheviz.scan([tmp_path], cache=tmp_path / "c")
    assert result.duplicates_dropped == 1
    assert result.calls.filter(pl.col("response_id") == logged_id).height == 1


def test_reader_warnings_reach_the_scan_output(tmp_path, capsys):
    records = _parent_records()
    records.append(_assistant("a9", "msg_2", "Sure", _usage(999, 0, 0, 5), "2026-03-01T10:01:09Z"))
    path = _write(tmp_path / "p" / "s.jsonl", records)
    os.environ["CACHEVIZ_CACHE_DIR"] = str(tmp_path / "c")
    try:
        assert main(["scan", str(tmp_path / "p")]) == 0
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]
    err = capsys.readouterr().err
    assert f"cacheviz: warning: {path.name}:7: repeats line 6's message with other usage" in err


def test_a_user_price_file_is_not_served_costs_cached_under_other_prices(claude_home, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"models": [{"model": [SONNET], "input_mtok": 300.0, "output_mtok": 1500.0}]})
    )
    default = cacheviz.scan([claude_home], cache=tmp_path / "c")
    custom = cacheviz.scan([claude_home], cache=tmp_path / "c", prices=prices)
    # input and output at 100x (cache reads keep their price): well above the default
    assert custom.totals()["billed_usd"] > 5 * default.totals()["billed_usd"]
    again = cacheviz.scan([claude_home], cache=tmp_path / "c")
    assert again.totals()["billed_usd"] == default.totals()["billed_usd"]


def test_an_unwritable_cache_is_a_one_line_warning_not_a_failure(claude_home, tmp_path, capsys):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder should be")
    os.environ["CACHEVIZ_CACHE_DIR"] = str(blocked)
    try:
        assert main(["scan", str(claude_home), "--json"]) == 0
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]
    out = capsys.readouterr()
    assert json.loads(out.out)["totals"]["calls"] == 3
    (line,) = out.err.splitlines()
    assert line.startswith("cacheviz: warning: can't write the scan cache in ")


def test_an_internal_error_on_one_file_is_listed_and_the_scan_goes_on(tmp_path, monkeypatch):
    from cacheviz.scanning import _worker as worker

    _write(tmp_path / "p" / "a.jsonl", _parent_records())
    _write(tmp_path / "p" / "b.jsonl", _renamed(_parent_records(), "b"))
    real = worker.analyze_columns

    def flaky(session, **kwargs):
        if session.path.name == "b.jsonl":
            raise TypeError("boom\nsecond line")
        return real(session, **kwargs)

    monkeypatch.setattr(worker, "analyze_columns", flaky)
    result = cacheviz.scan([tmp_path / "p"], cache=False)
    assert result.calls["path"].unique().to_list() == [str(tmp_path / "p" / "a.jsonl")]
    (error,) = result.failed["error"].to_list()
    assert (
        error == f"{tmp_path / 'p' / 'b.jsonl'}: internal error (TypeError: boom); please report it"
    )


def test_an_empty_folder_scans_to_zero_sessions_twice(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    os.environ["CACHEVIZ_CACHE_DIR"] = str(tmp_path / "c")
    try:
        for _ in range(2):  # cold, then with a (still empty) cache
            assert main(["scan", str(tmp_path / "empty"), "--json"]) == 0
            doc = json.loads(capsys.readouterr().out)
            assert doc["totals"]["sessions"] == 0 and doc["totals"]["billed_usd"] is None
    finally:
        del os.environ["CACHEVIZ_CACHE_DIR"]


@pytest.mark.slow
def test_a_script_without_a_main_guard_still_scans_in_one_process(tmp_path):
    root = _projects(tmp_path, n=2)
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import cacheviz\n"
        "from cacheviz.scanning import _pool as pool\n"
        "pool.POOL_BYTES = 0\n"
        f"result = cacheviz.scan([{str(root)!r}], cache=False, jobs=2)\n"
        "print('calls', result.calls.height)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.splitlines()[-1] == "calls 4"
    assert "CacheVizWarning: the worker processes could not start" in done.stderr


def test_a_bad_price_file_is_one_error(claude_home, tmp_path, capsys):
    bad = tmp_path / "prices.json"
    bad.write_text("{not json")
    assert main(["scan", str(claude_home), "--no-cache", "--prices", str(bad)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"cacheviz: error: {bad}: the price file is not valid JSON")
