"""A fake self-hosted engine on 127.0.0.1 speaking the OpenAI chat API, as llama-server or vLLM do.

Its tokenizer is a ChatML render cut into bytes (one token a byte). As ``llamacpp`` it
has one slot (previous-prompt reuse, at most ``len - 1``; ``/props`` says so), reports
``prompt_tokens_details.cached_tokens`` and llama-server's ``timings``, and has
``/apply-template`` and ``/tokenize``; as ``vllm`` it keeps every full block of
``block_size`` tokens it has seen, returns ``prompt_token_ids`` when asked
(``return_token_ids``), forgets them on ``/reset_prefix_cache`` and says its block
size in ``/metrics``, where ``vllm:request_prefill_time_seconds`` (``_sum``,
``_count``) adds up its requests' prefill times (``others``: requests of other clients
counted with each one). The prefill time it reports follows a known cost model
(:data:`COST`), so a fit can be checked.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COST = (2.0, 0.05, 1e-4)  # fixed ms, ms per uncached token, ms per attention pair
MODEL = "fake-qwen"


def render(messages: list[dict[str, Any]]) -> str:
    """ChatML, as Qwen2's template writes it, with the assistant's turn opened."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return text + "<|im_start|>assistant\n"


def tokens_of(text: str) -> list[int]:
    return list(text.encode())


def prefill_ms(uncached: int, cached: int) -> float:
    fixed, per_token, per_pair = COST
    return fixed + per_token * uncached + per_pair * uncached * (cached + uncached / 2)


class FakeEngine:
    """The server; ``with FakeEngine("llamacpp") as engine: engine.url``."""

    def __init__(self, kind: str = "llamacpp", block_size: int = 16) -> None:
        self.kind = kind
        self.block_size = block_size
        self.slot: list[int] = []
        self.blocks: set[int] = set()
        self.prefill_seconds = 0.0  # vLLM's prefill-time histogram: its sum and count
        self.prefill_count = 0
        self.others = 0  # requests of other clients served beside each of ours
        self.paths: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any, text: bool = False) -> None:
                data = payload.encode() if text else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if text else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                engine.paths.append(self.path)
                if self.path == "/v1/models":
                    data = [{"id": MODEL, "object": "model", "owned_by": engine.kind}]
                    self._send(200, {"object": "list", "data": data})
                elif self.path == "/props" and engine.kind == "llamacpp":
                    self._send(200, {"total_slots": 1, "model_path": MODEL})
                elif self.path == "/metrics" and engine.kind == "vllm":
                    line = f'vllm:cache_config_info{{block_size="{engine.block_size}",x="y"}} 1.0\n'
                    line += (
                        'vllm:request_prefill_time_seconds_sum{engine="0",model_name="m"} '
                        f"{engine.prefill_seconds}\n"
                        'vllm:request_prefill_time_seconds_count{engine="0",model_name="m"} '
                        f"{float(engine.prefill_count)}\n"
                    )
                    self._send(200, line, text=True)
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                engine.paths.append(self.path)
                size = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(size))
                if self.path == "/v1/chat/completions":
                    engine.bodies.append(body)
                    self._send(200, engine.answer(body))
                elif self.path == "/apply-template" and engine.kind == "llamacpp":
                    self._send(200, {"prompt": render(body["messages"])})
                elif self.path == "/tokenize" and engine.kind == "llamacpp":
                    self._send(200, {"tokens": tokens_of(body["content"])})
                elif self.path == "/reset_prefix_cache" and engine.kind == "vllm":
                    engine.blocks.clear()
                    self._send(200, {})
                else:
                    self._send(404, {"error": "not found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("model") != MODEL:
            return {"error": {"message": f"no model {body.get('model')!r}"}}
        ids = tokens_of(render(body["messages"]))
        n = len(ids)
        if self.kind == "llamacpp":
            common = 0
            for a, b in zip(self.slot, ids, strict=False):
                if a != b:
                    break
                common += 1
            cached = min(common, n - 1)
            self.slot = ids
        else:
            size, keys, parent = self.block_size, [], None
            for j in range(n // size):  # a chain key per full block, as vLLM's hashes
                parent = (parent, tuple(ids[j * size : (j + 1) * size]))
                keys.append(hash(parent))
            limit, cached = (n - 1) // size, 0
            while cached < limit and keys[cached] in self.blocks:
                cached += 1
            cached *= size
            self.blocks.update(keys)
            self.prefill_seconds += prefill_ms(n - cached, cached) / 1000 + 0.5 * self.others
            self.prefill_count += 1 + self.others
        usage = {
            "prompt_tokens": n,
            "completion_tokens": 1,
            "total_tokens": n + 1,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        out: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}],
            "usage": usage,
        }
        if self.kind == "llamacpp":
            out["timings"] = {
                "cache_n": cached,
                "prompt_n": n - cached,
                "prompt_ms": prefill_ms(n - cached, cached),
            }
        if body.get("return_token_ids"):
            out["prompt_token_ids"] = ids
        return out

    def __enter__(self) -> FakeEngine:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
