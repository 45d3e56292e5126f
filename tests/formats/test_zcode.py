"""ZCode stores (``~/.zcode/cli/db/db.sqlite``): fixtures in the shape of its tables.

The expected calls and usage are read here from the format's rules (one call per
``model_usage`` row; the inclusive input the sum of the uncached input and the cache reads
and writes), not from the reader.
"""

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cacheviz
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import detect

T0 = 1_788_000_000_000  # ms
PARENT, CHILD = "sess-parent-0001", "sess-child-0002"
USAGE = [  # session, model, started, input (reads inside), output, reasoning, read, write, status, source
    (PARENT, "glm-4.6", T0 + 1_000, 1_200, 300, 120, 0, 9_000, "completed", "main_turn"),
    (PARENT, "glm-4.6", T0 + 1_500, 40, 8, 0, 0, 0, "completed", "session_title"),
    (PARENT, "glm-4.6", T0 + 9_000, 9_400, 250, 90, 9_000, 700, "completed", "main_turn"),
    (CHILD, "glm-4.6", T0 + 5_000, 2_000, 150, 0, 0, 0, "completed", "subagent"),
    (PARENT, "deepseek-v4-pro", T0 + 20_000, 10_300, 80, 200, 10_000, 0, "completed", "main_turn"),
    (PARENT, "deepseek-v4-pro", T0 + 25_000, 0, 0, 0, 0, 0, "running", "main_turn"),
]
MESSAGES = [  # session, at, role, content
    (PARENT, T0 + 500, "user", "add a login page"),
    (PARENT, T0 + 8_000, "assistant", "Exploring first."),
    (CHILD, T0 + 4_000, "user", "find the auth module"),
    (PARENT, T0 + 19_000, "user", "also add tests"),
]


def zcode_db(folder: Path, usage=USAGE) -> Path:
    """A ZCode ``db.sqlite`` in WAL mode under ``folder``, as the agent keeps it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "db.sqlite"
    con = sqlite3.connect(path)
    con.execute("pragma journal_mode=wal")
    con.executescript(
        """
        create table session (id text primary key, parent_id text, title text, directory text,
          time_created integer, time_updated integer);
        create table model_usage (id text primary key, session_id text, model_id text,
          started_at integer, completed_at integer, status text, query_source text,
          logical_request_id text, input_tokens integer, output_tokens integer,
          reasoning_tokens integer, cache_creation_input_tokens integer,
          cache_read_input_tokens integer);
        create table message (id text primary key, session_id text, data text, sequence integer,
          time_created integer);
        """
    )
    con.execute(
        "insert into session values (?,?,?,?,?,?)",
        (PARENT, None, "登录页", "/home/dev/app", T0, T0 + 30_000),
    )
    con.execute(
        "insert into session values (?,?,?,?,?,?)",
        (CHILD, PARENT, "explore", "/home/dev/app", T0 + 3_000, T0 + 6_000),
    )
    for i, (sid, model, at, inp, out, reason, read, write, status, source) in enumerate(usage):
        con.execute(
            "insert into model_usage values (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                f"u{i}",
                sid,
                model,
                at,
                at + 900,
                status,
                source,
                f"r{i}",
                inp,
                out,
                reason,
                write,
                read,
            ),
        )
    for i, (sid, at, role, text) in enumerate(MESSAGES):
        data = {"role": role, "time": {"created": at}, "content": text}
        con.execute(
            "insert into message values (?,?,?,?,?)",
            (f"m{i}", sid, json.dumps(data, ensure_ascii=False), i, at),
        )
    con.commit()
    con.close()
    return path


def test_each_completed_model_usage_row_is_a_call_with_its_usage(tmp_path):
    path = zcode_db(tmp_path)
    assert detect(path) == "zcode"
    session = cacheviz.load(path)
    done = [r for r in USAGE if r[8] == "completed"]
    assert len(session.calls) == len(done)
    assert session.ignored == {"model_usage row running (not answered)": 1}
    inclusive = sum(inp + write for _, _, _, inp, _, _, _, write, _, _ in done)  # reads inside
    assert sum(c.usage.input_tokens for c in session.calls) == inclusive
    assert sum(c.usage.output_tokens for c in session.calls) == sum(r[4] for r in done)
    assert sum(c.usage.cache_read_tokens for c in session.calls) == sum(r[6] for r in done)
    assert all(c.usage.provenance == "derived" for c in session.calls)
    # reasoning within the output is shown apart; more than the output is kept in meta
    deepseek = next(c for c in session.calls if c.model == "deepseek-v4-pro")
    assert deepseek.usage.reasoning_tokens is None
    assert deepseek.meta["zcode_reasoning_tokens"] == 200
    assert deepseek.provider == "deepseek"


def test_sessions_are_threads_and_the_sub_agent_names_its_parent(tmp_path):
    session = cacheviz.load(zcode_db(tmp_path))
    child = [c for c in session.calls if c.meta["zcode_session"] == CHILD]
    assert len(child) == 1 and child[0].parent_hint == f"zcode {PARENT}"
    first = min((c for c in session.calls if c.meta["zcode_session"] == PARENT), key=lambda c: c.ts)
    texts = [
        session.contents[b.hash].value["content"] for b in first.blocks if b.part == "messages"
    ]
    assert texts == ["add a login page"]  # the messages before the call started


def test_the_glm_models_are_priced_and_billed(tmp_path):
    summary = cacheviz.load(zcode_db(tmp_path)).analyze().summary()
    assert summary["unpriced_models"] == []
    assert summary["billed_usd"] > 0


def test_a_scan_of_a_home_with_zcode_finds_and_bills_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    zcode_db(home / ".zcode" / "cli" / "db")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ZCODE_HOME", raising=False)
    result = cacheviz.scan(cache=False)
    rows = dict(
        zip(result.files["format"].to_list(), result.files["status"].to_list(), strict=True)
    )
    assert rows == {"zcode": "ok"}
    assert result.calls["billed_usd"].drop_nulls().sum() > 0


def test_cache_reads_more_than_the_prompt_are_added_up_instead(tmp_path):
    odd = [(PARENT, "glm-4.6", T0 + 1_000, 500, 10, 0, 2_000, 100, "completed", "main_turn")]
    call = cacheviz.load(zcode_db(tmp_path, odd)).calls[0]
    assert call.usage.input_tokens == 500 + 2_000 + 100
    assert call.meta["zcode_input_reading"] == "apart"


def test_a_bad_count_is_one_error_naming_the_row(tmp_path):
    bad = [*USAGE[:1], (PARENT, "glm-4.6", T0 + 2_000, -3, 1, 0, 0, 0, "completed", "main_turn")]
    path = zcode_db(tmp_path, bad)
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "\n" not in message and "model_usage[u1].input_tokens" in message
    with pytest.warns(CacheVizWarning, match="input_tokens"):
        skipped = cacheviz.load(path, errors="skip")
    assert len(skipped.calls) == 2 and skipped.calls[1].usage is None


def test_an_opencode_store_is_not_taken_for_zcode(tmp_path):
    path = tmp_path / "opencode.db"
    con = sqlite3.connect(path)
    con.executescript(
        "create table session (id text, parent_id text, directory text);"
        "create table message (id text, session_id text, data text);"
    )
    con.close()
    assert not cacheviz.formats.READERS["zcode"].detect(path, path.read_bytes()[:100])


CELLS = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=5), st.floats(allow_nan=True))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_stores_load_or_fail_in_one_line(tmp_path_factory, data, loads_or_fails_cleanly):
    path = zcode_db(tmp_path_factory.mktemp("zcode"))
    con = sqlite3.connect(path)
    for _ in range(data.draw(st.integers(1, 3))):
        table, column = data.draw(
            st.sampled_from(
                [
                    ("model_usage", "input_tokens"),
                    ("model_usage", "started_at"),
                    ("model_usage", "model_id"),
                    ("model_usage", "reasoning_tokens"),
                    ("model_usage", "status"),
                    ("model_usage", "query_source"),
                    ("message", "data"),
                    ("message", "time_created"),
                    ("session", "parent_id"),
                ]
            )
        )
        con.execute(f"update {table} set {column} = ? where rowid = 1", (data.draw(CELLS),))
    con.commit()
    con.close()
    loads_or_fails_cleanly(path, lambda p, e: cacheviz.load(p, format="zcode", errors=e))
