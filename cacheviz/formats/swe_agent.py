"""SWE-agent trajectories (``.traj``) and mini-swe-agent trajectories (``.traj.json``).

Both log the full prompt of every model call (system message included), so each call's
request is rebuilt from the logged messages as an OpenAI chat body; the bytes are
re-serialized, not as sent (``reconstructed``). Tool schemas sent alongside (SWE-agent
1.x function calling) are not logged and not part of the rebuilt requests.

* SWE-agent 1.x, newer: every ``trajectory[]`` step keeps ``query``, the history as
  sent for that step's call (after the history processors). A step whose query is empty
  (``[{}]``, an autosubmission after an error) made no call.
* SWE-agent 1.x, older: steps keep ``messages``, the history *after* the step (its own
  response and observation included). The request of step *i* is therefore
  ``trajectory[i-1].messages``, and that of step 0 is ``trajectory[0].messages`` up to its
  last assistant message. History processors (``last_n_observations``) make later steps
  rewrite older observations: the drifts they cause are real.
* SWE-agent 0.x: only ``history``. Each assistant entry (not a demonstration) is one
  model response, and its request is the history before it of the same ``agent``, as
  ``role``/``content`` pairs (0.x history processors are not in the file; requeries after
  format errors are not in the history, so ``info.model_stats.api_calls`` may be higher).
* RetryAgent files keep each attempt in ``attempts[]``; every attempt is a thread.
* mini-swe-agent: ``messages`` is the whole conversation. Each assistant message is one
  call whose request is every earlier message without its ``extra`` key (mini-swe-agent
  strips it before sending); ``extra.response`` is the raw chat completion, with its
  ``usage``. In 2.x a response that could not be parsed is not kept; the user message
  reporting the ``FormatError`` (``extra.model_response``) stands for that call. ``exit``
  messages are not sent.

SWE-agent reports no per-call usage (``None``, not 0). The model is the trajectory's
configured one (``replay_config`` / ``info.config.model.model_name``), else ``unknown``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._body import call_from_request, provider_for
from cacheviz.formats._lines import LineReader, load_json_document
from cacheviz.formats._time import parse_epoch
from cacheviz.model import Call, Session, Usage
from cacheviz.reported._usage import normalize_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import ObjectScan, json_type

NAME = "swe-agent"
DESCRIPTION = "SWE-agent trajectories (.traj, 0.x and 1.x) and mini-swe-agent trajectories"
UNKNOWN_MODEL = "unknown"
_FIRST_KEY = re.compile(rb'\A\s*\{\s*"([A-Za-z_]{1,40})"\s*:')
_SWE_FIRST_KEYS = frozenset(
    {b"environment", b"trajectory", b"history", b"info", b"attempts", b"replay_config"}
)
_SWE_LIST = re.compile(rb'"(?:trajectory|history|attempts)"\s*:\s*\[')
_MINI = re.compile(rb'"mini_version"\s*:|"trajectory_format"\s*:\s*"mini-swe-agent')
_CONTENT_TYPES = (str, list, type(None))


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` looks like a SWE-agent or mini-swe-agent trajectory."""
    first = _FIRST_KEY.match(head)
    if first is None:
        return False
    if _MINI.search(head):
        return b'"messages"' in head
    start = head[:65536]
    return (
        first.group(1) in _SWE_FIRST_KEYS
        and _SWE_LIST.search(start) is not None
        and (b'"action"' in start or b'"role"' in start)
    )


class _Calls:
    """Turn prompts (lists of chat messages) into calls, re-using unchanged messages."""

    def __init__(self, reader: LineReader, store: BlockStore) -> None:
        self.reader = reader
        self.store = store
        self.refs: list[ObjectScan] = []  # most recent scans first
        self.calls: list[Call] = []

    def add(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        where: str,
        index: int,
        thread: str,
        ts: datetime | None = None,
        usage: Usage | None = None,
    ) -> None:
        """Rebuild one call's chat body from ``messages`` and keep the call."""
        if not messages:
            self.reader.fail(None, f"{where}: nothing was sent before this model response")
            return
        try:
            call = call_from_request(
                {"model": model, "messages": messages},
                self.refs,
                self.store,
                model=model,
                provider=provider_for(model),
                api="chat.completions",
                ts=ts,
                usage=usage,
                thread=thread,
                meta={"step": where},
            )
        except ValueError as exc:
            self.reader.fail(None, f"{where}: {exc}")
            return
        call.line = index
        self.calls.append(call)


def _checked(item: Any, where: str) -> dict[str, Any]:
    """The message object at ``where``, with a role and a content of a known type."""
    if not isinstance(item, dict):
        msg = f"{where} is {json_type(item)}; expected a message object"
        raise ValueError(msg)
    role = item.get("role")
    if not isinstance(role, str) or not role:
        msg = f"{where}.role is {json_type(role)}; expected the role name"
        raise ValueError(msg)
    if not isinstance(item.get("content"), _CONTENT_TYPES):
        msg = f"{where}.content is {json_type(item['content'])}; expected a string or a list"
        raise ValueError(msg)
    if not isinstance(item.get("tool_calls"), (list, type(None))):
        msg = f"{where}.tool_calls is {json_type(item['tool_calls'])}; expected a list or null"
        raise ValueError(msg)
    return item


def _swe_message(item: Any, where: str) -> dict[str, Any]:
    """The chat message SWE-agent sends for one history item (``_history_to_messages``)."""
    item = _checked(item, where)
    role, content = item["role"], item.get("content")
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "tool":
        ids = item.get("tool_call_ids")
        if isinstance(ids, list) and ids:
            message["tool_call_id"] = ids[0]
    elif item.get("tool_calls") is not None:
        message["tool_calls"] = item["tool_calls"]
        if item.get("thinking_blocks"):
            message["thinking_blocks"] = item["thinking_blocks"]
    if "cache_control" in item:
        message["cache_control"] = item["cache_control"]
    return message


def _swe_messages(items: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(items, list):
        msg = f"{where} is {json_type(items)}; expected the list of messages sent"
        raise ValueError(msg)
    return [_swe_message(item, f"{where}[{j}]") for j, item in enumerate(items)]


def _config_model(config: Any) -> str | None:
    """The model name of a SWE-agent ``replay_config`` (an object or its JSON text)."""
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except (ValueError, RecursionError):
            return None
    agent = config.get("agent") if isinstance(config, dict) else None
    if not isinstance(agent, dict):
        return None
    model = agent.get("model")
    configs = agent.get("agent_configs")  # a RetryAgent: the first attempt's model
    if not isinstance(model, dict) and isinstance(configs, list) and configs:
        model = configs[0].get("model") if isinstance(configs[0], dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name else None


class _Trajectory:
    """The calls of one SWE-agent attempt (a whole 0.x/1.x file, or one RetryAgent try)."""

    def __init__(self, calls: _Calls, attempt: dict[str, Any], prefix: str, model: str) -> None:
        self.calls = calls
        self.reader = calls.reader
        self.attempt = attempt
        self.prefix = prefix  # "" or "attempts[i]."
        self.model = model
        self.thread = prefix.rstrip(".") or "main"

    def read(self) -> None:
        steps = self.attempt.get("trajectory")
        if steps is not None and not isinstance(steps, list):
            msg = f"{self.prefix}trajectory is {json_type(steps)}; expected a list of steps"
            raise TranscriptError(msg, path=self.reader.path)
        steps = steps or []
        if any(isinstance(s, dict) and "query" in s for s in steps):
            self._from_queries(steps)
        elif any(isinstance(s, dict) and "messages" in s for s in steps):
            self._from_step_messages(steps)
        else:
            self._from_history()

    def _step(self, steps: list[Any], i: int, key: str) -> list[dict[str, Any]] | None:
        """``trajectory[i].<key>`` as chat messages; ``None`` (reported) when malformed."""
        where = f"{self.prefix}trajectory[{i}]"
        step = steps[i]
        try:
            if not isinstance(step, dict):
                msg = f"{where} is {json_type(step)}; expected a step object"
                raise ValueError(msg)
            items = step.get(key)
            if isinstance(items, list) and all(item == {} for item in items):
                return []  # an autosubmission after an error: no model call
            return _swe_messages(items, f"{where}.{key}")
        except ValueError as exc:
            self.reader.fail(None, str(exc))
            return None

    def _from_queries(self, steps: list[Any]) -> None:
        for i in range(len(steps)):
            messages = self._step(steps, i, "query")
            if messages == []:
                self.reader.ignore("step without a model query")
            elif messages is not None:
                self._add(messages, f"{self.prefix}trajectory[{i}]", i)

    def _from_step_messages(self, steps: list[Any]) -> None:
        after = [self._step(steps, i, "messages") for i in range(len(steps))]
        for i in range(len(steps)):
            sent = after[i - 1] if i else _before_last_assistant(after[0])
            if sent is not None:
                self._add(sent, f"{self.prefix}trajectory[{i}]", i)

    def _from_history(self) -> None:
        history = self.attempt.get("history")
        if not isinstance(history, list):
            msg = f"{self.prefix}history is {json_type(history)}; expected a list of messages"
            raise TranscriptError(msg, path=self.reader.path)
        sent: dict[Any, list[dict[str, Any]]] = {}  # agent name -> its messages so far
        for k, item in enumerate(history):
            where = f"{self.prefix}history[{k}]"
            try:
                message = _swe_message(item, where)
            except ValueError as exc:
                self.reader.fail(None, str(exc))
                continue
            agent = item.get("agent")
            agent = agent if isinstance(agent, str) else None
            conversation = sent.setdefault(agent, [])
            if message["role"] == "assistant" and not item.get("is_demo"):
                name = agent or "main"
                thread = f"{self.prefix.rstrip('.')}:{name}" if self.prefix else name
                self._add(list(conversation), where, k, thread)
            conversation.append(message)

    def _add(
        self, messages: list[dict[str, Any]], where: str, index: int, thread: str = ""
    ) -> None:
        self.calls.add(
            messages, model=self.model, where=where, index=index, thread=thread or self.thread
        )


def _before_last_assistant(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """What step 0 sent: its history-after-the-step up to the step's own response."""
    if not messages:
        return messages
    last = max((j for j, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    return messages if last is None else messages[:last]


def _read_swe_agent(document: dict[str, Any], calls: _Calls) -> None:
    attempts = document.get("attempts")
    default = _config_model(document.get("replay_config")) or UNKNOWN_MODEL
    if isinstance(attempts, list) and attempts:
        for i, attempt in enumerate(attempts):
            if not isinstance(attempt, dict):
                calls.reader.fail(
                    None, f"attempts[{i}] is {json_type(attempt)}; expected an object"
                )
                continue
            model = _config_model(attempt.get("replay_config")) or default
            _Trajectory(calls, attempt, f"attempts[{i}].", model).read()
        return
    _Trajectory(calls, document, "", default).read()


def _mini_model(document: dict[str, Any]) -> str | None:
    info = document.get("info")
    config = info.get("config") if isinstance(info, dict) else None
    model = config.get("model") if isinstance(config, dict) else None
    name = model.get("model_name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name else None


def _mini_call_info(item: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """Whether the message stands for a model call, and the raw response (or ``{}``)."""
    extra = item.get("extra")
    extra = extra if isinstance(extra, dict) else {}
    response = extra.get("response")
    response = response if isinstance(response, dict) else {}
    is_call = item["role"] == "assistant" or extra.get("interrupt_type") == "FormatError"
    return is_call, response


def _read_mini(document: dict[str, Any], calls: _Calls) -> None:
    messages = document.get("messages")
    if not isinstance(messages, list):
        msg = f"messages is {json_type(messages)}; expected the list of the agent's messages"
        raise TranscriptError(msg, path=calls.reader.path)
    configured = _mini_model(document)
    sent: list[dict[str, Any]] = []
    for k, item in enumerate(messages):
        where = f"messages[{k}]"
        try:
            item = _checked(item, where)
            is_call, response = _mini_call_info(item)
            usage = normalize_usage(response.get("usage")) if is_call else None
        except ValueError as exc:
            calls.reader.fail(None, str(exc))
            continue
        if item["role"] == "exit":
            calls.reader.ignore("exit message")
            continue
        if is_call:
            model = configured or response.get("model")
            extra = item.get("extra")
            stamp = extra.get("timestamp") if isinstance(extra, dict) else None
            calls.add(
                list(sent),
                model=model if isinstance(model, str) and model else UNKNOWN_MODEL,
                where=where,
                index=k,
                thread="main",
                ts=parse_epoch(response.get("created")) or parse_epoch(stamp),
                usage=usage,
            )
        sent.append({key: value for key, value in item.items() if key != "extra"})


def _is_mini(document: dict[str, Any]) -> bool:
    info = document.get("info")
    fmt = document.get("trajectory_format")
    return (
        (isinstance(fmt, str) and fmt.startswith("mini-swe-agent"))
        or (isinstance(info, dict) and "mini_version" in info)
        or ("messages" in document and not {"trajectory", "history", "attempts"} & document.keys())
    )


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a SWE-agent or mini-swe-agent trajectory.

    Parameters
    ----------
    path
        The ``.traj`` (SWE-agent) or ``.traj.json`` (mini-swe-agent) file.
    errors
        ``"raise"`` stops at the first malformed step or message; ``"skip"`` leaves it
        out (see :func:`cacheviz.formats.load`).

    Returns
    -------
    Session

    Raises
    ------
    TranscriptError
        When the file is not valid JSON, not a trajectory, or holds no model call.
    """
    reader = LineReader(path, errors=errors)
    document = load_json_document(path)
    if not isinstance(document, dict):
        msg = (
            f"the document is {json_type(document)}; expected a SWE-agent trajectory object "
            "(`trajectory`/`history`) or a mini-swe-agent one (`messages`)"
        )
        raise TranscriptError(msg, path=path)
    calls = _Calls(reader, BlockStore())
    if _is_mini(document):
        _read_mini(document, calls)
    elif {"trajectory", "history", "attempts"} & document.keys():
        _read_swe_agent(document, calls)
    else:
        msg = "expected `trajectory`/`history` (SWE-agent) or `messages` (mini-swe-agent)"
        raise TranscriptError(msg, path=path)
    if not calls.calls:
        msg = "no model call in the trajectory: no assistant message or step with a query"
        if reader.skipped:
            first = reader.skipped[0].reason
            msg = f"no model call could be read ({len(reader.skipped)} skipped; first: {first})"
        raise TranscriptError(msg, path=path)
    return reader.session(NAME, calls.calls, calls.store)


__all__ = ["DESCRIPTION", "NAME", "detect", "read"]
