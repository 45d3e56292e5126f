"""The proxy under odd paths, odd framing, deep bodies, slow peers and full disks."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("aiohttp", reason="the record extra is not installed")
httpx2 = pytest.importorskip("httpx2", reason="the record extra is not installed")

from cacheviz.cli import main  # noqa: E402
from cacheviz.errors import CacheVizWarning  # noqa: E402
from cacheviz.recording._proxy import serve, upstream_path  # noqa: E402

USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 5000,
    "output_tokens": 3,
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "content": [{"type": "text", "text": "hi"}],
    "usage": USAGE,
}


class Upstream:
    """A provider stand-in: answers by the request's model, keeps what it received."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.closed_after: list[float] = []  # seconds a held connection waited for its close
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.paths.append(self.path)
                self._send(200, "application/json", b"{}")

            def do_POST(self) -> None:
                outer.paths.append(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    model = json.loads(body).get("model", "")
                except (ValueError, RecursionError, AttributeError):
                    model = ""
                if model == "silent":  # never answers; notes when the proxy hangs up
                    start = time.monotonic()
                    ready, _, _ = select.select([self.connection], [], [], 20)
                    if ready and not self.connection.recv(1):
                        outer.closed_after.append(time.monotonic() - start)
                    self.close_connection = True
                    return
                if model == "cr-sse":
                    events = [
                        ("message_start", {"type": "message_start", "message": MESSAGE}),
                        ("message_stop", {"type": "message_stop"}),
                    ]
                    data = "".join(
                        f"event: {e}\rdata: {json.dumps(d)}\r\r" for e, d in events
                    ).encode()
                    self._send(200, "text/event-stream", data)
                    return
                self._send(200, "application/json", json.dumps(MESSAGE).encode())

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Upstream:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class Proxy:
    """``serve`` on its own loop in a thread, with options."""

    def __init__(self, upstream: str, log: Path, **options: object) -> None:
        self.log = log
        self.port: int | None = None
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._options = options
        self._upstream = upstream
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        def ready(port: int) -> None:
            self.port = port
            self._ready.set()

        coro = serve(self._upstream, self.log, port=0, ready=ready, **self._options)
        self._task = self._loop.create_task(coro)
        try:
            self._loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        finally:
            self._loop.close()

    def __enter__(self) -> Proxy:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def raw(self, method: str, path: str, body: bytes | None = None) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request(method, path, body=body)
        answer = connection.getresponse()
        answer.read()
        status = answer.status
        connection.close()
        return status

    def lines(self, count: int, wait: float = 10) -> list[dict]:
        deadline = time.monotonic() + wait
        while True:
            text = self.log.read_text(encoding="utf-8") if self.log.exists() else ""
            lines = [json.loads(t) for t in text.splitlines() if t.strip()]
            if len(lines) >= count or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)


@pytest.fixture
def upstream():
    with Upstream() as server:
        yield server


def _body(model: str = "claude-sonnet-4-5", **extra: object) -> bytes:
    body = {"model": model, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    return json.dumps({**body, **extra}).encode()


# -- item 3: every request stays under the upstream's path prefix -----------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/%2e%2e/admin",
        "/..%2fadmin",
        "/v1/../../admin",
        "/%2E%2E%2Fadmin",
        "/v1/%2e%2e/%2e%2e/admin",
    ],
)
def test_a_dot_dot_path_stays_under_the_upstream_prefix(upstream, tmp_path, path):
    with Proxy(f"{upstream.url}/anthropic", tmp_path / "log.jsonl") as proxy:
        proxy.raw("GET", path)
    [received] = upstream.paths
    assert received.startswith("/anthropic/"), received
    assert "/admin" in received


def test_a_plain_path_passes_byte_exact():
    assert upstream_path("/v1/messages?beta=true") == "/v1/messages?beta=true"
    assert upstream_path("/v1/a%20b") == "/v1/a%20b"


# -- item 24: an upstream URL with a query -------------------------------------------------------


def test_an_upstream_query_is_kept_and_the_path_goes_before_it(upstream, tmp_path):
    with Proxy(f"{upstream.url}/anthropic?tenant=7", tmp_path / "log.jsonl") as proxy:
        proxy.raw("POST", "/v1/messages?beta=true", _body())
    assert upstream.paths == ["/anthropic/v1/messages?tenant=7&beta=true"]


# -- item 9: SSE with CR-only line endings ------------------------------------------------------


def test_sse_with_cr_line_endings_gives_usage(upstream, tmp_path):
    with Proxy(upstream.url, tmp_path / "log.jsonl") as proxy:
        assert proxy.raw("POST", "/v1/messages", _body("cr-sse", stream=True)) == 200
        [line] = proxy.lines(1)
    assert line["response"]["usage"]["cache_read_input_tokens"] == 5000


def test_sse_cr_lf_split_across_chunks_is_one_boundary():
    from cacheviz.recording._log import _UsageParser

    parser = _UsageParser("text/event-stream", "")
    event = f"event: message_start\r\ndata: {json.dumps({'message': MESSAGE})}\r\n\r\n"
    cut = event.index("\r\n") + 1  # between CR and LF
    for piece in (event[:cut], event[cut:]):
        parser.feed(piece.encode())
    parser.finish(200)
    assert parser.usage["cache_read_input_tokens"] == 5000


# -- item 11: a deeply nested body --------------------------------------------------------------


def test_a_deeply_nested_body_still_gets_upstreams_answer(upstream, tmp_path):
    deep = b'{"model": "claude-sonnet-4-5", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    log = tmp_path / "log.jsonl"
    with (
        pytest.warns(CacheVizWarning, match="nested too deeply"),
        Proxy(upstream.url, log) as proxy,
    ):
        assert proxy.raw("POST", "/v1/messages", deep) == 200
    assert len(upstream.paths) == 1


# -- items 18, 19: timeouts, a caller that leaves, streaming first ------------------------------


def test_a_silent_upstream_times_out_with_a_504(upstream, tmp_path):
    with Proxy(upstream.url, tmp_path / "log.jsonl", read_timeout=0.5) as proxy:
        start = time.monotonic()
        assert proxy.raw("POST", "/v1/messages", _body("silent")) == 504
        assert time.monotonic() - start < 5
        [line] = proxy.lines(1)
    assert "timed out" in line["response"]["error"]


def test_the_upstream_is_hung_up_when_the_caller_leaves(upstream, tmp_path):
    with Proxy(upstream.url, tmp_path / "log.jsonl") as proxy:
        with pytest.raises(httpx2.TimeoutException), httpx2.Client(timeout=0.5) as client:
            client.post(f"{proxy.url}/v1/messages", content=_body("silent"))
        deadline = time.monotonic() + 5
        while not upstream.closed_after and time.monotonic() < deadline:
            time.sleep(0.05)
        assert upstream.closed_after, "the proxy kept the upstream connection"
        assert upstream.closed_after[0] < 3
        [line] = proxy.lines(1)
    assert "caller" in line["response"]["error"]


def test_a_slow_caller_body_times_out(upstream, tmp_path):
    with Proxy(upstream.url, tmp_path / "log.jsonl", read_timeout=0.5) as proxy:
        sock = socket.create_connection(("127.0.0.1", proxy.port))
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        sock.settimeout(5)
        start = time.monotonic()
        answer = sock.recv(1024)
        sock.close()
    assert time.monotonic() - start < 4
    assert answer.startswith(b"HTTP/1.1 408") or answer == b""
    assert upstream.paths == []


def test_slow_headers_are_cut_off(upstream, tmp_path):
    with Proxy(upstream.url, tmp_path / "log.jsonl", read_timeout=0.5) as proxy:
        sock = socket.create_connection(("127.0.0.1", proxy.port))
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHo")
        sock.settimeout(5)
        start = time.monotonic()
        answer = sock.recv(1024)
        sock.close()
    assert answer == b""
    assert time.monotonic() - start < 4


def test_the_response_is_not_held_for_the_recording(upstream, tmp_path):
    def slow(text: str) -> str:
        time.sleep(2)
        return text

    with Proxy(upstream.url, tmp_path / "log.jsonl", redact=slow) as proxy:
        start = time.monotonic()
        assert proxy.raw("POST", "/v1/messages", _body()) == 200
        assert time.monotonic() - start < 1.5
        assert len(proxy.lines(1)) == 1  # written once the redaction is done


# -- item 12 and 24: the log file -------------------------------------------------------------


def test_a_restarted_proxy_starts_on_a_fresh_line(upstream, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"ts": "2026-01-01T00:00:00Z", "provider": "anthro', encoding="utf-8")
    with Proxy(upstream.url, log) as proxy:
        proxy.raw("POST", "/v1/messages", _body())
        time.sleep(0.3)
    last = log.read_text(encoding="utf-8").splitlines()[-1]
    assert json.loads(last)["response"]["usage"]["cache_read_input_tokens"] == 5000


@pytest.mark.parametrize("where", ["dir", "missing-folder"])
def test_an_unwritable_output_is_one_error_before_starting(tmp_path, capsys, where):
    target = tmp_path if where == "dir" else tmp_path / "no" / "such" / "log.jsonl"
    status = main(["proxy", "--upstream", "http://127.0.0.1:9", "-o", str(target), "--port", "0"])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cacheviz: error:") and str(target) in err and "\n" not in err


def test_a_public_host_warns(monkeypatch, tmp_path, capsys):
    import cacheviz.recording._proxy as proxy_module

    def stop_at_once(*args: object, sock: socket.socket, **kwargs: object) -> None:
        sock.close()
        raise KeyboardInterrupt  # Ctrl-C as soon as it would start

    monkeypatch.setattr(proxy_module, "serve", stop_at_once)
    args = ["proxy", "--upstream", "http://127.0.0.1:9", "-o", str(tmp_path / "l.jsonl")]
    assert main([*args, "--host", "0.0.0.0", "--port", "0"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "0.0.0.0" in err


# -- record(): items 8, 12, 14 ------------------------------------------------------------------


def _post(url: str, model: str = "claude-sonnet-4-5") -> int:
    with httpx2.Client() as client:
        return client.post(f"{url}/v1/messages", content=_body(model)).status_code


def test_a_failing_custom_redactor_falls_back_with_a_warning(upstream, tmp_path):
    from cacheviz.recording import record

    def broken(text: str) -> str:
        raise ValueError("my redactor is broken")

    log = tmp_path / "run.jsonl"
    with pytest.warns(CacheVizWarning, match="my redactor is broken"), record(log, redact=broken):
        assert _post(upstream.url) == 200
    [line] = [json.loads(t) for t in log.read_text(encoding="utf-8").splitlines()]
    assert line["response"]["usage"]["cache_read_input_tokens"] == 5000


@pytest.mark.parametrize("target", ["folder", "/dev/full", "/dev/zero"])
def test_record_refuses_a_folder_or_a_device_up_front(tmp_path, target):
    from cacheviz.errors import RecordingPathError
    from cacheviz.recording import record

    path = tmp_path if target == "folder" else Path(target)
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    with pytest.raises(RecordingPathError, match=r"folder|regular file"):
        record(path)


def test_a_full_disk_warns_once_and_the_recorder_says_so(monkeypatch, upstream, tmp_path):
    """Simulated: half a line reaches the disk, then ``ENOSPC`` (the real one, a file-size
    limit, is in test_full_disk.py); the half is cut back and the call written later."""
    import errno

    from cacheviz.recording import _log as log_module
    from cacheviz.recording import record

    log = tmp_path / "run.jsonl"
    real_write = os.write
    full = {"failures": 2, "fd": None}  # the disk is full for two writes, then has space
    real_open = os.open

    def opener(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if str(path) == str(log):
            full["fd"] = fd
        return fd

    def write(fd, data):
        if full["failures"] and fd == full["fd"]:
            full["failures"] -= 1
            real_write(fd, bytes(data)[: len(data) // 2])  # half a line reaches the disk
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(log_module.os, "open", opener)
    monkeypatch.setattr(log_module.os, "write", write)
    said = "No space left|written again"
    with pytest.warns(CacheVizWarning, match=said) as caught, record(log) as rec:
        for _ in range(3):
            assert _post(upstream.url) == 200
    monkeypatch.undo()
    rec_error = rec.error
    assert len([w for w in caught if "No space" in str(w.message)]) == 1
    assert rec_error is not None and "No space left" in rec_error
    lines = [json.loads(t) for t in log.read_text(encoding="utf-8").splitlines()]
    assert [line["response"]["status"] for line in lines] == [200, 200, 200]  # none lost
    assert len(rec.session().calls) == 3


def test_stopping_with_a_call_in_flight_is_prompt_and_recorded(upstream, tmp_path):
    log = tmp_path / "log.jsonl"
    proxy = Proxy(upstream.url, log).__enter__()

    def call() -> None:
        with contextlib.suppress(OSError, http.client.HTTPException):
            proxy.raw("POST", "/v1/messages", _body("silent"))

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    deadline = time.monotonic() + 5
    while not upstream.paths and time.monotonic() < deadline:
        time.sleep(0.05)
    start = time.monotonic()
    proxy.__exit__(None, None, None)  # what Ctrl-C does: cancel serve()
    assert time.monotonic() - start < 5
    [line] = [json.loads(t) for t in log.read_text(encoding="utf-8").splitlines()]
    assert "unreachable" not in line["response"]["error"]
    assert "proxy stopped" in line["response"]["error"]
