"""Cline task folders (``<globalStorage>/saoudrizwan.claude-dev/tasks/<task id>/``).

A task folder holds ``api_conversation_history.json`` (the Anthropic-format messages
Cline sends, without system prompt and tools), ``ui_messages.json`` (the chat events)
and, optionally, ``task_metadata.json`` (``model_usage``: which model was used when).

Calls. Every ``say: "api_req_started"`` event is one request; its ``text`` is JSON with
the usage Cline recorded (``tokensIn``, ``tokensOut``, ``cacheWrites``, ``cacheReads``,
``cost``). ``tokensIn`` is Anthropic-style: it excludes cache reads and writes. Cline
stamps each UI event with ``conversationHistoryIndex`` = index of the last history
message when the event was written; ``api_req_started`` is written just before the new
user turn is appended, so call *k* sends ``history[:conversationHistoryIndex + 2]`` and
its answer is the message after that. Failed requests, as Cline records them:

* ``cancelReason`` set (``streaming_failed``, ``user_cancelled``): the request was sent
  and the stream started; Cline appends the partial answer to the history. A call, with
  whatever usage was recorded.
* no usage, no cost, no ``cancelReason``: nothing was streamed back (the first chunk
  failed, or the task stopped before sending). Cline itself deletes such an event on
  resume; it is not a call (counted in ``Session.ignored``).
* retries (``api_req_retried`` events, automatic retries) reuse one ``api_req_started``:
  one call, with the usage of the attempt that answered; ``meta["retries"]`` counts them.

Truncation. Cline drops ``conversationHistoryDeletedRange = [start, end]`` (inclusive)
from the history it sends, and stamps the range in force on every UI event. The range
can change while a request is being prepared, after its ``api_req_started`` was written,
so a call's range is the one stamped on the first event after it (else the last seen).

The requests are rebuilt with an unlogged prefix (system prompt + tools), sized later
from the first call's reported usage. Cline's cost is kept in
``meta["reported_cost_usd"]``. Not applied: ``context_history.json`` (Cline's in-place
edits of earlier file reads), and the truncation notice Cline adds to the last message.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._body import provider_for
from cacheviz.formats._conversation import Thread
from cacheviz.formats._lines import LineReader, load_json_document
from cacheviz.model import Call, Session
from cacheviz.reported._usage import UsageError, normalize_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "cline"
DESCRIPTION = "Cline task folder (api_conversation_history.json + ui_messages.json)"
HISTORY = "api_conversation_history.json"
UI = "ui_messages.json"
METADATA = "task_metadata.json"
_ROLES = ("user", "assistant")
_USAGE_FIELDS = (
    ("tokensIn", "input_tokens"),
    ("cacheReads", "cache_read_input_tokens"),
    ("cacheWrites", "cache_creation_input_tokens"),
    ("tokensOut", "output_tokens"),
)
_RANGE = "conversationHistoryDeletedRange"
_PLACEHOLDER = {"role": "user", "content": ""}  # a skipped history item keeps its index


def _tasks_in(folder: Path) -> list[str]:
    """Name prefixes of the tasks in ``folder``.

    ``""`` for a task folder itself, e.g. ``"exported_conversation_123__"`` for files
    exported side by side.
    """
    prefixes = []
    for history in sorted(h for h in folder.glob(f"*{HISTORY}") if h.is_file()):
        prefix = history.name[: -len(HISTORY)]
        if (folder / f"{prefix}{UI}").is_file():
            prefixes.append(prefix)
    return prefixes


def _task_of(path: Path) -> tuple[Path, str] | None:
    """The (folder, name prefix) of the task ``path`` is, or belongs to."""
    if path.is_dir():
        prefixes = _tasks_in(path)
        return (path, prefixes[0]) if len(prefixes) == 1 else None
    for name in (HISTORY, UI, METADATA):
        if path.name.endswith(name):
            prefix = path.name[: -len(name)]
            if (path.parent / f"{prefix}{HISTORY}").is_file() and (
                path.parent / f"{prefix}{UI}"
            ).is_file():
                return path.parent, prefix
    return None


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a Cline task folder or one of its files.

    File names may carry an export prefix, as in ``<prefix>__api_conversation_history.json``.
    """
    task = _task_of(path)
    if task is None:
        return False
    return path.is_dir() or head.lstrip()[:1] == (b"{" if path.name.endswith(METADATA) else b"[")


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"`{where}` is {json_type(value)}; expected a number"
        raise ValueError(msg)
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer beyond the float range
        finite = False
    if not finite:
        shown = value if isinstance(value, float) else f"an integer of {len(str(value))} digits"
        msg = f"`{where}` is {shown}; expected a finite number"
        raise ValueError(msg)
    return value


def _string(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        msg = f"`{where}` is {json_type(value)}; expected a string"
        raise ValueError(msg)
    return value


def _epoch_ms(value: Any, where: str) -> datetime | None:
    millis = _number(value, where)
    if millis is None:
        return None
    try:
        return datetime.fromtimestamp(millis / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        msg = f"`{where}` {value!r} is not a time; expected epoch milliseconds"
        raise ValueError(msg) from None


def _message(item: dict[str, Any]) -> dict[str, Any]:
    """The message as sent: Cline's own fields (``modelInfo``, ``metrics``, ...) dropped."""
    role = item.get("role")
    if role not in _ROLES:
        shown = repr(role) if isinstance(role, str) else json_type(role)
        msg = f"`role` is {shown}; expected 'user' or 'assistant'"
        raise ValueError(msg)
    content = item.get("content")
    if not isinstance(content, (str, list)):
        msg = f"`content` is {json_type(content)}; expected a string or an array of blocks"
        raise ValueError(msg)
    return {"role": role, "content": content}


def _deleted_range(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        or value[0] > value[1]
    ):
        msg = f"`{_RANGE}` is {json.dumps(value)[:40]}; expected [start, end] indexes"
        raise ValueError(msg)
    return value[0], value[1]


def _request_info(event: dict[str, Any]) -> dict[str, Any]:
    """The JSON in an ``api_req_started`` event's ``text``, its numbers checked."""
    text = event.get("text")
    if text is None:
        return {}
    if not isinstance(text, str):
        msg = f"`text` is {json_type(text)}; expected a JSON string"
        raise ValueError(msg)
    try:
        info = json.loads(text)
    except (ValueError, RecursionError):
        msg = "`text` is not JSON; expected Cline's API request info {tokensIn, tokensOut, ...}"
        raise ValueError(msg) from None
    if not isinstance(info, dict):
        msg = f"`text` holds {json_type(info)}; expected an object {{tokensIn, tokensOut, ...}}"
        raise ValueError(msg)
    for key in (*(source for source, _ in _USAGE_FIELDS), "cost"):
        _number(info.get(key), f"text.{key}")
    _string(info.get("cancelReason"), "text.cancelReason")
    return info


class _Request:
    """One ``api_req_started`` event, checked."""

    def __init__(self, item: int, event: dict[str, Any]) -> None:
        self.item = item
        self.info = _request_info(event)
        self.ts = _epoch_ms(event.get("ts"), "ts")
        index = event.get("conversationHistoryIndex")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            msg = f"`conversationHistoryIndex` is {json_type(index)}; expected an integer"
            raise ValueError(msg)
        self.history_index: int | None = index
        info = event.get("modelInfo")
        info = info if isinstance(info, dict) else {}
        self.model = _string(info.get("modelId"), "modelInfo.modelId")
        self.provider = _string(info.get("providerId"), "modelInfo.providerId")
        self.deleted: tuple[int, int] | None = None
        self.retries = 0

    def is_call(self) -> bool:
        """Whether a response came back (usage, cost) or a started stream was cancelled."""
        keys = (*(source for source, _ in _USAGE_FIELDS), "cost", "cancelReason")
        return any(self.info.get(key) is not None for key in keys)

    def usage(self) -> dict[str, Any]:
        """The usage in Anthropic's shape (``tokensIn`` excludes cache reads and writes)."""
        return {
            target: self.info[source]
            for source, target in _USAGE_FIELDS
            if self.info.get(source) is not None
        }

    def meta(self) -> dict[str, Any]:
        """Cline's cost, cancellation and retries, for ``Call.meta``."""
        meta: dict[str, Any] = {}
        if self.info.get("cost") is not None:
            meta["reported_cost_usd"] = float(self.info["cost"])
        if self.info.get("cancelReason") is not None:
            meta["cancel_reason"] = self.info["cancelReason"]
        if self.retries:
            meta["retries"] = self.retries
        return meta


class _Task:
    """The state of reading one task folder."""

    def __init__(self, folder: Path, prefix: str, errors: str) -> None:
        self.folder = folder
        self.prefix = prefix  # "" in a task folder; an export prefix otherwise
        self.reader = LineReader(folder, errors=errors)  # error policy, counts, session
        self.history: list[dict[str, Any]] = []
        self.answer_models: list[str | None] = []  # modelInfo.modelId of each message
        self.model_usage: list[tuple[datetime | None, str, str | None]] = []
        self.store = BlockStore()

    def file(self, name: str) -> str:
        """The name of one of the task's files, as it is in the folder (prefix included)."""
        return f"{self.prefix}{name}"

    def fail(self, name: str, reason: str) -> None:
        """Raise for a bad item of file ``name``, or record it when skipping."""
        self.reader.fail(None, f"{self.file(name)}: {reason}")

    def document(self, name: str, *, required: bool = True) -> list[Any] | dict[str, Any] | None:
        """Parse one of the folder's JSON files (``None`` when an optional one is absent)."""
        path = self.folder / self.file(name)
        if not path.is_file():
            if not required:
                return None
            msg = f"no {self.file(name)} here; expected a Cline task folder with {HISTORY} and {UI}"
            raise TranscriptError(msg, path=self.folder)
        value = load_json_document(path)
        expected = dict if name == METADATA else list
        if not isinstance(value, expected):
            shape = "an object" if expected is dict else "an array"
            msg = f"{self.file(name)}: the document is {json_type(value)}; expected {shape}"
            raise TranscriptError(msg, path=self.folder)
        return value

    def load_history(self) -> None:
        """Read the messages, keeping each at its index (a skipped one as a placeholder)."""
        items = self.document(HISTORY)
        for index, item in enumerate(items or []):
            message = dict(_PLACEHOLDER)
            if not isinstance(item, dict):
                self.fail(HISTORY, f"item {index} is {json_type(item)}; expected a message")
                item = {}
            else:
                try:
                    message = _message(item)
                except ValueError as exc:
                    self.fail(HISTORY, f"item {index}: {exc}")
            self.history.append(message)
            info = item.get("modelInfo")
            model = info.get("modelId") if isinstance(info, dict) else None
            self.answer_models.append(model if isinstance(model, str) else None)

    def load_metadata(self) -> None:
        """Read ``task_metadata.json`` ``model_usage`` (which model when), if present."""
        metadata = self.document(METADATA, required=False)
        usage = metadata.get("model_usage") if isinstance(metadata, dict) else None
        if usage is None:
            return
        if not isinstance(usage, list):
            self.fail(METADATA, f"`model_usage` is {json_type(usage)}; expected an array")
            return
        for index, entry in enumerate(usage):
            where = f"model_usage[{index}]"
            try:
                if not isinstance(entry, dict):
                    msg = f"`{where}` is {json_type(entry)}; expected an object"
                    raise ValueError(msg)
                model = _string(entry.get("model_id"), f"{where}.model_id")
                provider = _string(entry.get("model_provider_id"), f"{where}.model_provider_id")
                ts = _epoch_ms(entry.get("ts"), f"{where}.ts")
            except ValueError as exc:
                self.fail(METADATA, str(exc))
                continue
            if model:
                self.model_usage.append((ts, model, provider))

    def requests(self) -> list[_Request]:
        """The ``api_req_started`` events, with their deleted range and retry count."""
        events = self.document(UI) or []
        requests: list[_Request] = []
        in_force: tuple[int, int] | None = None
        stamped: dict[int, tuple[int, int] | None] = {}  # request item -> range after it
        for index, event in enumerate(events):
            if not isinstance(event, dict):
                self.fail(UI, f"item {index} is {json_type(event)}; expected an object")
                continue
            if _RANGE in event:
                try:
                    in_force = _deleted_range(event[_RANGE])
                except ValueError as exc:
                    self.fail(UI, f"item {index}: {exc}")
                if requests and requests[-1].item not in stamped:  # the first stamp after it
                    stamped[requests[-1].item] = in_force
            kind = event.get("say") or event.get("ask")
            if event.get("say") == "api_req_started":
                try:
                    request = _Request(index, event)
                except ValueError as exc:
                    self.fail(UI, f"item {index}: {exc}")
                    continue
                request.deleted = in_force
                requests.append(request)
            elif event.get("say") == "api_req_retried" and requests:
                requests[-1].retries += 1
            else:
                self.reader.ignore(f"{kind} event" if isinstance(kind, str) else "untyped event")
        for request in requests:
            request.deleted = stamped.get(request.item, request.deleted)
        return requests

    def model_at(self, request: _Request, end: int) -> tuple[str, str]:
        """The model and provider of a request: its event, its answer, then the metadata."""
        model, provider = request.model, request.provider
        if not model and end < len(self.answer_models):
            model = self.answer_models[end]
        if not model and self.model_usage:
            chosen = self.model_usage[0]
            for entry in self.model_usage:
                if entry[0] is not None and request.ts is not None and entry[0] <= request.ts:
                    chosen = entry
            model, provider = chosen[1], provider or chosen[2]
        model = model or "unknown"
        return model, provider or provider_for(model)

    def messages_of(self, request: _Request, ordinal: int) -> tuple[list[dict[str, Any]], int]:
        """The messages call ``request`` sent and the index of its answer."""
        if request.history_index is not None:
            end = request.history_index + 2
        else:  # before Cline stamped indexes: the ordinal-th assistant turn answers it
            answers = [i for i, m in enumerate(self.history) if m["role"] == "assistant"]
            end = answers[ordinal] if ordinal < len(answers) else len(self.history)
        end = max(0, min(end, len(self.history)))
        if request.deleted is None:
            return self.history[:end], end
        start, stop = request.deleted
        return self.history[: min(start, end)] + self.history[stop + 1 : end], end

    def calls(self, requests: list[_Request]) -> list[Call]:
        """One reconstructed call per request that was answered or cancelled."""
        thread = Thread(self.store, "main")
        calls: list[Call] = []
        for request in requests:
            if not request.is_call():
                self.reader.ignore("api_req_started without a response (not sent or failed)")
                continue
            messages, end = self.messages_of(request, len(calls))
            known = thread.messages
            if len(known) <= len(messages) and all(
                a is b for a, b in zip(known, messages, strict=False)
            ):
                for message in messages[len(known) :]:
                    thread.append(message)
            else:
                thread.replace(messages)
            model, provider = self.model_at(request, end)
            try:
                usage = normalize_usage(request.usage())
            except UsageError as exc:
                self.fail(UI, f"item {request.item}: {exc}")
                usage = None  # errors="skip": the call stays, its usage not reported
            call = thread.call(
                model=model,
                provider=provider,
                ts=request.ts,
                usage=usage,
                meta=request.meta(),
            )
            call.line = request.item
            calls.append(call)
        return calls

    def session(self, calls: list[Call]) -> Session:
        """Number the calls and build the session (an error when there are none)."""
        if not calls:
            skipped = len(self.reader.skipped)
            detail = f" ({skipped} bad items skipped)" if skipped else ""
            msg = (
                f"{self.file(UI)}: no answered `api_req_started` event{detail}; "
                "expected Cline's UI messages with API requests"
            )
            raise TranscriptError(msg, path=self.folder)
        return self.reader.session(NAME, calls, self.store)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Cline task folder (or the folder of its ``api_conversation_history.json``).

    Parameters
    ----------
    path
        The task folder, or one of its files (``api_conversation_history.json``,
        ``ui_messages.json``, ``task_metadata.json``, with or without an export prefix).
    errors
        ``"raise"`` stops at the first bad item; ``"skip"`` leaves it out and goes on.

    Returns
    -------
    Session
        One call per answered (or cancelled) ``api_req_started`` event; ``Call.line``
        is the event's index in ``ui_messages.json``.

    Raises
    ------
    TranscriptError
        When a file is missing, not JSON, or an item has the wrong shape.
    """
    found = _task_of(path)
    if found is None:
        if path.is_dir() and len(_tasks_in(path)) > 1:
            msg = f"several Cline tasks here; pass one task's {HISTORY} file"
        elif path.is_dir() and any(path.glob(f"*{HISTORY}")):
            msg = f"no {UI} here; expected a Cline task folder with {HISTORY} and {UI}"
        else:
            msg = f"expected a Cline task folder, or its {HISTORY} with {UI} beside it"
        raise TranscriptError(msg, path=path)
    task = _Task(*found, errors)
    task.load_history()
    task.load_metadata()
    requests = task.requests()
    return task.session(task.calls(requests))
