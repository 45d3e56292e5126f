"""cacheviz.record() with the real anthropic and openai SDKs against a fake provider on 127.0.0.1."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fake_provider import (
    ANTHROPIC_FINAL_OUTPUT,
    ANTHROPIC_USAGE,
    OPENAI_CHAT_USAGE,
    OPENAI_RESPONSES_USAGE,
    TEXT,
    FakeProvider,
)
from sdk_majors import STREAM_CUT, available_kinds, count_tokens, kinds


def run_async(coro):
    """``asyncio.run`` in a thread of its own: another test (Playwright's sync API) may
    have left an event loop running in this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


anthropic = pytest.importorskip("anthropic", reason="the record extra is not installed")
openai = pytest.importorskip("openai", reason="the record extra is not installed")

from cacheviz import CacheVizWarning  # noqa: E402
from cacheviz.recording import record  # noqa: E402

ANTHROPIC_KEY = "sk-ant-api03-TESTKEYdoNotLogMe0123456789"
OPENAI_KEY = "sk-proj-TESTKEYdoNotLogMe0123456789abcdef"
MESSAGES = [{"role": "user", "content": "Summarize the repo ünïcode"}]
SYSTEM = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]


@pytest.fixture(scope="module")
def fake():
    with FakeProvider() as server:
        yield server


@pytest.fixture(autouse=True)
def _clear(fake):
    fake.received.clear()


def _anthropic(fake, cls=None):
    cls = cls or anthropic.Anthropic
    return cls(api_key=ANTHROPIC_KEY, base_url=fake.url, max_retries=0)


def _openai(fake, cls=None):
    cls = cls or openai.OpenAI
    return cls(api_key=OPENAI_KEY, base_url=f"{fake.url}/v1", max_retries=0)


def _lines(path: Path) -> list[dict]:
    return [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines()]


def _call(kind: str, fake, stream: bool) -> str:
    """Make one call with a real SDK; return the text the caller received."""
    with _anthropic(fake) if kind == "messages" else _openai(fake) as client:
        return _call_with(client, kind, stream)


def _call_with(client, kind: str, stream: bool) -> str:
    if kind == "messages":
        args = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "system": SYSTEM,
            "messages": MESSAGES,
        }
        if not stream:
            return client.messages.create(**args).content[0].text
        with client.messages.stream(**args) as events:
            return "".join(events.text_stream)
    if kind == "chat.completions":
        args = {"model": "gpt-4o", "messages": MESSAGES}
        if not stream:
            return client.chat.completions.create(**args).choices[0].message.content
        chunks = client.chat.completions.create(
            **args, stream=True, stream_options={"include_usage": True}
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    args = {"model": "gpt-4o", "input": MESSAGES, "instructions": "Be terse."}
    if not stream:
        return client.responses.create(**args).output_text
    events = client.responses.create(**args, stream=True)
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


async def _acall(kind: str, fake, stream: bool) -> str:
    if kind == "messages":
        async with _anthropic(fake, anthropic.AsyncAnthropic) as client:
            return await _acall_with(client, kind, stream)
    async with _openai(fake, openai.AsyncOpenAI) as client:
        return await _acall_with(client, kind, stream)


async def _acall_with(client, kind: str, stream: bool) -> str:
    if kind == "messages":
        args = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": MESSAGES}
        if not stream:
            return (await client.messages.create(**args)).content[0].text
        events = await client.messages.create(**args, stream=True)
        return "".join([e.delta.text async for e in events if e.type == "content_block_delta"])
    if kind == "chat.completions":
        args = {"model": "gpt-4o", "messages": MESSAGES}
        if not stream:
            return (await client.chat.completions.create(**args)).choices[0].message.content
        chunks = await client.chat.completions.create(
            **args, stream=True, stream_options={"include_usage": True}
        )
        return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
    args = {"model": "gpt-4o", "input": "hi"}
    if not stream:
        return (await client.responses.create(**args)).output_text
    events = await client.responses.create(**args, stream=True)
    return "".join([e.delta async for e in events if e.type == "response.output_text.delta"])


EXPECTED_USAGE = {
    "messages": {**ANTHROPIC_USAGE, "output_tokens": ANTHROPIC_FINAL_OUTPUT},
    "chat.completions": OPENAI_CHAT_USAGE,
    "responses": OPENAI_RESPONSES_USAGE,
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", kinds())
def test_records_the_body_as_sent_and_the_usage(kind, mode, stream, fake, tmp_path):
    log = tmp_path / "run.jsonl"
    with record(log):
        text = (
            _call(kind, fake, stream) if mode == "sync" else run_async(_acall(kind, fake, stream))
        )
    assert text == TEXT  # the caller's stream arrived intact
    [received] = fake.received
    [line] = _lines(log)
    assert line["request"] == json.loads(received.body)
    # stronger than the JSON equality: the body's bytes are spliced into the line verbatim
    assert received.body.decode() in log.read_text(encoding="utf-8")
    assert line["api"] == kind
    assert line["model"] == json.loads(received.body)["model"]
    assert line["response"]["status"] == 200
    assert line["response"]["usage"] == EXPECTED_USAGE[kind]
    assert "error" not in line["response"]
    assert list(line)[:5] == ["ts", "provider", "api", "model", "request"]


def test_no_key_or_header_in_the_log(fake, tmp_path):
    log = tmp_path / "run.jsonl"
    with record(log):
        for kind in available_kinds():
            _call(kind, fake, stream=True)
    text = log.read_text(encoding="utf-8")
    assert len(fake.received) == len(available_kinds())
    assert any(ANTHROPIC_KEY in v for v in fake.received[0].headers.values())  # the server got it
    for secret in (ANTHROPIC_KEY, OPENAI_KEY, "TESTKEY", "x-api-key", "authorization", "Bearer"):
        assert secret.lower() not in text.lower()


def test_secrets_in_bodies_are_redacted_unless_told_not_to(fake, tmp_path):
    leaked = "sk-ant-api03-LeakedInAPromptAAAAAAAAAA"
    messages = [{"role": "user", "content": f"my key is {leaked}, keep it"}]
    for redact, log in ((True, tmp_path / "a.jsonl"), (False, tmp_path / "b.jsonl")):
        with record(log, redact=redact), _anthropic(fake) as client:
            client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=messages)
    redacted, kept = _lines(tmp_path / "a.jsonl")[0], _lines(tmp_path / "b.jsonl")[0]
    assert leaked not in json.dumps(redacted)
    assert redacted["request"]["messages"][0]["content"] == "my key is [REDACTED], keep it"
    assert kept["request"] == json.loads(fake.received[1].body)


def test_upstream_errors_reach_the_caller_and_are_recorded(fake, tmp_path):
    log = tmp_path / "run.jsonl"
    with record(log), _anthropic(fake) as client, _openai(fake) as oclient:
        with pytest.raises(anthropic.RateLimitError):
            client.messages.create(model="error-429", max_tokens=8, messages=MESSAGES)
        with pytest.raises(openai.InternalServerError):
            oclient.chat.completions.create(model="error-500", messages=MESSAGES, stream=True)
    first, second = _lines(log)
    assert first["response"]["status"] == 429
    assert first["response"]["error"] == {"type": "api_error", "message": "fake 429"}
    assert first["response"]["usage"] is None  # not reported, never 0
    assert second["response"]["status"] == 500


# the usage seen before the cut (two events): Anthropic's message_start has it; the
# OpenAI APIs send theirs at the end, so it is not reported (null, never 0)
USAGE_BEFORE_THE_CUT = {"messages": ANTHROPIC_USAGE, "chat.completions": None, "responses": None}


def _read_cut_stream(client, kind: str) -> str:
    if kind == "messages":
        with client.messages.stream(model="reset", max_tokens=8, messages=MESSAGES) as s:
            return "".join(s.text_stream)
    if kind == "chat.completions":
        chunks = client.chat.completions.create(model="reset", messages=MESSAGES, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    events = client.responses.create(model="reset", input="hi", stream=True)
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


async def _aread_cut_stream(client, kind: str) -> str:
    if kind == "messages":
        events = await client.messages.create(
            model="reset", max_tokens=8, messages=MESSAGES, stream=True
        )
        return "".join([e.delta.text async for e in events if e.type == "content_block_delta"])
    if kind == "chat.completions":
        chunks = await client.chat.completions.create(model="reset", messages=MESSAGES, stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
    events = await client.responses.create(model="reset", input="hi", stream=True)
    return "".join([e.delta async for e in events if e.type == "response.output_text.delta"])


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", kinds())
def test_a_stream_cut_by_the_server_is_recorded_as_such(kind, mode, fake, tmp_path):
    log = tmp_path / "run.jsonl"

    async def cut_async():
        if kind == "messages":
            async with _anthropic(fake, anthropic.AsyncAnthropic) as client:
                return await _aread_cut_stream(client, kind)
        async with _openai(fake, openai.AsyncOpenAI) as client:
            return await _aread_cut_stream(client, kind)

    # the caller gets the cut, as its SDK major raises it (STREAM_CUT: the SDK's connection
    # error or the HTTP client's RemoteProtocolError); what matters here is the log
    with record(log), pytest.raises(STREAM_CUT):
        if mode == "async":
            run_async(cut_async())
        else:
            with _anthropic(fake) if kind == "messages" else _openai(fake) as client:
                _read_cut_stream(client, kind)
    [line] = _lines(log)
    assert line["api"] == kind
    assert line["request"] == json.loads(fake.received[0].body)
    assert line["response"]["status"] == 200  # the answer had started
    # recorded from the HTTP client's stream, under the SDK: the same in every major
    assert line["response"]["error"].startswith("RemoteProtocolError: peer closed connection")
    assert line["response"]["usage"] == USAGE_BEFORE_THE_CUT[kind]


def test_a_caller_that_stops_reading_mid_stream(fake, tmp_path):
    log = tmp_path / "run.jsonl"
    with record(log), _anthropic(fake) as client:
        events = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=8, messages=MESSAGES, stream=True
        )
        next(iter(events))
        events.close()
    [line] = _lines(log)
    assert line["response"]["error"] == "the caller closed the response before its end"


def test_connection_refused_is_recorded(tmp_path):
    log = tmp_path / "run.jsonl"
    client = anthropic.Anthropic(
        api_key=ANTHROPIC_KEY, base_url="http://127.0.0.1:9", max_retries=0
    )
    with record(log), client, pytest.raises(anthropic.APIConnectionError):
        client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=MESSAGES)
    [line] = _lines(log)
    assert line["response"]["status"] is None
    assert "ConnectError" in line["response"]["error"]


def test_gzipped_json_answers_still_give_the_usage(fake, tmp_path):
    log = tmp_path / "run.jsonl"
    client = anthropic.Anthropic(
        api_key=ANTHROPIC_KEY,
        base_url=fake.url,
        max_retries=0,
        default_headers={"x-fake-gzip": "1"},
    )
    with record(log), client:
        message = client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=MESSAGES)
    assert message.content[0].text == TEXT
    assert _lines(log)[0]["response"]["usage"] == EXPECTED_USAGE["messages"]


def test_an_unwritable_log_warns_once_and_never_breaks_the_call(fake, tmp_path):
    log = tmp_path / "missing-folder" / "run.jsonl"
    said = "recording is off|never written"
    with pytest.warns(CacheVizWarning, match=said) as caught, record(log):
        assert _call("messages", fake, stream=False) == TEXT
        assert _call("messages", fake, stream=True) == TEXT
    said = [str(w.message) for w in caught if issubclass(w.category, CacheVizWarning)]
    assert len([m for m in said if "recording is off" in m]) == 1
    assert len([m for m in said if "2 recorded call(s) were never written" in m]) == 1
    assert not log.exists()


def test_concurrent_calls_give_whole_lines(fake, tmp_path):
    log = tmp_path / "run.jsonl"
    client = _anthropic(fake)

    def one(i):
        messages = [{"role": "user", "content": f"question {i} " + "x" * 5000}]
        with client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=8, messages=messages
        ) as s:
            assert "".join(s.text_stream) == TEXT

    async def many():
        async with _anthropic(fake, anthropic.AsyncAnthropic) as aclient:
            await asyncio.gather(
                *(
                    aclient.messages.create(
                        model="claude-sonnet-4-5",
                        max_tokens=8,
                        messages=[{"role": "user", "content": f"a{i}"}],
                    )
                    for i in range(12)
                )
            )

    with record(log):
        threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
        for t in threads:
            t.start()
        run_async(many())
        for t in threads:
            t.join()
    client.close()
    lines = _lines(log)  # every line parses: none interleaved
    assert len(lines) == 24
    sent = sorted(json.loads(r.body)["messages"][0]["content"] for r in fake.received)
    assert sorted(line["request"]["messages"][0]["content"] for line in lines) == sent


def test_memory_recording_analyzes_with_thread_hints(fake):
    import cacheviz

    with cacheviz.record(thread="planner") as rec:
        for _ in range(2):
            _call("messages", fake, stream=True)
    assert rec.path is None and len(rec) == 2
    analysis = rec.analyze()
    assert analysis.calls.height == 2
    assert analysis.calls["thread"].to_list() == ["planner", "planner"]
    assert analysis.calls["reported_cache_read_tokens"].to_list() == [5000, 5000]
    assert analysis.calls["prefix_tokens"][1] == analysis.calls["input_tokens"][1]


def test_decorator_sync_and_async(fake, tmp_path):
    log = tmp_path / "run.jsonl"

    @record(log)
    def sync_agent():
        return _call("chat.completions", fake, stream=False)

    @record(log)
    async def async_agent():
        return await _acall("chat.completions", fake, stream=True)

    assert sync_agent() == TEXT
    assert run_async(async_agent()) == TEXT
    _call("chat.completions", fake, stream=False)  # outside: not recorded
    assert len(_lines(log)) == 2
    assert len(fake.received) == 3


def test_other_requests_pass_unrecorded(fake, tmp_path):
    log = tmp_path / "run.jsonl"
    with record(log), _anthropic(fake) as client, pytest.raises(anthropic.NotFoundError):
        count_tokens(client, model="claude-sonnet-4-5", messages=MESSAGES)
    assert fake.received[0].path.split("?")[0] == "/v1/messages/count_tokens"
    assert log.read_text() == ""


def test_the_core_imports_without_the_record_extra():
    blocked = "import sys\nfor m in ('anthropic', 'openai', 'httpx', 'httpx2', 'aiohttp'): sys.modules[m] = None\n"
    code = (
        blocked
        + "import cacheviz, cacheviz.recording, cacheviz.recording._proxy, cacheviz.formats.otel\nprint('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "ok", out.stderr


def test_nested_recorders_each_write_their_own_meta(fake, tmp_path):
    outer, inner = tmp_path / "outer.jsonl", tmp_path / "inner.jsonl"
    with record(outer, thread="main"):
        _call("messages", fake, stream=False)
        with record(inner, thread="sub-agent"):
            _call("messages", fake, stream=True)
    assert [line["meta"] for line in _lines(outer)] == [{"thread": "main"}, {"thread": "main"}]
    [line] = _lines(inner)
    assert line["meta"] == {"thread": "sub-agent"}
    assert line["response"]["usage"] == EXPECTED_USAGE["messages"]


def test_a_stream_read_after_the_block_is_still_recorded(fake, tmp_path):
    log = tmp_path / "run.jsonl"
    with _anthropic(fake) as client:
        with record(log):
            events = client.messages.create(
                model="claude-sonnet-4-5", max_tokens=8, messages=MESSAGES, stream=True
            )
        text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    assert text == TEXT
    [line] = _lines(log)
    assert line["response"]["usage"] == EXPECTED_USAGE["messages"]


@pytest.mark.parametrize("kind", kinds()[1:])
def test_openai_sdk_at_another_base_url_records_the_api_family(kind, fake, tmp_path):
    # a gateway or a local server (here 127.0.0.1): not api.openai.com (issue 20, item 15)
    import cacheviz

    log = tmp_path / "run.jsonl"
    with record(log):
        _call(kind, fake, stream=False)
    [line] = _lines(log)
    assert line["provider"] == "openai-compatible"
    assert line["meta"] == {"base_url": f"{fake.url}/v1", "api_family": "openai"}
    [call] = cacheviz.load(log).calls
    assert call.provider == "openai"  # gpt-4o: the analysis picks OpenAI's rules by model
    assert call.meta["recorded_provider"] == "openai-compatible"
    analysis = cacheviz.load(log).analyze()
    assert analysis.calls["provider"].to_list() == ["openai"]
    assert analysis.simulate("openai").total_cost_usd is not None


def test_an_unknown_model_behind_a_compatible_server_keeps_the_family(tmp_path):
    import cacheviz
    from cacheviz.formats.native import record_line

    body = {"model": "qwen3-coder-30b", "messages": [{"role": "user", "content": "hi"}]}
    log = tmp_path / "local.jsonl"
    meta = {"base_url": "http://localhost:8000/v1", "api_family": "openai"}
    log.write_text(
        record_line(
            body,
            provider="openai-compatible",
            model=body["model"],
            api="chat.completions",
            meta=meta,
        )
        + "\n"
    )
    [call] = cacheviz.load(log).calls
    assert call.provider == "openai-compatible" and call.meta["base_url"].endswith("/v1")
