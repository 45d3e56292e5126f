"""``cacheviz replay`` against a real ``llama-server``, call by call, on its token ids.

The server is built from the same llama-cpp-python source package as the in-process
engine (``bench/engine_setup.sh``; ``CACHEVIZ_ENGINE_SERVER`` names it). It runs with
its own defaults, the ``llamacpp`` rule's defaults: 4 slots (``--parallel`` auto), slot
prompt similarity 0.1, the host prompt cache (``--cache-ram`` 8 GiB: unbounded for this
model), ``--cache-reuse`` off. Each session kind gets a fresh server (an empty cache).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from engine_sessions import CALLS, KINDS, sessions, threads

from cacheviz import cli
from cacheviz.formats.native import record_line
from cacheviz.providers._base import HandBuilt
from cacheviz.providers.llamacpp import LlamaCppSimulator

MODEL = "tiny-qwen2"


@pytest.fixture(scope="session")
def server_binary() -> str:
    binary = os.environ.get("CACHEVIZ_ENGINE_SERVER")
    if not binary:
        pytest.skip("llama-server: run `make test-engine` (CACHEVIZ_ENGINE_SERVER unset)")
    if not os.access(binary, os.X_OK):
        pytest.skip(f"llama-server: {binary} is not built (see bench/engine_setup.sh)")
    return binary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url + "/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


class LlamaServer:
    """``llama-server`` on a free localhost port, with its default slots and caches."""

    def __init__(self, binary: str, model: Path, log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        args = [binary, "-m", str(model), "-a", MODEL, "--host", "127.0.0.1"]
        args += ["--port", str(self.port), "-t", "2", "--no-webui", "--no-warmup"]
        self.args = args

    def __enter__(self) -> LlamaServer:
        with self.log.open("w", encoding="utf-8") as out:
            self.process = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while not _healthy(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self._stop()
                tail = self.log.read_text("utf-8", "replace")[-2000:]
                pytest.fail(f"llama-server did not come up on {self.url}:\n{tail}")
            time.sleep(0.5)
        return self

    def _stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # the process this test started, by its pid
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)

    def __exit__(self, *exc: object) -> None:
        self._stop()


def _session_log(path: Path, kind: str) -> Path:
    """The kind's requests as a cacheviz request log: the session ``replay`` sends."""
    lines = [
        record_line(
            {"model": MODEL, "messages": messages},
            provider="openai",
            model=MODEL,
            api="chat.completions",
            ts=f"2026-12-06T10:00:{i:02d}Z",
            meta={"thread": thread},
        )
        for i, (messages, thread) in enumerate(zip(sessions()[kind], threads(kind), strict=True))
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def replayed(server_binary, tiny_model, tmp_path_factory) -> dict[str, dict]:
    """Each kind replayed on a fresh llama-server: ``cacheviz replay --json`` and its log."""
    out = {}
    for kind in KINDS:
        folder = tmp_path_factory.mktemp(f"server-{kind}")
        session = _session_log(folder / f"{kind}.jsonl", kind)
        log = folder / "replay.jsonl"
        args = ["replay", str(session), "--engine", "", "--log", str(log), "--json"]
        with LlamaServer(server_binary, tiny_model, folder / "server.log") as server:
            args[3] = server.url
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                assert cli.main(args) == 0
        doc = json.loads(printed.getvalue())
        records = [json.loads(line) for line in log.read_text("utf-8").splitlines() if line]
        out[kind] = {"doc": doc, "records": records}
    report = os.environ.get("CACHEVIZ_ENGINE_SERVER_REPORT")
    if report:  # the figures in docs/simulation.md
        figures = {
            kind: {
                "equal": done["doc"]["agreement"]["equal_calls"],
                "reported": done["doc"]["agreement"]["reported_calls"],
                "parameters": done["doc"]["parameters"],
                "engine_read": [c["engine_cached_tokens"] for c in done["doc"]["calls"]],
                "input": [c["input_tokens"] for c in done["doc"]["calls"]],
                "prompt_ms": [c["prefill_ms"] for c in done["doc"]["calls"]],
            }
            for kind, done in out.items()
        }
        Path(report).write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_replay_on_llama_server_equals_the_llamacpp_rule_on_every_call(replayed, kind):
    doc = replayed[kind]["doc"]
    assert doc["engine"] == "llamacpp" and doc["model"] == MODEL
    assert doc["agreement"]["basis"] == "engine token ids"
    assert doc["parameters"]["slots"] == {"value": 4, "source": "log"}  # its /props
    mismatched = [
        (c["call"], c["engine_cached_tokens"], c["simulated_cached_tokens"])
        for c in doc["calls"]
        if not c["equal"]
    ]
    assert mismatched == [], kind
    assert (doc["agreement"]["equal_calls"], doc["agreement"]["reported_calls"]) == (CALLS, CALLS)


@pytest.mark.parametrize("kind", KINDS)
def test_the_servers_reported_reuse_is_the_rule_on_the_recorded_ids(replayed, kind):
    """The same check without ``simulate``: the rule on the log's ids, the server's counts."""
    records = replayed[kind]["records"]
    assert len(records) == CALLS
    build = HandBuilt()
    calls = [
        build.call(i, [r["response"]["prompt_token_ids"]], thread=r["meta"].get("thread", "main"))
        for i, r in enumerate(records)
    ]
    rule = [r.cache_read_tokens for r in LlamaCppSimulator().run(calls)]
    timings = [r["response"]["timings"]["cache_n"] for r in records]
    usage = [r["response"]["usage"]["prompt_tokens_details"]["cached_tokens"] for r in records]
    prompt_n = [r["response"]["timings"]["prompt_n"] for r in records]
    assert usage == timings
    # the server's prompt is the recorded ids: cached + evaluated = their count
    assert [c + n for c, n in zip(timings, prompt_n, strict=True)] == [
        len(r["response"]["prompt_token_ids"]) for r in records
    ]
    assert timings == rule
