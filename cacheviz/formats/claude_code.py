"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

One record per line: ``user`` and ``assistant`` records carry an Anthropic message;
other types (``summary``, ``system``, ``file-history-snapshot``, ...) are counted and
skipped. One API response is written as several ``assistant`` lines sharing
``message.id`` (one content block each, each repeating the usage): they are one call,
whose usage is the last line's (streamed records repeat the input and cache counts and
grow the output count). A repeated ``message.id`` whose input or cache counts differ is
not the same response streamed on: the first is kept and a warning names both lines.
Each call's ``meta["response_id"]`` is the message id (``meta["request_id"]`` the
request id), for de-duplication across files. ``isSidechain`` records (a Task sub-agent
inlined) and sub-agent files are separate threads: ``<session>/subagents/agent-*.jsonl``
(Claude Code 2.1) and ``agent-<id>.jsonl`` files beside the session whose records carry
its ``sessionId`` (Claude Code 2.0). A forked sub-agent (``agent-acompact-*``,
``agent-aside_question-*``) first replays its parent's responses: each response counts
once (:func:`~cacheviz.formats._replays.flag_replays`, the rule ``scan`` uses), and the
fork's own calls start from its parent's unlogged prefix and messages. The log holds the
conversation only: requests are rebuilt with an unlogged prefix (system prompt + tools)
sized from the first call's reported usage.

Detection is by structure: any Claude Code record (a message, or a ``summary``,
``queue-operation``, ``progress``, ``last-prompt``, ... record) among the first lines
that parse, wherever it sits.
"""

from __future__ import annotations

import functools
import json
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from cacheviz._util import fastjson
from cacheviz.errors import CacheVizWarning, TranscriptError
from cacheviz.formats import _lines
from cacheviz.formats._conversation import UNLOGGED_LABEL, Thread
from cacheviz.formats._lines import LineReader, order_by_time, short_name, special
from cacheviz.formats._replays import REPEAT, REPLAYED, flag_replays
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session, Usage, numbered, subagent_name
from cacheviz.reported._usage import normalize_usage
from cacheviz.reported._verdict import logged_verdict_meta
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "claude-code"
DESCRIPTION = (
    "Claude Code session JSONL (~/.claude/projects/*/<session>.jsonl, with its sub-agents)"
)
_MESSAGE_TYPES = ("user", "assistant")
_TITLES = (("customTitle", "custom-title"), ("aiTitle", "ai-title"), ("summary", "summary"))
"""A session's logged titles, the first found wins: the user's, Claude Code's, a summary."""
_SPAWNS = ("Task", "Agent")  # the tool that starts a sub-agent (renamed Agent in 2.1)
_WARMUP = "Warmup"  # the prompt of the sub-agents Claude Code 2.0 starts to warm the cache
_LINK_STEPS = 100_000  # parentUuid hops looked through for the response a request follows
_DETECT_LINES = 400  # lines of the head that detection looks at
_SESSION_TYPES = frozenset(  # records carrying `sessionId` (and, but the last six, `uuid`)
    {"user", "assistant", "system", "attachment", "progress"}
    | {"queue-operation", "last-prompt", "permission-mode", "custom-title", "ai-title"}
    | {"agent-name"}
)


def is_record(record: Any) -> bool:
    """Whether one parsed line is a Claude Code record (message or bookkeeping).

    Message-like records carry ``sessionId`` and ``uuid``; ``queue-operation``,
    ``last-prompt``, ``permission-mode``, ``custom-title``, ``ai-title`` and
    ``agent-name`` carry ``sessionId``;
    ``summary`` records carry ``leafUuid``; ``file-history-snapshot`` records a
    ``messageId`` and a ``snapshot``.
    """
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    if kind == "summary":
        return "leafUuid" in record and "summary" in record
    if kind == "file-history-snapshot":
        return "messageId" in record and "snapshot" in record
    if "sessionId" not in record:
        return False
    if "uuid" in record:
        return kind in _SESSION_TYPES or "message" in record
    return kind in _SESSION_TYPES and kind not in _MESSAGE_TYPES


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` holds a Claude Code record among its first lines that parse."""
    for line in head.splitlines()[:_DETECT_LINES]:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # total: any input is a yes or a no
            continue
        if is_record(record):
            return True
    return False


def agent_metadata(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a sub-agent's ``agent-<id>.meta.json`` (not a transcript)."""
    if not path.name.endswith(".meta.json"):
        return False
    try:
        value = json.loads(head)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "agentType" in value


def session_id_of(path: Path, lines: int = 50) -> str | None:
    """The ``sessionId`` of the first records of ``path`` that carry one (``None``: none).

    Remembered per file version (size, mtime): a project folder's sub-agent logs are
    looked at once per process, not once per session beside them.
    """
    try:
        stat = path.stat()
    except OSError:
        return None
    return _session_id(str(path), stat.st_size, stat.st_mtime_ns, lines)


@functools.lru_cache(maxsize=65536)
def _session_id(path: str, size: int, mtime_ns: int, lines: int) -> str | None:
    del size, mtime_ns  # part of the cache key only
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 - a cached function of the path text
            for _, raw in zip(range(lines), handle, strict=False):
                try:
                    record = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if isinstance(record, dict) and isinstance(record.get("sessionId"), str):
                    return record["sessionId"]
    except OSError:
        return None
    return None


def sibling_agents(session: Path) -> list[Path]:
    """Claude Code 2.0 sub-agent logs of ``session``: ``agent-*.jsonl`` beside it, same id."""
    if session.name.startswith("agent-"):
        return []
    own = session_id_of(session) or session.stem
    return [
        agent
        for agent in sorted(session.parent.glob("agent-*.jsonl"))
        if agent != session and agent.is_file() and session_id_of(agent) == own
    ]


def session_of_agent(agent: Path) -> Path | None:
    """The session file a Claude Code sub-agent log belongs to, when it is there."""
    if agent.parent.name == "subagents":
        owner = agent.parent.parent.with_suffix(".jsonl")
        return owner if owner.is_file() else None
    session_id = session_id_of(agent)
    owner = agent.parent / f"{session_id}.jsonl"
    return owner if session_id and owner.is_file() and owner != agent else None


def _text_of(content: Any) -> str:
    """A user message's text (its text blocks joined), on one line."""
    if isinstance(content, str):
        return " ".join(content.split())
    blocks = content if isinstance(content, list) else ()
    parts = [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return " ".join(" ".join(parts).split())


def _blocks_of(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if content is None:
        return []
    return [{"type": "text", "text": content}] if isinstance(content, str) else [content]


class _SessionFile:
    """The state of reading one file: its threads and the calls made so far."""

    def __init__(self, reader: LineReader, store: BlockStore, thread: str | None) -> None:
        self.reader = reader
        self.store = store
        self.thread = thread  # a sub-agent file is one thread
        self.threads: dict[str, Thread] = {}
        self.thread_of: dict[str, str] = {}  # record uuid -> thread key
        self.seen: set[str] = set()
        self.responses: dict[str, tuple[Call, str, int]] = {}  # message id -> call, thread, index
        # message id -> the call, the usage its latest record logged, and that normalized
        self.usage_seen: dict[str, tuple[Call, Any, Usage]] = {}
        self.conflicts: list[tuple[str, int, int]] = []  # (message id, first line, line)
        self.last_ts: dict[str, datetime | None] = {}
        self.calls: list[Call] = []
        self.agents: set[str] = set()  # sub-agent ids the session refers to
        self.compactions: dict[str, dict[str, Any]] = {}  # thread -> pending compaction
        self.tools_events: dict[str, list[str]] = {}  # thread -> tools changes since its call
        self.parent_of: dict[str, str | None] = {}  # record uuid -> parentUuid
        self.response_at: dict[str, str] = {}  # assistant record uuid -> its response id
        self.spawned: dict[str, tuple[str | None, str | None]] = {}  # Task prompt -> type, what
        self.spawn_ids: dict[str, tuple[str | None, str | None]] = {}  # Task call id -> the same
        self.first_prompt: dict[str, str] = {}  # thread key -> its first user text
        self.titles: dict[str, str] = {}  # title kind -> the latest logged (custom, ai, summary)
        # conversations by their links (two processes appending to one file): a record
        # continuing an earlier response than its conversation's latest starts a fork
        self.tip: dict[str, str] = {}  # thread key -> its latest response id
        self.count_at: dict[str, int] = {}  # record uuid -> its thread's messages by then
        self.forks: dict[str, tuple[str, str]] = {}  # fork key -> (its base, base's tip then)

    def _note_agent(self, record: dict[str, Any]) -> None:
        """Remember a sub-agent the session names (its file should sit in subagents/).

        A sidechain record's own ``agentId`` names the agent whose file this is.
        """
        result = record.get("toolUseResult")
        for value in (
            None if record.get("isSidechain") else record.get("agentId"),
            result.get("agentId") if isinstance(result, dict) else None,
        ):
            if isinstance(value, str) and value and self.thread is None:
                self.agents.add(value)
        agent = result.get("agentId") if isinstance(result, dict) else None
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(agent, str) and isinstance(content, list) else ():
            spawn = isinstance(block, dict) and self.spawn_ids.get(str(block.get("tool_use_id")))
            if spawn:  # the Task call whose result names the agent: its description
                self.spawned[f"agent:{agent}"] = spawn

    def _thread_key(self, record: dict[str, Any]) -> str:
        if self.thread is not None:
            return self.thread
        parent = record.get("parentUuid")
        if not record.get("isSidechain"):
            # the conversation its links lead to: main, or a fork of it
            link = parent if isinstance(parent, str) else record.get("logicalParentUuid")
            found = self.thread_of.get(link) if isinstance(link, str) else None
            return found if found is not None and found in self.forks else "main"
        key = self.thread_of.get(parent) if isinstance(parent, str) else None
        if key is None or key == "main":
            uuid = str(record.get("uuid") or len(self.threads))
            key = f"sidechain:{uuid[:8]}"
        return key

    def add(self, lineno: int, record: Any) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}; expected a Claude Code record object"
            raise ValueError(msg)
        kind = record.get("type")
        uuid = record.get("uuid")
        if isinstance(uuid, str) and uuid not in self.parent_of:
            parent = record.get("parentUuid")
            self.parent_of[uuid] = parent if isinstance(parent, str) else None
        if kind == "system" and record.get("subtype") == "compact_boundary":
            self._compaction(record)
        if kind == "system" and record.get("subtype") == "api_error":
            # the request failed and is retried: it is sent again from this time on
            at = parse_ts(record.get("timestamp"))
            if at is not None:
                self.last_ts[self._thread_key(record)] = at
        if kind == "attachment":
            self._attachment(record)
        for field, key in _TITLES:
            if kind == key and isinstance(record.get(field), str) and record[field].strip():
                self.titles[key] = record[field]
        if kind not in _MESSAGE_TYPES and isinstance(uuid, str) and uuid not in self.thread_of:
            # a link in a conversation's chain: what follows it is of the same thread
            key = self.thread_of[uuid] = self._thread_key(record)
            known = self.threads.get(key)
            self.count_at[uuid] = len(known.messages) if known is not None else 0
        if kind not in _MESSAGE_TYPES:
            if kind is None and "sessionId" not in record:
                _refuse_other_format(lineno, record)
            self.reader.ignore(f"{kind} record" if isinstance(kind, str) else "untyped record")
            return
        self._note_agent(record)
        if isinstance(uuid, str):
            if uuid in self.seen:
                self.reader.ignore("repeated record")
                return
            self.seen.add(uuid)
        message = record.get("message")
        if not isinstance(message, dict):
            msg = f"field `message` is {json_type(message)}; expected an object"
            raise ValueError(msg)
        ts = parse_ts(record.get("timestamp"))
        key = self._thread_key(record)
        if key == "main" or key in self.forks:
            key = self._fork(record, key, message)
        if isinstance(uuid, str):
            self.thread_of[uuid] = key
        thread = self.threads.get(key)
        if thread is None:
            thread = self.threads[key] = Thread(self.store, key)
        if kind == "user":
            if key not in self.first_prompt and not record.get("isMeta"):
                self.first_prompt[key] = _text_of(message.get("content"))
            self._user(thread, message)
            self._tool_references(key, message)
        else:
            self._note_spawns(message)
            self._assistant(lineno, thread, key, record, message, ts)
        self.last_ts[key] = ts or self.last_ts.get(key)
        if isinstance(uuid, str):
            self.count_at[uuid] = len(thread.messages)

    def _fork(self, record: dict[str, Any], key: str, message: dict[str, Any]) -> str:
        """The conversation of a message record: ``key``, or a new fork of it.

        A record whose links lead to an earlier response than ``key``'s latest one
        continues the conversation from that point, beside what was said since: another
        Claude Code process appending to the same file, or a rewind. It starts a fork,
        its history the conversation's up to the record it follows; the fork shares the
        unlogged prefix (the same client's system prompt and tools). A fork whose base
        makes no call after it is folded back when the file is read (:meth:`settle`).
        """
        tip = self.tip.get(key)
        if tip is None:
            return key
        own = None
        if record.get("type") == "assistant":
            own = str(message.get("id") or record.get("requestId") or record.get("uuid"))
            if own in self.responses or message.get("model") == "<synthetic>":
                return key  # a later block of a response, or no API call
        follows = self._linked_response(record, own or "")
        parent = record.get("parentUuid")
        count = self.count_at.get(parent) if isinstance(parent, str) else None
        if follows is None or follows == tip or count is None:
            return key
        fork = f"main fork #{len(self.forks) + 2}"
        thread = self.threads[fork] = Thread(self.store, "main")
        thread.replace([dict(m) for m in self.threads[key].messages[:count]])
        self.forks[fork] = (key, tip)
        self.tip[fork] = follows
        self.last_ts[fork] = self.last_ts.get(key)
        return fork

    def settle(self) -> None:
        """Fold back each fork whose base made no call after it (a rewind, an interrupt).

        Two conversations are kept apart only while both make calls; a request left
        behind by an interrupt, then continued from an earlier point, is one thread.
        """
        alias: dict[str, str] = {}
        for fork, (base, tip) in self.forks.items():  # in the order they started
            if self.tip.get(base) == tip:  # the base's last call came before the fork
                alias[fork] = alias.get(base, base)
        for call in self.calls:
            name = call.thread_hint
            if name in alias:
                call.thread_hint = alias[name]
                call.parent_hint = None if alias[name] == "main" else "main"

    def _note_spawns(self, message: dict[str, Any]) -> None:
        """Remember the sub-agents this reply starts: a ``Task`` (``Agent``) call's prompt.

        A sub-agent's first user message is that prompt: it names the sub-agent by the
        call's ``description`` (its ``subagent_type`` without one).
        """
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            given = block.get("input")
            if block.get("name") not in _SPAWNS or not isinstance(given, dict):
                continue
            kind, what = given.get("subagent_type"), given.get("description")
            spawn = (
                kind if isinstance(kind, str) else None,
                what if isinstance(what, str) else None,
            )
            prompt = given.get("prompt")
            if isinstance(prompt, str) and prompt.strip():
                self.spawned[" ".join(prompt.split())] = spawn
            if isinstance(block.get("id"), str):
                self.spawn_ids[block["id"]] = spawn

    def _compaction(self, record: dict[str, Any]) -> None:
        """A ``compact_boundary``: the thread's next request starts from the summary.

        The history before it is not sent again; the next call is marked as an expected
        rebuild (``meta["rebuild"] = "compaction"``, with the logged ``compactMetadata``).
        """
        key = self._thread_key(record)
        thread = self.threads.get(key)
        if thread is None:
            return
        thread.replace([])
        found = record.get("compactMetadata")
        self.compactions[key] = found if isinstance(found, dict) else {}

    def _attachment(self, record: dict[str, Any]) -> None:
        """Keep a ``deferred_tools_delta``: the deferred tools changed before the next call.

        Claude Code announces the tools it can load on demand (ToolSearch) in this
        attachment; a change of that set changes the request's head (the tools, or the
        system prompt's list of them): evidence beside the provider's verdict.
        """
        attachment = record.get("attachment")
        if not isinstance(attachment, dict) or attachment.get("type") != "deferred_tools_delta":
            return
        parts = []
        for field, sign in (("addedNames", "+"), ("removedNames", "-")):
            names = attachment.get(field)
            if isinstance(names, list) and names:
                shown = ", ".join(str(n) for n in names[:3]) + (", …" if len(names) > 3 else "")
                parts.append(f"{sign}{len(names)} ({shown})")
        if parts:
            event = "deferred_tools_delta " + " ".join(parts)
            events = self.tools_events.setdefault(self._thread_key(record), [])
            if event not in events:
                events.append(event)

    def _tool_references(self, key: str, message: dict[str, Any]) -> None:
        """Keep the tools a ToolSearch result loads (``tool_reference`` blocks)."""
        content = message.get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            inner = block.get("content")
            names = [
                str(part.get("tool_name"))
                for part in (inner if isinstance(inner, list) else ())
                if isinstance(part, dict) and part.get("type") == "tool_reference"
            ]
            if names:
                more = ", …" if len(names) > 3 else ""
                event = "tool_reference " + ", ".join(names[:3]) + more
                self.tools_events.setdefault(key, []).append(event)

    def _linked_response(self, record: dict[str, Any], own: str) -> str | None:
        """The response this request continues, by the log's ``parentUuid`` links.

        Two Claude Code processes appending to one session file interleave their
        records; the links tell which earlier response a request follows.
        """
        uuid = record.get("parentUuid")
        for _ in range(_LINK_STEPS):
            if not isinstance(uuid, str):
                return None
            found = self.response_at.get(uuid)
            if found is not None and found != own:
                return found
            uuid = self.parent_of.get(uuid)
        return None

    def _user(self, thread: Thread, message: dict[str, Any]) -> None:
        content = message.get("content")
        last = thread.messages[-1] if thread.messages else None
        if last is not None and last["role"] == "user":  # consecutive user records: one turn
            last["content"] = _blocks_of(last["content"]) + _blocks_of(content)
            thread.touch(len(thread.messages) - 1)
        else:
            thread.append({"role": "user", "content": content})

    def _usage(self, response_id: str, call: Call, logged: Any) -> Usage | None:
        """``normalize_usage(logged)``, for a record of ``call``'s response.

        A streamed response logs one record per content block, most with the same
        usage: a usage that is the same JSON as the call's latest one normalized (no
        problem, then, to report) is that :class:`Usage` again (frozen; only that call
        holds it), not normalized anew.
        """
        seen = self.usage_seen.get(response_id)
        if seen is not None and seen[0] is call and fastjson.same_json(seen[1], logged):
            return seen[2]
        usage = normalize_usage(logged)
        if usage is not None:
            self.usage_seen[response_id] = (call, logged, usage)
        return usage

    def _assistant(
        self,
        lineno: int,
        thread: Thread,
        key: str,
        record: dict[str, Any],
        message: dict[str, Any],
        ts: datetime | None,
    ) -> None:
        model = message.get("model")
        if model == "<synthetic>":
            self.reader.ignore("synthetic assistant message (not an API call)")
            return
        if not isinstance(model, str) or not model:
            msg = f"field `message.model` is {json_type(model)}; expected the model name"
            raise ValueError(msg)
        response_id = message.get("id") or record.get("requestId") or record.get("uuid")
        if isinstance(record.get("uuid"), str):
            self.response_at[record["uuid"]] = str(response_id)
        logged = message.get("usage")
        known = self.responses.get(str(response_id))
        if known is not None and known[1] == key:  # another block of the same response
            call, _, index = known
            usage = self._usage(str(response_id), call, logged)
            if not _same_input(call.usage, usage):
                self.conflicts.append((str(response_id), call.line, lineno))
                self.reader.ignore("conflicting repeat of a response")
                return
            target = thread.messages[index]
            target["content"] = _blocks_of(target["content"]) + _blocks_of(message.get("content"))
            thread.touch(index)
            call.usage = usage or call.usage  # the last streamed record has the final output
            return
        usage = normalize_usage(logged)
        meta: dict[str, Any] = {}
        if message.get("id"):
            meta["response_id"] = str(message["id"])
        if record.get("requestId"):
            meta["request_id"] = str(record["requestId"])
        meta.update(logged_verdict_meta(message, record))
        linked = self._linked_response(record, str(response_id))
        if linked is not None and linked in self.responses:
            meta["parent_response"] = linked
        events = self.tools_events.pop(key, None)
        if events:
            meta["tools_delta"] = "; ".join(events)
        edits = _transformations(message.get("input_transformations"))
        if edits:
            meta["rewritten"] = edits
        if ts is not None:
            meta["response_ts"] = ts  # the response's first record: the request ended by then
        compaction = self.compactions.pop(key, None)
        if compaction is not None:
            meta["rebuild"] = "compaction"
            meta["compaction"] = compaction
        call = thread.call(
            model=model,
            provider="anthropic",
            ts=self.last_ts.get(key) or ts,
            usage=usage,
            meta=meta,
        )
        call.line = lineno
        if key in self.forks:  # a conversation of its own, beside main
            call.thread_hint, call.parent_hint = key, "main"
        self.tip[key] = str(response_id)
        self.calls.append(call)
        if usage is not None:
            self.usage_seen[str(response_id)] = (call, logged, usage)
        thread.append({"role": "assistant", "content": _blocks_of(message.get("content"))})
        self.responses[str(response_id)] = (call, key, len(thread.messages) - 1)


def _transformations(value: Any) -> str | None:
    """The edits Claude Code says it made to the history before sending (2.1.275+).

    ``message.input_transformations`` lists them (``thinking_dropped`` at a message path,
    with a reason); none: ``None``.
    """
    if not isinstance(value, list) or not value:
        return None
    kinds: dict[str, int] = {}
    for item in value:
        if isinstance(item, dict):
            name = (
                f"{item.get('type')} ({item.get('reason')})"
                if item.get("reason")
                else str(item.get("type"))
            )
            kinds[name] = kinds.get(name, 0) + 1
    return ", ".join(f"{name} ×{count}" for name, count in kinds.items()) or None


def _same_input(first: Usage | None, later: Usage | None) -> bool:
    """Whether two records of one message id report the same input and cache counts."""
    if first is None or later is None:
        return True
    return (first.input_tokens, first.cache_read_tokens, first.cache_write_tokens) == (
        later.input_tokens,
        later.cache_read_tokens,
        later.cache_write_tokens,
    )


def _more_complete(later: Usage | None, first: Usage | None) -> bool:
    """Whether ``later`` is the same response's usage with more output counted."""
    if later is None or first is None or not _same_input(first, later):
        return later is not None and first is None
    return (later.output_tokens or 0) > (first.output_tokens or 0)


def _refuse_other_format(lineno: int, record: dict[str, Any]) -> None:
    """Raise for a line of another transcript format: mixed formats are not merged."""
    name = _lines.claiming_reader(lineno, json.dumps(record).encode(), NAME)
    if name is not None:
        msg = (
            f"a {name} record in a {NAME} file: formats are mixed in one file; "
            "split it and load each part on its own"
        )
        raise ValueError(msg)


class _FileReader(LineReader):
    """A session file's reader, with the calls it read and the sub-agents it names."""

    calls: list[Call]
    agents: set[str]
    titles: dict[str, str]
    spawned: dict[str, tuple[str | None, str | None]]
    prompts: dict[str, str]


def _read_file(path: Path, store: BlockStore, thread: str | None, errors: str) -> _FileReader:
    reader = _FileReader(path, errors=errors)
    reader.rebuilds = True  # each request is rebuilt from the lines before it
    state = _SessionFile(reader, store, thread)
    reader.each_record(state.add, "expected one Claude Code record per line")
    state.settle()
    if state.conflicts:
        _, first, later = state.conflicts[0]
        more = f" (+{len(state.conflicts) - 1} more)" if len(state.conflicts) > 1 else ""
        warnings.warn(
            f"{short_name(path, 24)}:{later}: repeats line {first}'s message with other "
            f"usage{more}; kept line {first}",
            CacheVizWarning,
            stacklevel=2,
        )
    reader.calls = state.calls
    reader.agents = state.agents
    reader.spawned = state.spawned
    reader.titles = state.titles
    reader.prompts = state.first_prompt
    return reader


def _near(agent: Path) -> str:
    """A sub-agent log named by its last components (``subagents/agent-<id>.jsonl``)."""
    return f"{agent.parent.name}/{short_name(agent)}" if agent.parent.name else agent.name


def _agent_problem(agent: Path) -> str | None:
    """Why a sub-agent log can't be read, or ``None`` when it is a non-empty file."""
    if not agent.exists():
        return "a symbolic link that loops or points nowhere"
    if agent.is_dir():
        return "a folder, not a sub-agent log"
    if not agent.is_file():
        return "not a regular file"
    try:
        if agent.stat().st_size == 0:
            return "empty (the sub-agent wrote nothing)"
    except OSError as exc:
        return f"can't be read ({exc.strerror})"
    return None


def _agent_meta(agent: Path) -> tuple[str | None, str | None]:
    """``agent-<id>.meta.json``'s ``agentType`` and ``description`` (``None`` when absent)."""
    try:
        meta = json.loads(agent.with_suffix(".meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    if not isinstance(meta, dict):
        return None, None
    kind, what = meta.get("agentType"), meta.get("description")
    return (kind if isinstance(kind, str) else None, what if isinstance(what, str) else None)


def _agent_kind(agent_id: str) -> str | None:
    """The kind an agent id spells (``aside_question-fcbf…``, ``acompact-…``), if any."""
    head, sep, _ = agent_id.rpartition("-")
    return head if sep and head and not head[0].isdigit() else None


def _name_threads(
    calls: list[Call],
    files: dict[str, tuple[Path, str]],
    spawned: dict[str, tuple[str | None, str | None]],
    prompts: dict[str, str],
) -> None:
    """Give every sub-agent thread its name (:func:`cacheviz.model.subagent_name`).

    What it was asked to do: its ``meta.json``'s description, else the description of
    the ``Task`` call whose prompt its first message is, or whose result names its id
    (``warmup`` for Claude Code 2.0's warm-up agents); else its type, else its id.
    Numbered by order of first call.

    Parameters
    ----------
    calls
        The session's calls, in request-time order; their ``thread_hint`` is renamed.
    files
        Thread key of each sub-agent file -> its path and agent id.
    spawned
        A ``Task`` call's prompt (on one line), or ``agent:<id>`` of the agent its result
        names -> its ``subagent_type`` and ``description``.
    prompts
        Thread key -> the thread's first user text.
    """
    names: dict[str, str] = {"main": "main"}
    taken = {"main"}
    for call in calls:
        key = call.thread_hint
        if key is None or key in names:
            continue
        path_id = files.get(key)
        kind, what = _agent_meta(path_id[0]) if path_id is not None else (None, None)
        prompt = prompts.get(key, "")
        task_kind, task_what = spawned.get(prompt) or spawned.get(key) or (None, None)
        if prompt == _WARMUP:
            task_what = "warmup"
        ident = path_id[1] if path_id is not None else key.removeprefix("sidechain:")
        base = subagent_name(what or task_what, kind or task_kind or _agent_kind(ident), ident)
        names[key] = numbered(base, taken)
    for call in calls:
        if call.thread_hint is not None:
            call.thread_hint = names.get(call.thread_hint, call.thread_hint)
        if call.parent_hint is not None:
            call.parent_hint = names.get(call.parent_hint, call.parent_hint)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Claude Code session with its sub-agents (``subagents/`` or sibling files).

    A sub-agent file that is empty, a folder or a broken link is an error naming it
    (with ``errors="skip"``: skipped and named in the warning). A sub-agent the session
    refers to whose file is missing is named in a warning. A response logged by both
    the session and a forked sub-agent counts once.
    """
    store = BlockStore()
    main = _read_file(path, store, None, errors)
    calls: list[Call] = list(main.calls)
    runs: list[list[Call]] = [list(main.calls)]  # each file's calls, in the order written
    folder = path.parent / path.stem / "subagents"
    # a FIFO or a link to /dev/zero there would never end: passed over (a folder or a
    # broken link of that name is an error naming it)
    agents = (
        sorted(a for a in folder.glob("agent-*.jsonl") if not special(a)) if folder.is_dir() else []
    )
    agents += sibling_agents(path)
    found: set[str] = set()
    files: dict[str, tuple[Path, str]] = {}
    prompts = dict(main.prompts)
    for agent in agents:
        agent_id = agent.stem.removeprefix("agent-")
        found.add(agent_id)
        thread = f"agent:{agent_id}"
        files[thread] = (agent, agent_id)
        problem = _agent_problem(agent)
        if problem is not None:
            main.fail(None, f"sub-agent log {_near(agent)} is {problem}")
            continue
        try:
            sub = _read_file(agent, store, thread, errors)
        except OSError as exc:
            main.fail(None, f"sub-agent log {_near(agent)} can't be read ({exc.strerror})")
            continue
        except TranscriptError as exc:
            if errors == "raise":
                raise
            main.fail(None, f"sub-agent log {exc}")
            continue
        source = str(agent.relative_to(path.parent)) if agent.is_relative_to(path.parent) else None
        for call in sub.calls:
            call.parent_hint = "main"
            call.source = source or agent.name
        calls += sub.calls
        prompts |= sub.prompts
        runs.append(list(sub.calls))
        main.in_flight.update(sub.in_flight)
        main.skipped += [type(s)(s.line, f"{agent.name}: {s.reason}") for s in sub.skipped]
        main.usage_nulled += [
            type(s)(s.line, f"{agent.name}: {s.reason}") for s in sub.usage_nulled
        ]
        for kind, count in sub.ignored.items():
            main.ignored[kind] = main.ignored.get(kind, 0) + count
    _name_threads(order_by_time(calls), files, main.spawned, prompts)
    calls, replayed = drop_replays(calls)
    if replayed:
        main.ignored[REPLAYED] = replayed
    missing = sorted(main.agents - found)
    if missing:
        first = missing[0] if len(missing[0]) <= 13 else f"{missing[0][:12]}…"
        shown = first + (f", +{len(missing) - 1}" if len(missing) > 1 else "")
        warnings.warn(
            f"{short_name(path, 24)}: {len(missing)} sub-agent(s) missing from subagents/ "
            f"({shown}); not counted",
            CacheVizWarning,
            stacklevel=3,
        )
    kept = {id(call) for call in calls}
    runs = [[call for call in run if id(call) in kept] for run in runs]
    session = main.session(NAME, calls, store, runs=runs)
    session.title = next((main.titles[k] for _, k in _TITLES if k in main.titles), None)
    return session


def drop_replays(calls: list[Call]) -> tuple[list[Call], int]:
    """Keep one call per response id; a fork's own calls start from its parent's prefix.

    The call kept is the parent's, with the most complete usage of the copies (Claude
    Code logs a streamed response's early output count; a fork replays its final one).
    A thread that replays another's responses is a fork of it: its calls' unlogged
    prefix (system prompt and tools, which a fork shares to reuse the cache) becomes the
    parent's, and its parent is that thread. Returns the calls kept and how many were
    replays.
    """
    if len(calls) < 2:
        return calls, 0
    # flag_replays' key, without building its frame when no key repeats (most sessions:
    # the frame, its sort and filters were a fifth of reading a small session)
    ids = [(c.provider, c.meta.get("response_id")) for c in calls]
    keys = [f"{provider}:{id_}" for provider, id_ in ids if id_ is not None]
    if len(set(keys)) == len(keys):
        return calls, 0
    frame = pl.DataFrame(
        {
            "provider": [c.provider for c in calls],
            "response_id": [c.meta.get("response_id") for c in calls],
            "ts": [c.ts.timestamp() if c.ts is not None else None for c in calls],
            "path": [""] * len(calls),
            "parent_thread": [c.parent_hint for c in calls],
            "call": list(range(len(calls))),
        },
        schema={
            "provider": pl.String,
            "response_id": pl.String,
            "ts": pl.Float64,
            "path": pl.String,
            "parent_thread": pl.String,
            "call": pl.Int64,
        },
    )
    flagged = flag_replays(frame)
    repeats = flagged.filter(pl.col(REPEAT))
    if not repeats.height:
        return calls, 0
    first: dict[tuple[str, str], Call] = {}
    for index in flagged.filter(~pl.col(REPEAT))["call"]:
        call = calls[index]
        if call.meta.get("response_id") is not None:
            first[(call.provider, call.meta["response_id"])] = call
    parent_of: dict[str | None, Call] = {}
    for index in repeats["call"]:
        copy = calls[index]
        kept = first[(copy.provider, copy.meta["response_id"])]
        if _more_complete(copy.usage, kept.usage):
            kept.usage = copy.usage  # a fork replays the final record of a streamed response
        if kept.thread_hint != copy.thread_hint:
            parent_of.setdefault(copy.thread_hint, kept)
    dropped = set(repeats["call"].to_list())
    out = [c for i, c in enumerate(calls) if i not in dropped]
    for call in out:
        parent = parent_of.get(call.thread_hint)
        if parent is None or not call.blocks or not parent.blocks:
            continue
        call.parent_hint = parent.thread_hint
        if call.blocks[0].label == UNLOGGED_LABEL and parent.blocks[0].label == UNLOGGED_LABEL:
            call.blocks[0] = parent.blocks[0]
            call.hashes[0] = parent.blocks[0].hash
    return out, len(dropped)
