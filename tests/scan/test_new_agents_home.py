"""A scan of a home folder holding every supported agent's default folder finds and bills each.

One row per agent: where the agent keeps its sessions by default (built from the fixtures
of its reader's tests, in the agent's own shape), how many of its files the scan must
read, and whether its calls are billed (a figure) or honestly not (null: the log reports
no usage, or its model has no price). Adding an agent is one row in ``AGENTS``.
"""

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

import cacheviz
import cacheviz.formats
from cacheviz.money.pricing import PriceBook, tier_starts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
QWEN_MODEL = "qwen3-coder-plus"  # the models of the Qwen Code and Kimi CLI fixtures
KIMI_MODEL = "kimi-k2-turbo-preview"
# the variables that would move a default folder away from $HOME
ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "KILO_DATA_DIR", "KIMI_SHARE_DIR", "AMP_DATA_DIR",
       "PI_AGENT_DIR", "OPENCLAW_DIR", "HERMES_HOME", "GOOSE_PATH_ROOT", "DROID_SESSIONS_DIR",
       "CRUSH_GLOBAL_DATA", "XDG_DATA_HOME", "CLOUDTAP_DB", "CCV_LOG_DIR", "CXV_LOG_DIR",
       "GROK_HOME", "CODEBUFF_DATA_DIR", "ZCODE_HOME")  # fmt: skip


def _lines(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _claude_code(home: Path) -> None:
    shutil.copytree(FIXTURES / "claude_code_subagents", home / ".claude" / "projects")


def _codex(home: Path) -> None:
    from tests.formats.test_codex import _records

    _lines(home / ".codex/sessions/2026/01/01/rollout-2026-01-01T10-00-00-s1.jsonl", _records())


def _gemini_cli(home: Path) -> None:
    from tests.formats.test_gemini_cli import _records

    _lines(home / ".gemini/tmp/f1995df9/chats/session-2026-01-01T10-00-s1.jsonl", _records())


def _gemini_json(home: Path) -> None:
    from tests.formats.test_gemini_json import _gemini, _note, _tokens, _write

    messages = [
        _note("user", "u1", "2026-04-13T18:00:02.000Z", "hello"),
        _gemini("g1", "hi", _tokens(1200, 0, 5), "2026-04-13T18:00:04.000Z"),
    ]
    _write(home / ".gemini/tmp/0a0b0c0d/chats/session-2026-04-13T18-00-aaaa.json", "a-1", messages)


def _cline(home: Path) -> None:
    from tests.formats.test_cline import _task

    _task(home / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1767000000000")


def _opencode(home: Path) -> None:
    from tests.formats.test_opencode import _records, _write_db

    (home / ".local/share/opencode").mkdir(parents=True)
    _write_db(home / ".local/share/opencode/opencode.db", *_records())


def _kilo(home: Path) -> None:
    from tests.formats.test_opencode import _records, _write_db

    # other ids than OpenCode's store: the same sessions twice would be one (duplicates)
    records = json.loads(json.dumps(_records()).replace('"ses_', '"kil_').replace('"msg_', '"km_'))
    (home / ".local/share/kilo").mkdir(parents=True)
    _write_db(home / ".local/share/kilo/kilo.db", *records)


def _copilot(home: Path) -> None:
    from tests.formats.test_copilot_cli import _events

    _lines(home / ".copilot/session-state/s1/events.jsonl", _events())


def _qwen(home: Path) -> None:
    from tests.formats.test_qwen_code import _chat

    _lines(home / ".qwen/projects/-home-dev-app/chats/s1.jsonl", _chat())


def _qwen_billed(home: Path) -> float:
    """The chat's usage, read here, at the price data's Qwen prices (prompt-size tiers).

    Each assistant record's ``usageMetadata`` (output: candidates plus thoughts, as the
    total says), and each ``api_response`` event no record's usage equals (a call logged
    only in the telemetry).
    """
    calls = []
    (chat,) = (home / ".qwen").rglob("*.jsonl")
    records = [json.loads(line) for line in chat.read_text().splitlines()]
    for record in records:
        usage = record.get("usageMetadata")
        if record.get("type") == "assistant" and usage:
            prompt, cands = usage["promptTokenCount"], usage["candidatesTokenCount"]
            thoughts = usage.get("thoughtsTokenCount") or 0
            apart = usage["totalTokenCount"] == prompt + cands + thoughts
            calls.append((prompt, usage["cachedContentTokenCount"], cands + thoughts * apart))
    for record in records:
        event = (record.get("systemPayload") or {}).get("uiEvent") or {}
        if event.get("event.name") == "qwen-code.api_response":
            counts = (event["input_token_count"], event["output_token_count"])
            if all((prompt, out) != counts for prompt, _, out in calls):
                calls.append((counts[0], 0, counts[1]))
    book, total = PriceBook(), 0.0
    for prompt, read, out in calls:
        rates = book.rates("qwen", QWEN_MODEL, prompt_tokens=prompt)
        assert rates.cache_read is not None and rates.output is not None
        total += (prompt - read) * rates.input + read * rates.cache_read + out * rates.output
    return total


def _kimi(home: Path) -> None:
    from tests.formats.test_kimi_cli import kimi_home

    kimi_home(home)


def _kimi_billed(home: Path) -> float:
    """Both sessions' usage, read by the format test's independent reading, at Moonshot's price."""
    from tests.formats.test_kimi_cli import independent

    assert tier_starts("moonshotai", KIMI_MODEL) == ()  # one price whatever the prompt: sums do
    rates = PriceBook().rates("moonshotai", KIMI_MODEL)
    assert rates.cache_read is not None and rates.output is not None
    total = 0.0
    for wire in (home / ".kimi/sessions").glob("*/*/wire.jsonl"):
        got = independent(wire)
        uncached = got["input"] - got["read"] - got["write"]
        write_rate = rates.input if rates.cache_write is None else rates.cache_write
        total += (
            uncached * rates.input
            + got["read"] * rates.cache_read
            + got["write"] * write_rate
            + got["output"] * rates.output
        )
    return total


def _whale(home: Path) -> None:
    rows = [
        {"ts": 1772359200000 + i * 60000, "session": "w1", "model": "deepseek-chat",
         "prefix_fingerprint": "aaa", "prompt_tokens": 5000, "completion_tokens": 50,
         "prompt_cache_hit_tokens": hit, "prompt_cache_miss_tokens": 5000 - hit}
        for i, hit in enumerate([0, 4864])
    ]  # fmt: skip
    _lines(home / ".whale/usage.jsonl", rows)


def _amp(home: Path) -> None:
    from tests.formats.test_amp import THREAD_ID, thread

    path = home / ".local/share/amp/threads" / f"{THREAD_ID}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(thread(), indent=2))


def _pi(home: Path) -> None:
    from tests.formats.test_pi import pi_session

    _lines(home / ".pi/agent/sessions/--app--/x_1.jsonl", pi_session())


def _openclaw(home: Path) -> None:
    from tests.formats.test_pi import _archived, openclaw_session

    claw = home / ".openclaw/agents/main/sessions"
    _lines(claw / "s.jsonl", openclaw_session())  # a free model: found, billed 0
    _lines(claw / "t.jsonl.reset.2026-02-24T01-46-27.666Z", _archived())


def _hermes(home: Path) -> None:
    from tests.formats.test_hermes import hermes_db

    hermes_db(home / ".hermes")


def _goose(home: Path) -> None:
    from tests.formats.test_goose import goose_db

    goose_db(home / ".local/share/goose/sessions")


def _droid(home: Path) -> None:
    from tests.formats.test_droid import droid_session

    droid_session(home / ".factory/sessions/-home-dev-app")


def _continue(home: Path) -> None:
    from tests.formats.test_continue_dev import records, write

    write(home / ".continue", records())


def _crush(home: Path) -> None:
    from tests.formats.test_crush import crush_db

    project = home / "code" / "app"
    crush_db(project / ".crush")
    listed = {"projects": [{"path": str(project), "data_dir": str(project / ".crush")}]}
    (home / ".local/share/crush").mkdir(parents=True)
    (home / ".local/share/crush/projects.json").write_text(json.dumps(listed))


def _antigravity(home: Path) -> None:
    from tests.formats.test_antigravity import conversation

    conversation(home)


def _grok(home: Path) -> None:
    from tests.formats.test_grok import grok_session

    grok_session(home / ".grok" / "sessions")


def _grok_billed(home: Path) -> float:
    """The session's turn rows, read from its file, at xAI's prices (the format test's reading)."""
    from tests.formats.test_grok import billed_at_xais_prices

    (path,) = (home / ".grok" / "sessions").glob("*/*/updates.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return billed_at_xais_prices(records)


def _codebuff(home: Path) -> None:
    from tests.formats.test_codebuff import codebuff_chat

    codebuff_chat(home / ".config" / "manicode" / "projects")


def _zcode(home: Path) -> None:
    from tests.formats.test_zcode import zcode_db

    zcode_db(home / ".zcode" / "cli" / "db")


def _claude_tap(home: Path) -> None:
    from tests.formats.test_claude_tap import _bodies, _record, _write_store

    first, later = _bodies()
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 2000, "output_tokens": 3}
    (home / ".local/share/claude-tap").mkdir(parents=True)
    _write_store(
        home / ".local/share/claude-tap/traces.sqlite3",
        [_record(1, first, usage), _record(2, later, usage)],
    )


def _cc_viewer(home: Path) -> None:
    from tests.formats.test_cc_viewer import _delta_log

    path = home / ".claude/cc-viewer/shop/2026-03-01.jsonl"
    path.parent.mkdir(parents=True)
    _delta_log(path)


@dataclass(frozen=True)
class Agent:
    """One agent in the home: its reader's name, where it lives, what the scan must show."""

    format: str
    build: Callable[[Path], None]
    root: str  # the agent's default folder under $HOME (its files are found there)
    files: int  # files (or stores) the scan reads there
    billed: bool | None  # True: a billed figure; None: billed is null (no usage or price)
    status: str = "ok"
    expected: Callable[[Path], float] | None = None  # the billed sum, computed from the files


AGENTS = [
    Agent("claude-code", _claude_code, ".claude/projects", 1, True),
    Agent("codex", _codex, ".codex/sessions", 1, True),
    Agent("gemini-cli", _gemini_cli, ".gemini/tmp/f1995df9", 1, True),
    Agent("gemini-cli-json", _gemini_json, ".gemini/tmp/0a0b0c0d", 1, True),  # older chats
    Agent("cline", _cline, ".config/Code/User/globalStorage", 1, True),
    Agent("opencode", _opencode, ".local/share/opencode", 1, True),
    Agent("opencode", _kilo, ".local/share/kilo", 1, True),  # Kilo CLI: OpenCode's store
    Agent("copilot-cli", _copilot, ".copilot", 1, True),  # billed at the session's scope
    Agent("qwen-code", _qwen, ".qwen", 1, True, expected=_qwen_billed),
    Agent("kimi-cli", _kimi, ".kimi", 2, True, expected=_kimi_billed),
    Agent("whale-usage", _whale, ".whale", 1, True),
    Agent("amp", _amp, ".local/share/amp", 1, True),
    Agent("pi", _pi, ".pi", 1, True),
    Agent("openclaw", _openclaw, ".openclaw", 2, True),
    Agent("hermes", _hermes, ".hermes", 1, True),  # session scope
    Agent("goose", _goose, ".local/share/goose", 1, True),  # session scope
    Agent("droid", _droid, ".factory", 1, True),  # session scope
    Agent("continue", _continue, ".continue", 1, True),
    Agent("crush", _crush, "code/app/.crush", 1, None),  # Crush's counts are not sums
    # turn totals at the session's scope, under xAI's rules and prices
    Agent("grok", _grok, ".grok/sessions", 1, True, expected=_grok_billed),
    # Codebuff writes credits and running prompt totals, no per-call usage: nothing billed
    Agent("codebuff", _codebuff, ".config/manicode", 1, None),
    Agent("zcode", _zcode, ".zcode", 1, True),
    Agent("claude-tap", _claude_tap, ".local/share/claude-tap", 1, True),
    Agent("cc-viewer", _cc_viewer, ".claude/cc-viewer", 1, True),
    # encrypted: listed as failed, in one line naming Antigravity
    Agent("antigravity", _antigravity, ".gemini/antigravity", 1, None, status="failed"),
]


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    saved = {name: os.environ.pop(name, None) for name in (*ENV, "HOME")}
    os.environ["HOME"] = str(home)
    try:
        for agent in AGENTS:
            agent.build(home)
        result = cacheviz.scan(cache=False)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return home, result


def test_every_reader_of_an_agent_with_a_default_folder_has_a_row():
    readers = set(cacheviz.formats.READERS)
    # read only from a file or folder named on the command line: no default folder
    elsewhere = {"cacheviz", "openai-log", "claude-trace", "mitmproxy", "inspect", "openhands",
                 "swe-agent", "aider", "otel", "cline-ui"}  # fmt: skip
    assert readers - elsewhere <= {agent.format for agent in AGENTS}


@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: f"{a.format}:{a.root}")
def test_the_scan_finds_and_bills_the_agent(scanned, agent):
    home, result = scanned
    root = str(home / agent.root)
    files = result.files.filter(pl.col("path").str.starts_with(root))
    assert files["format"].to_list() == [agent.format] * agent.files, files
    assert files["status"].to_list() == [agent.status] * agent.files, files
    if agent.status == "failed":
        assert all("Antigravity" in error for error in files["error"].to_list())
        return
    calls = result.calls.filter(pl.col("path").str.starts_with(root))
    assert calls.height > 0
    billed = calls["billed_usd"]
    if agent.billed:
        assert billed.null_count() < calls.height and billed.sum() >= 0
        if agent.format != "openclaw":  # one of its sessions uses a free model
            assert billed.sum() > 0
        if agent.expected is not None:
            assert billed.sum() == pytest.approx(agent.expected(home), rel=1e-9)
    else:
        assert billed.null_count() == calls.height  # not 0: not reported
