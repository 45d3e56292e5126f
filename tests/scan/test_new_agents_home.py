"""A scan of a home folder holding every newly read agent's default folder finds and bills each.

The agents' inputs are the fixtures of their reader tests (built in each agent's own
shape), placed where each agent keeps them by default.
"""

import json

import polars as pl

import cacheviz
from tests.formats.test_amp import THREAD_ID, thread
from tests.formats.test_antigravity import conversation
from tests.formats.test_continue_dev import records, write
from tests.formats.test_droid import droid_session
from tests.formats.test_goose import goose_db
from tests.formats.test_hermes import hermes_db
from tests.formats.test_pi import _archived, _write, openclaw_session, pi_session

ENV = ("AMP_DATA_DIR", "PI_AGENT_DIR", "OPENCLAW_DIR", "HERMES_HOME", "GOOSE_PATH_ROOT",
       "DROID_SESSIONS_DIR")  # fmt: skip


def test_a_home_with_every_new_agent_is_found_and_billed(tmp_path, monkeypatch):
    home = tmp_path / "home"
    amp = home / ".local" / "share" / "amp" / "threads" / f"{THREAD_ID}.json"
    amp.parent.mkdir(parents=True)
    amp.write_text(json.dumps(thread(), indent=2))
    _write(home / ".pi" / "agent" / "sessions" / "--app--" / "x_1.jsonl", pi_session())
    claw = home / ".openclaw" / "agents" / "main" / "sessions"
    _write(claw / "s.jsonl", openclaw_session())  # a free model: found, not billed
    _write(claw / "t.jsonl.reset.2026-02-24T01-46-27.666Z", _archived())  # priced
    hermes_db(home / ".hermes")
    goose_db(home / ".local" / "share" / "goose" / "sessions")
    droid_session(home / ".factory" / "sessions" / "-home-dev-app")
    write(home / ".continue", records())
    conversation(home)  # Antigravity: not under a scanned default folder
    monkeypatch.setenv("HOME", str(home))
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    result = cacheviz.scan(cache=False)
    files = result.files
    by_format = dict(zip(files["format"].to_list(), files["status"].to_list(), strict=True))
    expected = {"amp", "pi", "openclaw", "hermes", "goose", "droid", "continue"}
    assert {f: by_format.get(f) for f in expected} == dict.fromkeys(expected, "ok")
    calls = result.calls.group_by("format").agg(
        pl.len().alias("calls"), pl.col("billed_usd").sum().alias("billed")
    )
    billed = dict(zip(calls["format"].to_list(), calls["billed"].to_list(), strict=True))
    for fmt in expected:
        assert billed[fmt] > 0, fmt  # each priced: per call, or at its session's scope
