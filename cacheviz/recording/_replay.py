"""``cacheviz replay``: send a session's requests to a local engine and record its answers.

Each call of the session becomes one OpenAI chat request, in order, to the engine at
the URL the user names (vLLM, SGLang, ``llama-server``: anything that speaks
``/v1/chat/completions``); nothing is sent anywhere else (no proxy is used, whatever
the environment says). A request is the call's blocks as text: the system blocks and
the tool definitions (as JSON lines under ``# Tools``) make the system message, each
message block one message of its role (``user`` for roles a chat template may refuse).
The body is redacted before it is sent, so the engine sees exactly what the log keeps.

Each answer becomes one line of a cacheviz request log (docs/format.md): the request as
sent, ``response.usage`` (``prompt_tokens_details.cached_tokens``; from llama-server's
``timings.cache_n`` when the usage lacks it), ``response.timings`` (llama-server's
``prompt_n``, ``prompt_ms``, ...; for vLLM ``prompt_ms`` alone: what its
``vllm:request_prefill_time_seconds`` in ``/metrics`` grew by over the request, kept only
when that histogram counted this one request and no other), ``response.duration_ms``,
and the prompt's token ids
in ``response.prompt_token_ids`` (the engine's own, from the response with vLLM's
``return_token_ids``, else from its ``/tokenize`` endpoint). ``meta.engine`` names the
engine (``owned_by`` of its ``/v1/models``), for vLLM its block size (its
``/metrics``), for llama-server its slots (``/props``), so that ``cacheviz simulate``
runs its rule as the engine was set up.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cacheviz.errors import CacheVizError
from cacheviz.formats.native import record_line
from cacheviz.recording._log import LogWriter, check_log_path, now_iso, redact_body
from cacheviz.redact import redact
from cacheviz.request._chat import chat_messages

ENGINES = ("llamacpp", "vllm", "sglang")
"""The engines ``owned_by`` names (``/v1/models``), as cacheviz's provider ids."""


class EngineError(CacheVizError):
    """The engine could not be reached or answered with an error (one line)."""


def engine_base(url: str) -> str:
    """The engine's base URL (``http://host:port``, any ``/v1`` suffix removed).

    Raises
    ------
    EngineError
        For a URL that is not ``http://`` or ``https://`` with a host.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        msg = f"--engine {url!r}: expected the engine's URL, e.g. http://127.0.0.1:8080"
        raise EngineError(msg)
    path = parts.path.rstrip("/")
    path = path.removesuffix("/v1")
    return f"{parts.scheme}://{parts.netloc}{path}"


@dataclass
class EngineClient:
    """JSON over HTTP to one engine, and nowhere else (no proxy)."""

    base: str
    timeout: float = 600.0
    _opener: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def request(self, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """``(status, body)`` of a GET (``body`` ``None``) or a JSON POST to ``path``."""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        req = urllib.request.Request(self.base + path, data=body, headers=headers)
        try:
            with self._opener.open(req, timeout=self.timeout) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read()
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            msg = f"{self.base}{path}: the engine did not answer ({reason}); is it running?"
            raise EngineError(msg) from None

    def json(self, path: str, body: Any = None) -> Any:
        """The JSON answer of ``path`` (``None`` when it failed or is not JSON)."""
        data = None if body is None else json.dumps(body).encode()
        status, raw = self.request(path, data)
        if status >= 400:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None


@dataclass
class Engine:
    """What the engine says it is: cacheviz's id for it, the model, its setup."""

    kind: str | None
    model: str | None
    setup: dict[str, Any] = field(default_factory=dict)


def identify(client: EngineClient, kind: str | None, model: str | None) -> Engine:
    """The engine's kind and model (``/v1/models``) unless given, and its setup.

    vLLM's block size (``/metrics``); llama-server's slots (``/props`` ``total_slots``).
    """
    listing = client.json("/v1/models") if kind is None or model is None else None
    first = {}
    if isinstance(listing, dict) and isinstance(listing.get("data"), list) and listing["data"]:
        first = listing["data"][0] if isinstance(listing["data"][0], dict) else {}
    if kind is None:
        owner = str(first.get("owned_by", "")).lower().replace(".", "").replace("-", "")
        kind = next((name for name in ENGINES if owner.startswith(name)), None)
    if model is None and isinstance(first.get("id"), str):
        model = first["id"]
    setup: dict[str, Any] = {}
    if kind == "vllm":
        status, raw = client.request("/metrics")
        found = re.search(rb'vllm:cache_config_info\{[^}]*block_size="(\d+)"', raw)
        if status < 400 and found:
            setup["block_size"] = int(found.group(1))
    elif kind == "llamacpp":
        props = client.json("/props")
        slots = props.get("total_slots") if isinstance(props, dict) else None
        if type(slots) is int and slots > 0:
            setup["slots"] = slots
    return Engine(kind, model, setup)


_PREFILL_METRIC = re.compile(
    rb"^vllm:request_prefill_time_seconds_(sum|count)\{[^}]*\} ([0-9.eE+-]+)$", re.M
)


def prefill_clock(client: EngineClient) -> tuple[float, float] | None:
    """The prefill-time histogram of vLLM so far, ``(seconds, requests)`` (``/metrics``).

    ``None`` when the engine has no such metric (one engine only: the sums of several
    are not told apart).
    """
    status, raw = client.request("/metrics")
    if status >= 400:
        return None
    found: dict[bytes, list[float]] = {}
    for name, value in _PREFILL_METRIC.findall(raw):
        try:
            found.setdefault(name, []).append(float(value))
        except ValueError:
            return None
    if len(found.get(b"sum", [])) != 1 or len(found.get(b"count", [])) != 1:
        return None
    return found[b"sum"][0], found[b"count"][0]


def vllm_prompt_ms(
    before: tuple[float, float] | None, after: tuple[float, float] | None
) -> float | None:
    """The prefill time of the one request served between two :func:`prefill_clock` reads."""
    if before is None or after is None or after[1] - before[1] != 1:
        return None  # not read, or other requests were served meanwhile
    return round((after[0] - before[0]) * 1000, 3)


def prompt_ids(
    client: EngineClient, engine: Engine, answer: dict[str, Any], body: dict[str, Any]
) -> list[int] | None:
    """The engine's token ids of the prompt: from the answer, else its ``/tokenize``."""
    ids = answer.get("prompt_token_ids")
    if isinstance(ids, list) and ids:
        return ids
    if engine.kind == "llamacpp":
        rendered = client.json("/apply-template", {"messages": body["messages"]})
        prompt = rendered.get("prompt") if isinstance(rendered, dict) else None
        if not isinstance(prompt, str):
            return None
        found = client.json(
            "/tokenize", {"content": prompt, "add_special": True, "parse_special": True}
        )
    else:
        found = client.json(
            "/tokenize",
            {"model": body["model"], "messages": body["messages"], "add_generation_prompt": True},
        )
    tokens = found.get("tokens") if isinstance(found, dict) else None
    if isinstance(tokens, list) and all(type(t) is int for t in tokens):
        return tokens
    return None


def engine_usage(answer: dict[str, Any]) -> dict[str, Any] | None:
    """The answer's usage, with llama-server's ``timings.cache_n`` as its cached tokens."""
    usage = answer.get("usage")
    usage = dict(usage) if isinstance(usage, dict) else None
    timings = answer.get("timings")
    cache_n = timings.get("cache_n") if isinstance(timings, dict) else None
    if usage is not None and isinstance(cache_n, int):
        details = usage.get("prompt_tokens_details")
        if not isinstance(details, dict) or details.get("cached_tokens") is None:
            usage["prompt_tokens_details"] = {**(details or {}), "cached_tokens": cache_n}
    return usage


@dataclass
class ReplayResult:
    """What :func:`replay_session` wrote."""

    path: Path
    engine: Engine
    calls: int


def replay_session(
    session: Any,
    url: str,
    log: str | Path,
    *,
    kind: str | None = None,
    model: str | None = None,
    max_tokens: int = 1,
    timeout: float = 600.0,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Send ``session``'s calls, in order, to the engine at ``url``; log each answer.

    Parameters
    ----------
    session
        A loaded :class:`~cacheviz.model.Session`.
    url
        The engine's base URL (``http://127.0.0.1:8080``; a ``/v1`` suffix is fine).
    log
        The request log written (appended to).
    kind, model
        The engine (``llamacpp``, ``vllm``, ``sglang``) and the model to ask for; by
        default what the engine's ``/v1/models`` says.
    max_tokens
        Tokens generated per call (1: the prefill is nearly the whole time).
    timeout
        Seconds to wait for one answer.
    progress
        Called with ``(done, total)`` after each call.

    Raises
    ------
    EngineError
        The URL is not one, the engine cannot be reached, an answer is an error, or no
        model was named and the engine lists none.
    """
    base = engine_base(url)
    client = EngineClient(base, timeout)
    path = check_log_path(log, create=True)
    engine = identify(client, kind, model)
    if engine.model is None:
        msg = f"{base}/v1/models: the engine lists no model; name one with --model"
        raise EngineError(msg)
    writer = LogWriter(path)
    writer.open()
    try:
        for done, call in enumerate(session.calls, 1):
            _one(client, engine, session, call, writer, max_tokens)
            if progress is not None:
                progress(done, len(session.calls))
    finally:
        writer.close()
    return ReplayResult(path, engine, len(session.calls))


def _one(
    client: EngineClient,
    engine: Engine,
    session: Any,
    call: Any,
    writer: LogWriter,
    max_tokens: int,
) -> None:
    body: dict[str, Any] = {
        "model": engine.model,
        "messages": chat_messages(call, session.contents),
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": False,
    }
    if engine.kind == "llamacpp":
        body["cache_prompt"] = True
    elif engine.kind == "vllm":
        body["return_token_ids"] = True
    sent = redact_body(json.dumps(body, ensure_ascii=False), redact)
    clock = prefill_clock(client) if engine.kind == "vllm" else None
    ts = now_iso()
    started = time.perf_counter()
    status, raw = client.request("/v1/chat/completions", sent.encode())
    duration = round((time.perf_counter() - started) * 1000, 1)
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if status >= 400 or not isinstance(answer, dict):
        text = raw[:300].decode("utf-8", "replace").replace("\n", " ")
        msg = f"call {call.index}: the engine answered {status}: {text}"
        raise EngineError(msg)
    request = json.loads(sent)
    response: dict[str, Any] = {"status": status, "duration_ms": duration}
    if isinstance(answer.get("timings"), dict):
        response["timings"] = answer["timings"]
    elif clock is not None:
        prompt_ms = vllm_prompt_ms(clock, prefill_clock(client))
        if prompt_ms is not None:
            response["timings"] = {"prompt_ms": prompt_ms}
    ids = prompt_ids(client, engine, answer, request)
    if ids is not None:
        response["prompt_token_ids"] = ids
    meta: dict[str, Any] = {"engine": {"name": engine.kind, "url": client.base, **engine.setup}}
    meta["replay_of"] = call.index
    if call.thread_hint:
        meta["thread"] = call.thread_hint
    writer.write(
        record_line(
            request,
            provider=engine.kind or "openai-compatible",
            model=str(engine.model),
            api="chat.completions",
            ts=ts,
            usage=engine_usage(answer),
            response=response,
            meta=meta,
        )
    )


__all__ = [
    "ENGINES",
    "Engine",
    "EngineClient",
    "EngineError",
    "ReplayResult",
    "engine_base",
    "engine_usage",
    "identify",
    "prefill_clock",
    "prompt_ids",
    "replay_session",
    "vllm_prompt_ms",
]
