"""Qwen Code chat records: ``~/.qwen/projects/<project>/chats/<session>.jsonl``.

Qwen Code (QwenLM/qwen-code, a Gemini CLI fork; read from its
``services/chatRecordingService.ts``) appends one ``ChatRecord`` per line:
``{uuid, parentUuid, sessionId, timestamp, type, subtype?, cwd, version, gitBranch?,
message?, usageMetadata?, model?, systemPayload?, agentId?, isSidechain?}``. Its top-level
keys are Claude Code's, so it is told apart by content: its ``message`` is a Gemini
``Content`` (``{role: "user" | "model", parts: [...]}``), not Claude's ``{role,
content}``, and only it writes ``usageMetadata`` and ``systemPayload``.

* ``type: "user"`` (the prompt) and ``"tool_result"`` (``functionResponse`` parts) are
  sent with the next request; ``"assistant"`` is the model's answer: **one call per
  assistant record**, its usage Gemini's ``usageMetadata`` (``promptTokenCount``
  includes ``cachedContentTokenCount``; ``thoughtsTokenCount`` is the reasoning part of
  the output; no cache writes are reported). Qwen Code's OpenAI-compatible generator
  (``openaiContentGenerator/converter.ts``, used for Qwen OAuth and every OpenAI-style
  endpoint) writes ``candidatesTokenCount = completion_tokens``, which already holds the
  reasoning, and ``thoughtsTokenCount = reasoning_tokens`` beside it
  (``totalTokenCount = prompt + candidates``, as real files show): the output is then
  ``candidatesTokenCount`` alone. Only when ``totalTokenCount`` counts the thoughts on top
  (Gemini's own generator) are they added to ``candidatesTokenCount``. An assistant record without
  ``usageMetadata`` is a call whose usage was not reported. Thought parts are not sent
  back.
* ``type: "system"``: ``subtype: "chat_compression"`` replaces the conversation by its
  ``systemPayload.compressedHistory``; the others (UI telemetry, slash commands, titles,
  model bindings, ...) are not calls. Qwen's telemetry records (``ui_telemetry``
  ``api_response`` events) repeat each answer's usage (same prompt and output counts;
  an answer without ``usageMetadata`` is the event logged just before it) and also hold
  calls the chat does not record (a tool's own model call, such as ``web_fetch``'s, or a
  sub-agent's): those are calls of their own, usage only, in thread ``telemetry only``
  (a real chat: 39 answers, 42 events, the 3 others made while ``web_fetch`` ran).
* Records of a sub-agent (``isSidechain``, ``agentId``) form a thread of their own,
  whose parent is the main thread.

The model is the record's ``model`` (else the last ``session_model`` binding, else
``unknown``). Requests are rebuilt (the system prompt and tools are not logged) in
Gemini's ``contents`` shape.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from cacheviz.formats._body import provider_for
from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import AGENT_KEY, Call, Session, Usage
from cacheviz.reported._usage import normalize_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "qwen-code"
DESCRIPTION = "Qwen Code chat records (~/.qwen/projects/<project>/chats/<session>.jsonl)"
_DETECT_LINES = 20
_TYPES = ("user", "assistant", "tool_result", "system")
_EXPECTED = "expected a Qwen Code chat record {uuid, sessionId, timestamp, type, message}"


def is_record(record: Any) -> bool:
    """Whether ``record`` is a Qwen Code chat record (not a Claude Code one)."""
    if not isinstance(record, dict) or record.get("type") not in _TYPES:
        return False
    if not isinstance(record.get("uuid"), str) or not isinstance(record.get("sessionId"), str):
        return False
    message = record.get("message")
    gemini = isinstance(message, dict) and isinstance(message.get("parts"), list)
    return gemini or "usageMetadata" in record or isinstance(record.get("systemPayload"), dict)


def _thoughts_inside(raw: dict[str, Any]) -> bool:
    """Whether ``candidatesTokenCount`` already holds ``thoughtsTokenCount`` (module doc)."""

    def whole(key: str) -> int | None:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    candidates, thoughts = whole("candidatesTokenCount"), whole("thoughtsTokenCount")
    if candidates is None or not thoughts:
        return False
    total, prompt = whole("totalTokenCount"), whole("promptTokenCount")
    if total is not None and prompt is not None:
        if total == prompt + candidates + thoughts:
            return False  # Gemini's convention: the thoughts on top of the candidates
        if total == prompt + candidates:
            return True
    return True  # Qwen Code's usual (OpenAI-compatible) generator


def detect(path: Path, head: bytes) -> bool:
    """Whether a Qwen Code chat record is among the first lines of ``head``."""
    for line in head.splitlines()[:_DETECT_LINES]:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if is_record(record):
            return True
    return False


def _provider(model: str) -> str:
    """The vendor whose cache rules apply (:func:`provider_for`), else ``qwen``."""
    guessed = provider_for(model)
    return "qwen" if guessed == "unknown" else guessed


def _content(message: Any, where: str) -> dict[str, Any]:
    """A Gemini ``Content`` as it is sent back: thought parts dropped."""
    if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
        msg = f"field `{where}` is {json_type(message)}; expected a Gemini Content {{role, parts}}"
        raise ValueError(msg)
    parts = [p for p in message["parts"] if not (isinstance(p, dict) and p.get("thought") is True)]
    return {"role": str(message.get("role") or "user"), "parts": parts}


class _Chat:
    """The state of reading one chat file."""

    def __init__(self, reader: LineReader, store: BlockStore) -> None:
        self.reader = reader
        self.store = store
        self.threads: dict[str, Thread] = {}
        self.calls: list[Call] = []
        self.model: str | None = None
        # api_response telemetry not yet matched to an assistant record: (line, event)
        self.responses: list[tuple[int, dict[str, Any]]] = []
        self.recent: tuple[int, dict[str, Any]] | None = None  # the last, if unmatched
        self.answered: list[tuple[Any, Any]] = []  # (prompt, candidates) of each answer

    def thread(self, key: str) -> Thread:
        found = self.threads.get(key)
        if found is None:
            found = self.threads[key] = Thread(self.store, key)
        return found

    def add(self, lineno: int, record: Any) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}"
            raise ValueError(msg)
        kind = record.get("type")
        if kind not in _TYPES:
            msg = f"field `type` is {json_type(kind)}; expected one of {', '.join(_TYPES)}"
            raise ValueError(msg)
        agent = record.get("agentId")
        sub = record.get("isSidechain") is True and isinstance(agent, str) and bool(agent)
        key = f"{AGENT_KEY}{agent}" if sub else "main"
        thread = self.thread(key)
        if kind == "system":
            self._system(lineno, record, thread)
        elif kind == "assistant":
            self._assistant(lineno, record, thread, "main" if sub else None)
        else:
            thread.append(_content(record.get("message"), "message"))

    def _system(self, lineno: int, record: dict[str, Any], thread: Thread) -> None:
        subtype = record.get("subtype")
        payload = record.get("systemPayload")
        body = payload if isinstance(payload, dict) else {}
        if subtype == "chat_compression":
            history = body.get("compressedHistory")
            if not isinstance(history, list):
                msg = (
                    f"field `systemPayload.compressedHistory` is {json_type(history)}; "
                    "expected the history after the compression"
                )
                raise ValueError(msg)
            where = "systemPayload.compressedHistory"
            thread.replace([_content(c, f"{where}[{i}]") for i, c in enumerate(history)])
            self.reader.ignore("chat compression record")
        elif subtype == "session_model" and isinstance(body.get("modelId"), str):
            self.model = body["modelId"]
            self.reader.ignore("session_model record")
        elif subtype == "ui_telemetry":
            event = body.get("uiEvent")
            name = event.get("event.name") if isinstance(event, dict) else None
            if name == "qwen-code.api_error":  # a request that failed: nothing answered
                self.reader.ignore("failed request (ui_telemetry api_error: no answer)")
            elif name == "qwen-code.api_response" and isinstance(event, dict):
                self.recent = (lineno, event)
                self.responses.append(self.recent)
            else:
                self.reader.ignore(f"ui_telemetry record ({name or 'unnamed'})")
        else:
            self.reader.ignore(f"system record ({subtype})" if subtype else "system record")

    def _assistant(
        self, lineno: int, record: dict[str, Any], thread: Thread, parent: str | None
    ) -> None:
        found = record.get("model")
        model = found if isinstance(found, str) and found else self.model or "unknown"
        if isinstance(found, str) and found:
            self.model = found
        raw = record.get("usageMetadata")
        if raw is not None and not isinstance(raw, dict):
            msg = f"field `usageMetadata` is {json_type(raw)}; expected an object"
            raise ValueError(msg)
        usage = normalize_usage(raw) if raw else None
        if usage is not None and raw and _thoughts_inside(raw):
            usage = replace(usage, output_tokens=raw.get("candidatesTokenCount"))
        if raw:
            self.answered.append((raw.get("promptTokenCount"), raw.get("candidatesTokenCount")))
        elif self.recent is not None:
            # no usage here: the api_response logged just before is this answer's
            self.responses.remove(self.recent)
            self.reader.ignore("api_response telemetry of an assistant record (the same call)")
        self.recent = None
        meta: dict[str, Any] = {"message_id": record.get("uuid")}
        if not (isinstance(found, str) and found):
            meta["model_source"] = "the session's last model" if self.model else "unknown"
        call = thread.call(
            model=model,
            provider=_provider(model),
            ts=parse_ts(record.get("timestamp"), "timestamp"),
            usage=usage,
            meta=meta,
        )
        call.line = lineno
        call.parent_hint = parent
        self.calls.append(call)
        message = record.get("message")
        if message is not None:
            thread.append(_content(message, "message"))

    def telemetry_only(self) -> None:
        """The ``api_response`` events no assistant record holds: calls of their own.

        An event is an answer's when its ``input_token_count`` and ``output_token_count``
        are the record's ``promptTokenCount`` and ``candidatesTokenCount`` (one usage,
        written twice). The others are calls the chat does not record (a tool's own model
        call, such as ``web_fetch``'s, or a sub-agent's), read with their usage alone in
        thread ``telemetry only``, in the place their event was written.
        """
        left = list(self.answered)
        extra: list[Call] = []
        for lineno, event in self.responses:
            key = (event.get("input_token_count"), event.get("output_token_count"))
            if key in left:
                left.remove(key)
                self.reader.ignore("api_response telemetry of an assistant record (the same call)")
                continue
            usage = _telemetry_usage(event)
            model = event.get("model")
            model = model if isinstance(model, str) and model else self.model or "unknown"
            if usage is None:
                self.reader.ignore("api_response telemetry without token counts")
                continue
            meta: dict[str, Any] = {"source": "ui_telemetry api_response (not in the chat)"}
            if isinstance(event.get("response_id"), str):
                meta["response_id"] = event["response_id"]
            call = self.thread("telemetry only").call(
                model=model,
                provider=_provider(model),
                ts=parse_ts(event.get("event.timestamp"), "event.timestamp"),
                usage=usage,
                meta=meta,
            )
            call.line = lineno
            call.parent_hint = "main"
            extra.append(call)
        if extra:
            self.calls = sorted([*self.calls, *extra], key=lambda c: c.line)


def _telemetry_usage(event: dict[str, Any]) -> Usage | None:
    """An ``api_response`` event's usage, by the rules of ``usageMetadata`` (module doc)."""
    as_metadata = {
        "promptTokenCount": event.get("input_token_count"),
        "cachedContentTokenCount": event.get("cached_content_token_count"),
        "candidatesTokenCount": event.get("output_token_count"),
        "thoughtsTokenCount": event.get("thoughts_token_count"),
        "totalTokenCount": event.get("total_token_count"),
    }
    shaped = {k: v for k, v in as_metadata.items() if v is not None}
    if not isinstance(shaped.get("promptTokenCount"), int):
        return None
    usage = normalize_usage(shaped)
    if usage is not None and _thoughts_inside(shaped):
        usage = replace(usage, output_tokens=shaped.get("candidatesTokenCount"))
    return usage


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Qwen Code chat file: one call per assistant record."""
    store = BlockStore()
    reader = LineReader(path, errors=errors)
    reader.rebuilds = True
    state = _Chat(reader, store)
    reader.each_record(state.add, _EXPECTED)
    state.telemetry_only()
    return reader.session(NAME, state.calls, store)
