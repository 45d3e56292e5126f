"""`cacheviz proxy`: forwards to a fake provider on 127.0.0.1, passes streams through, records."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from pathlib import Path

import pytest
from fake_provider import ANTHROPIC_USAGE, OPENAI_CHAT_USAGE, TEXT, FakeProvider
from sdk_majors import available_kinds

pytest.importorskip("aiohttp", reason="the record extra is not installed")
anthropic = pytest.importorskip("anthropic", reason="the record extra is not installed")
openai = pytest.importorskip("openai", reason="the record extra is not installed")
httpx2 = pytest.importorskip("httpx2", reason="the record extra is not installed")

from cacheviz.cli import main  # noqa: E402
from cacheviz.recording._proxy import serve  # noqa: E402

KEY = "sk-ant-api03-PROXYKEYdoNotLogMe0123456789"


class RunningProxy:
    """The proxy on its own event loop in a thread, on a free port."""

    def __init__(self, upstream: str, log: Path) -> None:
        self.log = log
        self.port: int | None = None
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._task = None
        self._thread = threading.Thread(target=self._run, args=(upstream,), daemon=True)

    def _run(self, upstream: str) -> None:
        def ready(port):
            self.port = port
            self._ready.set()

        self._task = self._loop.create_task(serve(upstream, self.log, port=0, ready=ready))
        try:
            self._loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        finally:
            self._loop.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RunningProxy:
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(10)

    def lines(self, count: int) -> list[dict]:
        """The log's lines, once ``count`` of them are written (waits up to 30 s: a loaded machine)."""
        deadline = time.monotonic() + 30
        while True:
            text = self.log.read_bytes() if self.log.exists() else b""
            # only whole lines: a long line may be read while it is being written
            complete = text[: text.rfind(b"\n") + 1].decode("utf-8")
            lines = [json.loads(t) for t in complete.splitlines()]
            if len(lines) >= count or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)


@pytest.fixture(scope="module")
def fake():
    with FakeProvider() as server:
        yield server


@pytest.fixture
def proxy(fake, tmp_path):
    fake.received.clear()
    with RunningProxy(fake.url, tmp_path / "proxy.jsonl") as running:
        yield running


def test_bodies_pass_unchanged_and_are_recorded_verbatim(proxy, fake):
    # odd spacing, key order and escapes: the bytes a cache keys on
    body = '{"model": "claude-sonnet-4-5","max_tokens":8,  "messages":[{"role":"user","content":"caf\\u00e9 ✓"}]}'
    with httpx2.Client() as client:
        answer = client.post(
            f"{proxy.url}/v1/messages",
            content=body.encode(),
            headers={"x-api-key": KEY, "content-type": "application/json"},
        )
    assert answer.status_code == 200
    assert answer.json()["content"][0]["text"] == TEXT
    [received] = fake.received
    assert received.body == body.encode()
    assert received.headers["x-api-key"] == KEY
    assert received.headers["content-type"] == "application/json"
    [line] = proxy.lines(1)
    assert line["request"] == json.loads(body)
    assert body in proxy.log.read_text(encoding="utf-8")
    assert line["response"]["status"] == 200
    assert (
        line["response"]["usage"]["cache_read_input_tokens"]
        == ANTHROPIC_USAGE["cache_read_input_tokens"]
    )
    assert KEY not in proxy.log.read_text(encoding="utf-8")


def test_real_sdks_through_the_proxy(proxy, fake):
    messages = [{"role": "user", "content": "hi"}]
    with (
        anthropic.Anthropic(api_key=KEY, base_url=proxy.url, max_retries=0) as client,
        client.messages.stream(
            model="claude-sonnet-4-5", max_tokens=8, messages=messages
        ) as events,
    ):
        assert "".join(events.text_stream) == TEXT
    with openai.OpenAI(api_key="sk-x", base_url=f"{proxy.url}/v1", max_retries=0) as client:
        chunks = client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TEXT
        if "responses" in available_kinds():  # openai >= 1.66
            assert client.responses.create(model="gpt-4o", input="hi").output_text == TEXT
    # a line is written when its answer ends: a streamed answer's line may come after the next
    # call's, so the log is compared as a set of calls, each line with its own request
    lines = proxy.lines(len(available_kinds()))
    assert sorted(line["api"] for line in lines) == sorted(available_kinds())
    received = sorted(json.dumps(json.loads(r.body), sort_keys=True) for r in fake.received)
    assert sorted(json.dumps(line["request"], sort_keys=True) for line in lines) == received
    [chat] = [
        line
        for line in lines
        if line["request"].get("model") == "gpt-4o" and "messages" in line["request"]
    ]
    assert chat["response"]["usage"] == OPENAI_CHAT_USAGE
    assert all("error" not in line["response"] for line in lines)


def test_sse_is_not_buffered(proxy, fake):
    fake.gate.clear()
    body = {
        "model": "gated",
        "max_tokens": 8,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with (
        httpx2.Client(timeout=20) as client,
        client.stream("POST", f"{proxy.url}/v1/messages", json=body) as answer,
    ):
        chunks = answer.iter_raw()
        first = next(chunks)
        # the server holds the rest of the stream until the gate opens: the first event
        # can only be here if the proxy passed it on as it came
        assert not fake.gate.is_set()
        assert b"message_start" in first
        fake.gate.set()
        rest = b"".join(chunks)
    assert b"message_stop" in first + rest
    [line] = proxy.lines(1)
    assert line["response"]["usage"]["output_tokens"] == 15


def test_upstream_errors_pass_through_with_their_status(proxy):
    body = {"model": "error-429", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    with httpx2.Client() as client:
        answer = client.post(f"{proxy.url}/v1/messages", json=body)
    assert answer.status_code == 429
    assert answer.json() == {"type": "error", "error": {"type": "api_error", "message": "fake 429"}}
    [line] = proxy.lines(1)
    assert line["response"]["status"] == 429
    assert line["response"]["error"]["message"] == "fake 429"


def test_an_unreachable_upstream_is_a_502_and_recorded(tmp_path):
    with (
        RunningProxy("http://127.0.0.1:9", tmp_path / "p.jsonl") as proxy,
        httpx2.Client() as client,
    ):
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}],
        }
        answer = client.post(f"{proxy.url}/v1/messages", json=body)
        assert answer.status_code == 502
        assert "cacheviz proxy" in answer.json()["error"]["message"]
        [line] = proxy.lines(1)
    assert line["response"]["status"] == 502
    assert "upstream unreachable" in line["response"]["error"]


def test_an_upstream_cut_reaches_the_caller_and_is_recorded(proxy):
    body = {
        "model": "reset",
        "max_tokens": 8,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with (
        httpx2.Client() as client,
        pytest.raises(httpx2.RemoteProtocolError),
        client.stream("POST", f"{proxy.url}/v1/messages", json=body) as answer,
    ):
        answer.read()
    [line] = proxy.lines(1)
    assert "upstream closed mid-response" in line["response"]["error"]


def test_a_caller_that_disconnects_mid_stream_is_recorded(proxy, fake):
    fake.gate.clear()
    body = {
        "model": "gated",
        "max_tokens": 8,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with (
        httpx2.Client(timeout=20) as client,
        client.stream("POST", f"{proxy.url}/v1/messages", json=body) as answer,
    ):
        next(answer.iter_raw())
    fake.gate.set()  # the rest of the stream now meets a closed caller
    [line] = proxy.lines(1)
    assert line["response"]["status"] == 200
    assert line["response"]["error"] == "the caller disconnected before the end of the response"


def test_other_paths_pass_through_unrecorded(proxy, fake):
    with httpx2.Client() as client:
        answer = client.post(
            f"{proxy.url}/v1/messages/count_tokens", json={"model": "m", "messages": []}
        )
    assert answer.status_code == 404
    assert fake.received[0].path == "/v1/messages/count_tokens"
    assert proxy.lines(0) == []


def test_a_busy_port_is_refused_in_one_line(capsys, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        status = main(
            [
                "proxy",
                "--upstream",
                "http://127.0.0.1:9",
                "--port",
                str(port),
                "-o",
                str(tmp_path / "x.jsonl"),
            ]
        )
    err = capsys.readouterr().err
    assert status == 2
    assert (
        err
        == f"cacheviz: error: port {port} on 127.0.0.1 is busy; stop what uses it or pick another with --port\n"
    )


def test_a_bad_upstream_is_one_line(capsys, tmp_path):
    status = main(
        ["proxy", "--upstream", "api.anthropic.com", "--port", "0", "-o", str(tmp_path / "x.jsonl")]
    )
    assert status == 2
    assert capsys.readouterr().err.count("\n") == 1
