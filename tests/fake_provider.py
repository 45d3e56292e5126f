"""A fake LLM provider on 127.0.0.1 speaking the Anthropic and OpenAI wire formats.

Endpoints: POST /v1/messages (Anthropic Messages), /v1/chat/completions and /v1/responses
(OpenAI), JSON or SSE (``"stream": true``), following the providers' documented event
sequences. Every request is kept (path, headers, body bytes) so tests can compare what
the server received with what was recorded. Faults are chosen by the model name:
``error-429`` / ``error-500`` answer with a JSON error, ``reset`` cuts the connection in
the middle of a stream, ``gated`` sends two events of a stream and waits for ``gate``. Header ``x-fake-gzip: 1`` gzips a JSON answer.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TEXT_PARTS = ("Hel", "lo, ", "wor", "ld ✓")
TEXT = "".join(TEXT_PARTS)
ANTHROPIC_USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 5000,
    "output_tokens": 1,
}
ANTHROPIC_FINAL_OUTPUT = 15
OPENAI_CHAT_USAGE = {
    "prompt_tokens": 5312,
    "completion_tokens": 15,
    "total_tokens": 5327,
    "prompt_tokens_details": {"cached_tokens": 5120},
}
OPENAI_RESPONSES_USAGE = {
    "input_tokens": 5312,
    "input_tokens_details": {"cached_tokens": 4992},
    "output_tokens": 15,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 5327,
}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def anthropic_events(model: str) -> list[bytes]:
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": ANTHROPIC_USAGE,
    }
    events = [_sse("message_start", {"type": "message_start", "message": message})]
    events.append(
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
    )
    events.append(_sse("ping", {"type": "ping"}))
    for part in TEXT_PARTS:
        delta = {"type": "text_delta", "text": part}
        events.append(
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": ANTHROPIC_FINAL_OUTPUT},
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def anthropic_message(model: str) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": TEXT}],
        "model": model,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {**ANTHROPIC_USAGE, "output_tokens": ANTHROPIC_FINAL_OUTPUT},
    }


def chat_events(model: str, include_usage: bool) -> list[bytes]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model}
    events = []
    for i, part in enumerate(TEXT_PARTS):
        delta = {"role": "assistant", "content": part} if i == 0 else {"content": part}
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        events.append(_sse(None, {**base, "choices": [choice]}))
    stop = {"index": 0, "delta": {}, "finish_reason": "stop"}
    events.append(_sse(None, {**base, "choices": [stop]}))
    if include_usage:
        events.append(_sse(None, {**base, "choices": [], "usage": OPENAI_CHAT_USAGE}))
    events.append(_sse(None, "[DONE]"))
    return events


def chat_completion(model: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": TEXT}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": OPENAI_CHAT_USAGE,
    }


def response_object(model: str, status: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    content = [{"type": "output_text", "text": TEXT, "annotations": []}]
    output = (
        [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": content,
            }
        ]
        if status == "completed"
        else []
    )
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "usage": usage,
    }


def responses_events(model: str) -> list[bytes]:
    events = [
        _sse(
            "response.created",
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": response_object(model, "in_progress", None),
            },
        )
    ]
    for i, part in enumerate(TEXT_PARTS, start=1):
        events.append(
            _sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "sequence_number": i,
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": part,
                    "logprobs": [],
                },
            )
        )
    done = response_object(model, "completed", OPENAI_RESPONSES_USAGE)
    events.append(
        _sse(
            "response.completed",
            {"type": "response.completed", "sequence_number": 9, "response": done},
        )
    )
    return events


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: FakeProvider

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        self.server.received.append(
            Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        try:
            request = json.loads(body)
        except ValueError:
            self._json(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "bad JSON"},
                },
            )
            return
        model = request.get("model", "")
        if model.startswith("error-"):
            status = int(model.split("-")[1])
            self._json(
                status,
                {"type": "error", "error": {"type": "api_error", "message": f"fake {status}"}},
            )
            return
        path = self.path.split("?")[0]
        stream = bool(request.get("stream"))
        if path.endswith("/messages"):
            events, answer = anthropic_events(model), anthropic_message(model)
        elif path.endswith("/chat/completions"):
            include = bool((request.get("stream_options") or {}).get("include_usage"))
            events, answer = chat_events(model, include), chat_completion(model)
        elif path.endswith("/responses"):
            events, answer = (
                responses_events(model),
                response_object(model, "completed", OPENAI_RESPONSES_USAGE),
            )
        else:
            self._json(404, {"error": {"message": "not found"}})
            return
        if stream:
            self._stream(events, cut=model == "reset", gated=model == "gated")
        else:
            self._json(200, answer, gzipped=self.headers.get("x-fake-gzip") == "1")

    def _json(self, status: int, doc: Any, gzipped: bool = False) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("request-id", "req_fake")
        if gzipped:
            data = gzip.compress(data)
            self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[bytes], cut: bool, gated: bool = False) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for i, event in enumerate(events):
            if gated and i == 2:
                self.server.gate.wait(10)
            if cut and i == 2:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            except ConnectionError:
                self.close_connection = True
                return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class FakeProvider(ThreadingHTTPServer):
    """The fake provider; ``with FakeProvider() as fake: fake.url``."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[Received] = []
        self.gate = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is part of the tests, not an error."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
