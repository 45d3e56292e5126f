"""OpenHands evaluation output (``evaluation/.../output.jsonl``): one instance per line.

Each line is ``{instance_id, instruction, metadata, history, metrics, error, ...}``.
``history`` is the agent's event stream: actions (``action``: ``system``, ``message``,
``run``, ``read``, ``edit``, ``think``, ``finish``, ...) and observations
(``observation``). Every instance is its own thread (``instance_id``; a line repeating an
instance, a second run of it, is ``<instance_id>#2``).

Calls. ``metrics.token_usages`` has one entry per completion (``prompt_tokens``,
``completion_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, ``response_id``).
``metrics.response_latencies`` lists every completion received, also the ones whose
usage OpenHands never recorded (it raises a ``FunctionCallValidationError`` on a bad
tool call before recording usage): those are calls too, with usage "not reported".
When a log has no ``token_usages``, the calls are the responses seen in the events,
with the raw usage of ``tool_call_metadata.model_response``.

Alignment. An action carries the LLM response that produced it in
``tool_call_metadata.model_response`` (``id`` = the usage's ``response_id``): call *k*
sent everything before the first event of its response. A call whose response produced
no event is placed at the next agent event that no response claims (the error
observation of a rejected tool call, an agent message), else just before the next call.

Requests are rebuilt in the OpenAI Chat Completions shape OpenHands' ``ConversationMemory``
gives LiteLLM. The system prompt and the tool schemas are logged (the first ``system``
action: ``args.content``, ``args.tools``), so they are real blocks (``system[0]`` and one
block per tool) rather than an unlogged prefix; only a log without a ``system`` action
gets an unlogged prefix, sized from reported usage. Then: user and agent messages; one
assistant message per response (its content and tool calls), added once every tool call
it made has its observation, followed by those observations as ``tool`` messages; other
observations as user messages (``recall``: its ``extras`` as JSON). Condensations
(``condensation`` actions) drop the forgotten events and insert the summary.

Approximations: observation text is the logged ``content`` (OpenHands adds exit codes
and working-directory lines, and truncates to ``max_message_chars``); the workspace
context template is not re-rendered; with mocked function calling (models without
native tool calls, e.g. via an OpenAI-compatible proxy) the real prompt carries the
tools and calls as text. The reported usage is exact.

Usage. ``prompt_tokens`` is LiteLLM's, which includes cached tokens (for Anthropic,
LiteLLM adds the cache reads to ``input_tokens``; older LiteLLM versions may leave the
cache writes out, which the log cannot tell): it is the inclusive input. Cache reads and
writes become ``prompt_tokens_details.cached_tokens`` / ``cache_write_tokens``; fields
present as 0 stay 0 ("reported 0"), not "not reported". Event times are naive (the
machine's local time) and are read as UTC.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cacheviz.formats._body import provider_for
from cacheviz.formats._conversation import unlogged_block
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import Block, Call, Session, Usage
from cacheviz.reported._usage import UsageError, normalize_usage
from cacheviz.request._blocks import BlockStore, compact_json
from cacheviz.request._jsonspan import Element, digest, json_type

NAME = "openhands"
DESCRIPTION = "OpenHands evaluation output JSONL (one instance per line: event history + metrics)"
API = "chat.completions"
_KIND = f"message:{API}"
_IGNORED_ACTIONS = frozenset({"recall", "change_agent_state", "null", "condensation_request"})
_IGNORED_OBSERVATIONS = frozenset({"null", "agent_state_changed"})


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` looks like OpenHands evaluation output."""
    first = head.lstrip().split(b"\n", 1)[0]
    if not first.startswith(b"{"):
        return False
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):  # a first line longer than the head
        keys = (b'"instance_id"', b'"history"', b'"source"')
        return all(key in first for key in keys)
    return (
        isinstance(record, dict)
        and "instance_id" in record
        and isinstance(record.get("history"), list)
    )


# -- checked access to the JSON -------------------------------------------------------


_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer"}


def _get(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]`` if it is of ``kind`` (never a boolean); ``None`` when absent or null.

    Raises
    ------
    ValueError
        Naming the field's path and the type expected.
    """
    value = obj.get(key)
    if value is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) or not isinstance(value, kinds):
        names = "a number" if float in kinds else " or ".join(_NAMES[k] for k in kinds)
        msg = f"`{where}.{key}` is {json_type(value)}; expected {names}"
        raise ValueError(msg)
    if isinstance(value, float) and not math.isfinite(value):
        msg = f"`{where}.{key}` is {value}; expected a finite number"
        raise ValueError(msg)
    return value


def _time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        msg = f"`{where}` is {json_type(value)}; expected an ISO-8601 string"
        raise ValueError(msg)
    try:
        return parse_ts(value)
    except ValueError:
        msg = f"`{where}` {value[:40]!r} is not ISO-8601"
        raise ValueError(msg) from None


# -- events -> conversation items -----------------------------------------------------


@dataclass(slots=True)
class _Item:
    """One event as the conversation sees it."""

    kind: str  # system, message, summary, tool_call, tool_result, condensation, skip
    event_id: int | None = None
    ts: datetime | None = None
    message: dict[str, Any] | None = None
    response_id: str | None = None
    call_ids: tuple[str, ...] = ()  # tool_call: the tool calls the response made
    call_id: str | None = None  # tool_result: the call it answers
    orphan: bool = False  # an agent event that no logged response claims
    system: str | None = None
    tools: list[Any] = field(default_factory=list)
    forgotten: frozenset[int] = frozenset()
    forgotten_range: tuple[int, int] | None = None  # first and last forgotten event ids
    summary: str | None = None
    summary_offset: int | None = None


def _text(value: Any) -> Any:
    return value if isinstance(value, (str, list)) or value is None else compact_json(value)


def _assistant(response: dict[str, Any], where: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The assistant message of a logged LiteLLM response, and its tool call ids."""
    choices = _get(response, "choices", list, where) or []
    first = choices[0] if choices else {}
    if not isinstance(first, dict):
        msg = f"`{where}.choices[0]` is {json_type(first)}; expected an object"
        raise ValueError(msg)
    logged = _get(first, "message", dict, f"{where}.choices[0]") or {}
    message: dict[str, Any] = {"role": "assistant", "content": _text(logged.get("content"))}
    calls = []
    where = f"{where}.choices[0].message"
    for index, call in enumerate(_get(logged, "tool_calls", list, where) or []):
        at = f"{where}.tool_calls[{index}]"
        if not isinstance(call, dict):
            msg = f"`{at}` is {json_type(call)}; expected an object"
            raise ValueError(msg)
        function = _get(call, "function", dict, at) or {}
        calls.append(
            {
                "id": _get(call, "id", str, at),
                "type": "function",
                "function": {
                    "name": _get(function, "name", str, f"{at}.function"),
                    "arguments": _text(function.get("arguments")),
                },
            }
        )
    if calls:
        message["tool_calls"] = calls
    return message, tuple(c["id"] for c in calls if c["id"])


class _Events:
    """Turn an instance's events into conversation items (each message built once)."""

    def __init__(self) -> None:
        self.responses: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {}

    def item(self, index: int, event: Any) -> _Item:
        """The item of ``history[index]``.

        Raises
        ------
        ValueError
            When a field the conversation needs has the wrong type.
        """
        where = f"history[{index}]"
        if not isinstance(event, dict):
            msg = f"`{where}` is {json_type(event)}; expected an event object"
            raise ValueError(msg)
        action = _get(event, "action", str, where)
        observation = _get(event, "observation", str, where)
        source = _get(event, "source", str, where)
        metadata = _get(event, "tool_call_metadata", dict, where)
        item = self._action(event, where, action, source, metadata) if action else None
        if item is None and observation:
            item = self._observation(event, where, observation, metadata)
        item = item or _Item("skip")
        event_id = event.get("id")
        item.event_id = event_id if isinstance(event_id, int) else None
        item.ts = _time(event.get("timestamp"), f"{where}.timestamp")
        return item

    def _action(
        self,
        event: dict[str, Any],
        where: str,
        action: str,
        source: str | None,
        metadata: dict[str, Any] | None,
    ) -> _Item | None:
        args = _get(event, "args", dict, where) or {}
        if action == "system":
            tools = _get(args, "tools", list, f"{where}.args") or []
            content = _get(args, "content", str, f"{where}.args") or event.get("message")
            return _Item("system", system=content if isinstance(content, str) else "", tools=tools)
        if action in _IGNORED_ACTIONS:
            return _Item("skip")
        if action == "condensation":
            return self._condensation(args, f"{where}.args")
        if metadata is not None:
            return self._tool_call(event, where, action, args, metadata)
        if action == "message":
            text = _text(args.get("content", event.get("message")))
        else:
            text = _text(args.get("thought") or event.get("message"))
        if source == "user":
            return _Item("message", message={"role": "user", "content": text})
        response_id = _get(event, "response_id", str, where) or None  # newer OpenHands
        message = {"role": "assistant", "content": text}
        return _Item("message", message=message, response_id=response_id, orphan=not response_id)

    def _tool_call(
        self,
        event: dict[str, Any],
        where: str,
        action: str,
        args: dict[str, Any],
        metadata: dict[str, Any],
    ) -> _Item:
        at = f"{where}.tool_call_metadata"
        response = _get(metadata, "model_response", dict, at)
        if response is not None:
            response_id = _get(response, "id", str, f"{at}.model_response")
        else:
            response_id = _get(event, "response_id", str, where)
        response_id = response_id or f"event:{event.get('id')}"
        if response_id not in self.responses:
            if response is not None:
                self.responses[response_id] = _assistant(response, f"{at}.model_response")
            else:
                call_id = _get(metadata, "tool_call_id", str, at)
                name = _get(metadata, "function_name", str, at)
                tool_call = {"id": call_id, "type": "function", "function": {"name": name}}
                message = {"role": "assistant", "content": _text(args.get("thought"))}
                message["tool_calls"] = [tool_call]
                self.responses[response_id] = (message, (call_id,) if call_id else ())
        message, call_ids = self.responses[response_id]
        if action == "finish":  # no observation answers it: OpenHands sends it as text
            text = {
                "role": "assistant",
                "content": message.get("content") or _text(args.get("thought")),
            }
            return _Item("message", message=text, response_id=response_id)
        return _Item("tool_call", message=message, response_id=response_id, call_ids=call_ids)

    def _condensation(self, args: dict[str, Any], where: str) -> _Item:
        ids = _get(args, "forgotten_event_ids", list, where) or []
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            msg = f"`{where}.forgotten_event_ids` holds a non-integer; expected event ids"
            raise ValueError(msg)
        start = _get(args, "forgotten_events_start_id", int, where)
        end = _get(args, "forgotten_events_end_id", int, where)
        return _Item(
            "condensation",
            forgotten=frozenset(ids),
            forgotten_range=(start, end) if start is not None and end is not None else None,
            summary=_get(args, "summary", str, where),
            summary_offset=_get(args, "summary_offset", int, where),
        )

    def _observation(
        self,
        event: dict[str, Any],
        where: str,
        observation: str,
        metadata: dict[str, Any] | None,
    ) -> _Item:
        if observation in _IGNORED_OBSERVATIONS:
            return _Item("skip")
        content = _text(event.get("content", event.get("message")))
        if observation == "recall":
            extras = _get(event, "extras", dict, where)
            if not extras:
                return _Item("skip")
            return _Item("message", message={"role": "user", "content": compact_json(extras)})
        if metadata is not None:
            at = f"{where}.tool_call_metadata"
            call_id = _get(metadata, "tool_call_id", str, at)
            message = {
                "role": "tool",
                "tool_call_id": call_id,
                "name": _get(metadata, "function_name", str, at),
                "content": content,
            }
            return _Item("tool_result", message=message, call_id=call_id)
        orphan = observation == "error" and event.get("cause") is None
        return _Item("message", message={"role": "user", "content": content}, orphan=orphan)


def _conversation(view: list[_Item]) -> list[dict[str, Any]]:
    """The messages of a view, tool calls paired as ``ConversationMemory`` pairs them."""
    messages: list[dict[str, Any]] = []
    pending: dict[str, _Item] = {}  # response id -> its first tool_call item
    results: dict[str, dict[str, Any]] = {}
    for item in view:
        if item.kind == "tool_call" and item.response_id is not None:
            pending.setdefault(item.response_id, item)
        elif item.kind == "tool_result" and item.call_id is not None:
            results[item.call_id] = item.message or {}
        elif item.message is not None and item.kind in ("message", "summary"):
            messages.append(item.message)
        for response_id, waiting in list(pending.items()):
            if all(call_id in results for call_id in waiting.call_ids):
                messages.append(waiting.message or {})
                messages += [results.pop(call_id) for call_id in waiting.call_ids]
                del pending[response_id]
    return messages


# -- calls ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Planned:
    """A call to rebuild: its response, usage, model and where it sits in the events."""

    response_id: str
    usage: Usage | None
    model: str | None
    cut: int = -1


def _usage_entry(entry: Any, where: str) -> tuple[str, Usage | None, str | None]:
    if not isinstance(entry, dict):
        msg = f"`{where}` is {json_type(entry)}; expected an object"
        raise ValueError(msg)
    numbers = {}
    for key in ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens"):
        numbers[key] = _get(entry, key, (int, float), where)
    response_id = _get(entry, "response_id", str, where) or ""
    model = _get(entry, "model", str, where)
    if all(value is None for value in numbers.values()):
        return response_id, None, model
    usage = {
        "prompt_tokens": numbers["prompt_tokens"],
        "completion_tokens": numbers["completion_tokens"],
        "prompt_tokens_details": {
            "cached_tokens": numbers["cache_read_tokens"],
            "cache_write_tokens": numbers["cache_write_tokens"],
        },
    }
    return response_id, normalize_usage(usage), model


def _planned_from_metrics(metrics: dict[str, Any]) -> list[_Planned]:
    """Calls from ``token_usages``, plus completions only ``response_latencies`` lists."""
    usages = _get(metrics, "token_usages", list, "metrics") or []
    planned = []
    for index, entry in enumerate(usages):
        response_id, usage, model = _usage_entry(entry, f"metrics.token_usages[{index}]")
        planned.append(_Planned(response_id or f"usage:{index}", usage, model))
    known = {p.response_id for p in planned}
    extras: dict[str, list[_Planned]] = {}  # usage response id -> unreported calls before it
    waiting: list[_Planned] = []
    latencies = _get(metrics, "response_latencies", list, "metrics") or []
    for index, entry in enumerate(latencies):
        where = f"metrics.response_latencies[{index}]"
        if not isinstance(entry, dict):
            msg = f"`{where}` is {json_type(entry)}; expected an object"
            raise ValueError(msg)
        response_id = _get(entry, "response_id", str, where)
        if not response_id:
            continue
        if response_id in known:
            extras.setdefault(response_id, []).extend(waiting)
            waiting = []
        else:
            known.add(response_id)
            waiting.append(_Planned(response_id, None, _get(entry, "model", str, where)))
    ordered: list[_Planned] = []
    for call in planned:
        ordered += extras.get(call.response_id, [])
        ordered.append(call)
    return ordered + waiting


def _planned_from_events(history: list[Any]) -> list[_Planned]:
    """Calls from the responses logged in the events, with their raw usage."""
    planned: dict[str, _Planned] = {}
    for event in history:
        metadata = event.get("tool_call_metadata") if isinstance(event, dict) else None
        response = metadata.get("model_response") if isinstance(metadata, dict) else None
        if not isinstance(response, dict) or not isinstance(response.get("id"), str):
            continue
        if response["id"] not in planned:
            model = response.get("model")
            usage = normalize_usage(response.get("usage"))
            planned[response["id"]] = _Planned(
                response["id"], usage, model if isinstance(model, str) else None
            )
    return list(planned.values())


def _place(planned: list[_Planned], items: list[_Item]) -> None:
    """Set each call's ``cut``: the index of the first event after its request."""
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.response_id is not None:
            first.setdefault(item.response_id, index)
    orphans = [i for i, item in enumerate(items) if item.orphan]
    for call in planned:
        call.cut = first.get(call.response_id, -1)
    previous = 0
    for position, call in enumerate(planned):
        if call.cut < 0:
            later = [c.cut for c in planned[position + 1 :] if c.cut >= previous]
            bound = min(later, default=len(items))
            spare = [i for i in orphans if previous <= i < bound]
            call.cut = spare[0] if spare else bound
            if spare:
                orphans.remove(spare[0])
        previous = max(previous, call.cut)


def _element(value: Any) -> Element:
    raw = compact_json(value).encode("utf-8", "surrogatepass")
    return Element(0, len(raw), value, digest(raw), raw)


class _Requests:
    """Blocks of one instance's requests: system, tools, then the messages.

    A message block is re-used while the request keeps the same message object at the
    same place, so blocks are shared between calls as in verbatim logs.
    """

    def __init__(self, store: BlockStore, key: str, system: _Item | None) -> None:
        self.store = store
        self.prefix: list[Block] = []
        if system is None:
            self.prefix.append(unlogged_block(store, key))
        else:
            if system.system:
                message = {"role": "system", "content": system.system}
                self.prefix.append(store.add("system", 0, "system[0]", _element(message), _KIND))
            for position, tool in enumerate(system.tools):
                label = _tool_name(tool) or f"tool[{position}]"
                self.prefix.append(store.add("tools", position, label, _element(tool), "tool"))
        self.messages: list[dict[str, Any]] = []
        self.blocks: list[Block] = []

    def blocks_for(self, messages: list[dict[str, Any]]) -> list[Block]:
        """The request's blocks, re-using those of the previous request's common prefix."""
        shared = 0
        for old, new in zip(self.messages, messages, strict=False):
            if old is not new:
                break
            shared += 1
        del self.blocks[shared:]
        for position in range(shared, len(messages)):
            message = messages[position]
            label = f"{message.get('role', 'item')}#{position}"
            self.blocks.append(
                self.store.add("messages", position, label, _element(message), _KIND)
            )
        self.messages = list(messages)
        return self.prefix + self.blocks


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _provider(model: str) -> str:
    guessed = provider_for(model)
    if guessed == "unknown" and "/" in model:
        return model.split("/", 1)[0]  # LiteLLM's provider prefix
    return guessed


class _Instance:
    """One line: an instance's events and metrics, checked, then its calls."""

    def __init__(self, record: Any, lineno: int) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}; expected an OpenHands instance object"
            raise ValueError(msg)
        self.lineno = lineno
        instance_id = _get(record, "instance_id", (str, int), "record")
        self.key = str(instance_id) if instance_id is not None else f"line {lineno}"
        self.thread = self.key  # "<id>#2" for a second run of the same instance
        history = record.get("history")
        if not isinstance(history, list):
            msg = f"field `history` is {json_type(history)}; expected the event array"
            raise ValueError(msg)
        events = _Events()
        self.items = [events.item(index, event) for index, event in enumerate(history)]
        metrics = _get(record, "metrics", dict, "record") or {}
        self.planned = _planned_from_metrics(metrics) or _planned_from_events(history)
        metadata = _get(record, "metadata", dict, "record") or {}
        config = metadata.get("llm_config")
        model = config.get("model") if isinstance(config, dict) else None
        self.default_model = model if isinstance(model, str) and model else "unknown"
        _place(self.planned, self.items)

    def calls(self, store: BlockStore) -> list[Call]:
        """Rebuild every planned call's request."""
        system = next((item for item in self.items if item.kind == "system"), None)
        requests = _Requests(store, self.thread, system)
        order = sorted(range(len(self.planned)), key=lambda i: self.planned[i].cut)
        built: dict[int, Call] = {}
        view: list[_Item] = []
        position = 0
        last_ts: datetime | None = None
        for index in order:
            call = self.planned[index]
            while position < min(call.cut, len(self.items)):
                item = self.items[position]
                last_ts = item.ts or last_ts
                _advance(view, item)
                position += 1
            built[index] = self._call(call, requests.blocks_for(_conversation(view)), last_ts)
        return [built[i] for i in range(len(self.planned))]

    def _call(self, call: _Planned, blocks: list[Block], ts: datetime | None) -> Call:
        model = call.model if call.model and call.model != "default" else self.default_model
        meta = {"instance_id": self.key}
        if not call.response_id.startswith(("usage:", "event:")):
            meta["response_id"] = call.response_id
        return Call(
            -1,
            self.lineno,
            ts,
            _provider(model),
            API,
            model,
            blocks,
            call.usage,
            self.thread,
            meta,
            reconstructed=True,
        )


def _forgets(condensation: _Item, event_id: int | None) -> bool:
    if event_id is None:
        return False
    if event_id in condensation.forgotten:
        return True
    bounds = condensation.forgotten_range
    return bounds is not None and bounds[0] <= event_id <= bounds[1]


def _advance(view: list[_Item], item: _Item) -> None:
    """Add one event to the view the agent sends (a condensation rewrites it)."""
    if item.kind != "condensation":
        view.append(item)
        return
    kept = [v for v in view if v.kind != "summary" and not _forgets(item, v.event_id)]
    if item.summary is not None:
        summary = _Item("summary", message={"role": "user", "content": item.summary})
        offset = len(kept) if item.summary_offset is None else item.summary_offset
        kept.insert(max(0, min(offset, len(kept))), summary)
    view[:] = kept


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read an OpenHands evaluation output file.

    Parameters
    ----------
    path
        The ``output.jsonl`` file.
    errors
        ``"raise"`` stops at the first bad line; ``"skip"`` leaves the instance out.

    Returns
    -------
    Session
        One call per completion, each instance its own thread; ``Call.line`` is the
        instance's line.

    Raises
    ------
    TranscriptError
        When a line is not JSON or an instance has the wrong shape.
    """
    reader = LineReader(path, errors=errors)
    store = BlockStore()
    calls: list[Call] = []
    runs: dict[str, int] = {}  # instance id -> lines holding it so far
    with reader.usage_policy() as done:
        for lineno, text in reader.lines():
            instance = _instance(reader, lineno, text)
            if instance is not None:
                _add_instance(instance, runs, calls, store, reader)
            done(lineno)
    by_line: dict[int, list[Call]] = {}  # each instance ran on its own: one run each
    for call in calls:
        by_line.setdefault(call.line, []).append(call)
    return reader.session(NAME, calls, store, runs=list(by_line.values()))


def _instance(reader: LineReader, lineno: int, text: str) -> _Instance | None:
    """The line's instance, or ``None`` for a bad line skipped under ``errors="skip"``."""
    try:
        return _Instance(json.loads(text), lineno)
    except json.JSONDecodeError as exc:
        reader.fail(lineno, f"not valid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        reader.fail(lineno, "JSON nested too deeply")
    except UsageError as exc:
        reader.fail(lineno, str(exc))
    except ValueError as exc:
        reader.fail(lineno, f"{exc}; expected one OpenHands evaluation record per line")
    return None


def _add_instance(
    instance: _Instance,
    runs: dict[str, int],
    calls: list[Call],
    store: BlockStore,
    reader: LineReader,
) -> None:
    runs[instance.key] = runs.get(instance.key, 0) + 1
    if runs[instance.key] > 1:  # the instance run again: not a continuation of the first
        instance.thread = f"{instance.key}#{runs[instance.key]}"
    if not instance.planned:
        reader.ignore("instance without LLM calls")
        return
    calls += instance.calls(store)
