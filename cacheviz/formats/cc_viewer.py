"""cc-viewer logs: the requests its fetch interceptor saw Claude Code send, and the answers.

cc-viewer (npm ``cc-viewer``, read at 1.6.219) patches ``fetch`` inside Claude Code and
appends each API request to ``~/.claude/cc-viewer/<project>/<project>_<YYYYMMDD_HHMMSS>.jsonl``
(``$CCV_LOG_DIR``, else ``$CLAUDE_CONFIG_DIR/cc-viewer``) as ``JSON.stringify(entry)``
followed by a ``---`` line. An entry is ``{timestamp, project, url, method, headers, body,
response: {status, statusText, headers, body}, duration, isStream, isHeartbeat,
isCountTokens, mainAgent, teammate?, teamName?}``; streamed answers are stored rebuilt as
one message (its ``usage`` merged from ``message_start`` and ``message_delta``). The same
shape is read from the JSONL logs of cx-viewer (its Codex twin) before its Log Store V2,
and from V2 itself (cx-viewer 1.1.20, ``~/.codex/cx-viewer/<project>/*.cxvsession/``; see
:mod:`cacheviz.formats._cxv_archive`): its objects are written with *sorted keys*, so
those calls are ``reconstructed`` (``meta["request_bytes"]`` says so).

How the log is read, as cc-viewer's own ``readLocalLog`` does:

* Each request is written twice: first in flight (``inProgress: true``, no response),
  then complete; entries are keyed by ``timestamp``, ``url`` and the request body's
  content, and the last one of a key is kept, at the place of the first (two requests in
  one millisecond to one URL stay two). An in-flight entry never completed is not a call.
* **Delta storage**: a main-agent entry (``_deltaFormat: 1``) that is not a checkpoint
  (``_isCheckpoint``, or as many messages as ``_totalMessageCount``) holds only the
  messages added since the previous main-agent request; the request is rebuilt as the
  previous one's messages plus these. cc-viewer writes a checkpoint every 10 main-agent
  requests and whenever the conversation shrank. A rebuilt request has the *previous*
  request's copy of the earlier messages: what Claude Code changed in them (a moved
  ``cache_control``) is not in the log. Such calls are ``reconstructed`` and carry
  ``meta["rebuilt_from_delta"] = True``; when the rebuilt history does not have the
  logged ``_totalMessageCount``, the first messages of the next checkpoint stand in (as
  in cc-viewer) or ``meta["delta_incomplete"] = True`` says it could not be mended.
* Other entries (checkpoints, sub-agents, teammates, side calls) keep the whole body,
  parsed by cc-viewer and re-serialized by ``JSON.stringify`` (compact, key order kept,
  non-ASCII unescaped): token-exact; bytes as sent when the client sent compact JSON
  (``meta["request_bytes"]``).

Heartbeats, token counts, failed requests and non-model URLs are counted in
``Session.ignored``. ``Call.meta`` keeps ``project``, ``main_agent``, ``teammate``,
``team``, ``duration_ms``, ``streamed``, ``response_id``. cc-viewer's cache-rebuild reasons
are computed by its viewer when shown, not stored, so there is no outside verdict to keep.
Headers are never kept (cc-viewer keeps a part of the API key in them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._body import call_from_request, first_record, provider_for
from cacheviz.formats._cxv_archive import Archive, archives_in, is_archive
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.formats.claude_trace import sse_usage
from cacheviz.model import Call, Session, SkippedLine
from cacheviz.reported._usage import UsageError, normalize_usage
from cacheviz.request._blocks import BlockStore, RenderError
from cacheviz.request._jsonspan import ObjectScan, json_type

NAME = "cc-viewer"
DESCRIPTION = "cc-viewer / cx-viewer logs (~/.claude/cc-viewer/<project>/*.jsonl, '---' separated)"
SEPARATOR = "---"
REQUEST_BYTES = "re-serialized by cc-viewer"
SORTED_BYTES = "keys sorted by cx-viewer's V2 store"
_EXPECTED = (
    "expected a cc-viewer entry {timestamp, url, body, response: {status, body}} "
    "on its own line, entries separated by '---' lines"
)
_FOLDER_PEEK = 10  # logs a folder's detection looks at
_FIRST_LINE = 1 << 26  # the longest first line read to detect a log in a folder
_FLAGS = ("mainAgent", "isStream", "isHeartbeat", "isCountTokens", "inProgress", "_deltaFormat")


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a cc-viewer log (an entry, then ``---``) or a folder of them."""
    if path.is_dir():  # a look at the first few logs: a Claude Code folder holds thousands
        if is_archive(path) or archives_in(path):
            return True
        logs = [log for log in sorted(path.glob("*.jsonl")) if log.is_file()]
        return any(_is_log(log) for log in logs[:_FOLDER_PEEK])
    record = first_record(head)
    return (
        isinstance(record, dict)
        and isinstance(record.get("url"), str)
        and isinstance(record.get("timestamp"), str)
        and "body" in record
        and "response" in record
        and any(flag in record for flag in _FLAGS)
    )


@dataclass(slots=True)
class _Entry:
    line: int
    value: dict[str, Any]
    delta: bool = False  # its messages were rebuilt from a delta entry
    incomplete: bool = False  # rebuilt, but not to the logged message count
    sorted_keys: bool = False  # from cx-viewer's V2 archive: every object's keys sorted


def _is_delta(entry: dict[str, Any]) -> bool:
    return bool(entry.get("_deltaFormat")) and entry.get("mainAgent") is True


def _is_checkpoint(entry: dict[str, Any]) -> bool:
    if not entry.get("_deltaFormat") or entry.get("_isCheckpoint"):
        return True
    messages = _messages(entry)
    return messages is not None and entry.get("_totalMessageCount") == len(messages)


def _messages(entry: dict[str, Any]) -> list[Any] | None:
    body = entry.get("body")
    messages = body.get("messages") if isinstance(body, dict) else None
    return messages if isinstance(messages, list) else None


def reconstruct(entries: list[_Entry]) -> None:
    """Rebuild the messages of delta entries in place, as cc-viewer's reader does."""
    accumulated: list[Any] = []
    broken: list[int] = []
    for index, item in enumerate(entries):
        entry = item.value
        if entry.get("inProgress"):
            continue
        messages = _messages(entry)
        if not _is_delta(entry):
            if entry.get("mainAgent") is True and messages is not None:
                accumulated = list(messages)
            continue
        if messages is None:
            continue
        if _is_checkpoint(entry):
            accumulated = list(messages)
            continue
        accumulated = [*accumulated, *messages]
        entry["body"] = {**entry["body"], "messages": accumulated}
        item.delta = True
        total = entry.get("_totalMessageCount")
        if isinstance(total, int) and total and len(accumulated) != total:
            broken.append(index)
    for index in broken:
        _mend(entries, index)


def _mend(entries: list[_Entry], index: int) -> None:
    """A delta entry rebuilt to the wrong length: take the next checkpoint's first messages."""
    entry = entries[index].value
    total = entry["_totalMessageCount"]
    for later in entries[index + 1 :]:
        candidate = later.value
        messages = _messages(candidate)
        if candidate.get("mainAgent") is not True or messages is None or later.delta:
            continue
        count = candidate.get("_totalMessageCount") or len(messages)
        if _is_checkpoint(candidate) and isinstance(count, int) and count >= total:
            entry["body"] = {**entry["body"], "messages": messages[:total]}
            return
    entries[index].incomplete = True


def _api(url: str) -> str | None:
    path = url.split("?", 1)[0].rstrip("/")
    if path.endswith("/messages"):
        return "messages"
    if path.endswith("/chat/completions"):
        return "chat.completions"
    if path.endswith("/responses"):
        return "responses"
    return None


def _call(
    item: _Entry, store: BlockStore, refs: list[ObjectScan], reader: LineReader
) -> Call | None:
    entry = item.value
    url = entry.get("url")
    if not isinstance(url, str):
        msg = f"field `url` is {json_type(url)}; expected the request URL"
        raise ValueError(msg)
    if entry.get("isHeartbeat") is True:
        reader.ignore("heartbeat")
        return None
    if entry.get("isCountTokens") is True or "count_tokens" in url:
        reader.ignore("token count request")
        return None
    if entry.get("inProgress") or entry.get("response") is None:
        reader.ignore("request without a response (in flight or cut off)")
        return None
    api = _api(url)
    if api is None:
        reader.ignore("non-model request")
        return None
    response = entry["response"]
    if not isinstance(response, dict):
        msg = f"field `response` is {json_type(response)}; expected an object or null"
        raise ValueError(msg)
    status = response.get("status")
    if not (isinstance(status, int) and 200 <= status < 300) or response.get("error"):
        reader.ignore("failed request (HTTP error)")
        return None
    body = entry.get("body")
    if isinstance(body, str):
        reader.ignore("request body that was not JSON")
        return None
    if not isinstance(body, dict):
        msg = f"field `body` is {json_type(body)}; expected the request body object"
        raise ValueError(msg)
    answer = response.get("body")
    raw_usage = answer.get("usage") if isinstance(answer, dict) else None
    if isinstance(answer, str):
        raw_usage = sse_usage(answer)
    meta = _meta(entry, answer)
    if item.sorted_keys:
        meta["request_bytes"] = SORTED_BYTES
    if item.delta:
        meta["rebuilt_from_delta"] = True
    if item.incomplete:
        meta["delta_incomplete"] = True
    model = body.get("model")
    provider = provider_for(model) if isinstance(model, str) and model else "unknown"
    if provider == "unknown":
        provider = "anthropic" if api == "messages" else "openai"
    return call_from_request(
        body,
        refs,
        store,
        model=None,
        provider=provider,
        api=api,
        ts=parse_ts(entry.get("timestamp"), "timestamp"),
        usage=normalize_usage(raw_usage),
        meta=meta,
        reconstructed=item.delta or item.sorted_keys,
    )


def _meta(entry: dict[str, Any], answer: Any) -> dict[str, Any]:
    found = {
        "project": entry.get("project"),
        "teammate": entry.get("teammate"),
        "team": entry.get("teamName"),
        "duration_ms": entry.get("duration"),
        "response_id": answer.get("id") if isinstance(answer, dict) else None,
    }
    meta: dict[str, Any] = {
        k: v for k, v in found.items() if isinstance(v, (str, int)) and not isinstance(v, bool)
    }
    meta["main_agent"] = entry.get("mainAgent") is True
    meta["streamed"] = entry.get("isStream") is True
    meta["request_bytes"] = REQUEST_BYTES
    return meta


def _entries(reader: LineReader) -> list[_Entry]:
    """Every entry, de-duplicated by content (the last kept, first place).

    An entry is the same request as another when its ``timestamp``, ``url`` and request
    ``body`` are: its in-flight copy is replaced by its complete one, a copy written
    twice is one call. Two requests sharing only ``timestamp`` and ``url`` (parallel
    calls in one millisecond) are two calls, and so are two complete answers to one body.
    """
    by_key: dict[tuple[Any, Any], list[_Entry]] = {}  # timestamp + url -> its entries
    order: list[_Entry] = []
    for lineno, text in reader.lines():
        if text.strip() == SEPARATOR:
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            reader.fail(lineno, f"not valid JSON ({exc.msg}, column {exc.colno}); {_EXPECTED}")
            continue
        except (ValueError, RecursionError) as exc:
            reader.fail(lineno, f"not valid JSON ({exc}); {_EXPECTED}")
            continue
        if not isinstance(value, dict):
            reader.fail(lineno, f"the entry is {json_type(value)}; {_EXPECTED}")
            continue
        key = (_hashable(value.get("timestamp")), _hashable(value.get("url")))
        held = next((e for e in by_key.get(key, ()) if _same_call(e.value, value)), None)
        if held is None:
            entry = _Entry(lineno, value)
            by_key.setdefault(key, []).append(entry)
            order.append(entry)
        elif _complete(value) or not _complete(held.value):
            held.line, held.value = lineno, value  # its complete copy, or a copy written twice
    return order


def _complete(entry: dict[str, Any]) -> bool:
    return not entry.get("inProgress") and entry.get("response") is not None


def _same_call(held: dict[str, Any], entry: dict[str, Any]) -> bool:
    """Whether ``entry`` is ``held`` written again: the same body, and no other answer."""
    if held.get("body") != entry.get("body"):
        return False
    both = _complete(held) and _complete(entry)
    return not both or held.get("response") == entry.get("response")


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, type(None))) else json_type(value)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a cc-viewer log, or every log of a project folder, as one session.

    See :func:`cacheviz.formats.load` for ``errors``. In a folder, each log (one per
    Claude Code run, named by its start time) is rebuilt on its own, in name order; a
    call's ``meta["log_file"]`` names its log.

    Raises
    ------
    TranscriptError
        On the first bad entry (``errors="raise"``) or when no call could be read.
    """
    store = BlockStore()
    if is_archive(path):
        reader = LineReader(path / "timeline.jsonl", errors=errors)
        return reader.session(NAME, _read_archive(path, reader, store), store)
    if not path.is_dir():
        reader = LineReader(path, errors=errors)
        return reader.session(NAME, _read_log(reader, store), store)
    sources = [(log, LineReader(log, errors=errors)) for log in logs_in(path)]
    sources += [(a, LineReader(a / "timeline.jsonl", errors=errors)) for a in archives_in(path)]
    if not sources:
        msg = (
            "no cc-viewer log (<project>_<time>.jsonl) or cx-viewer session (*.cxvsession) "
            "in this folder; pass a log file"
        )
        raise TranscriptError(msg, path=path)
    folder = LineReader(path, errors=errors)
    calls: list[Call] = []
    runs: list[list[Call]] = []  # each log's calls, in the order written
    for source, reader in sources:
        if source.is_dir():
            found = _read_archive(source, reader, store)
        else:
            found = _read_log(reader, store)
        for call in found:
            call.meta["log_file"] = source.name
            calls.append(call)
        runs.append(list(found))
        folder.in_flight.update(reader.in_flight)
        name = source.name if source.is_file() else f"{source.name}/timeline.jsonl"
        folder.skipped += [
            SkippedLine(None, f"{name} line {s.line} ({s.reason})") for s in reader.skipped
        ]
        folder.usage_nulled += [
            SkippedLine(None, f"{name} line {s.line} ({s.reason})") for s in reader.usage_nulled
        ]
        for kind, count in reader.ignored.items():
            folder.ignored[kind] = folder.ignored.get(kind, 0) + count
    return folder.session(NAME, calls, store, runs=runs)


def logs_in(folder: Path) -> list[Path]:
    """The cc-viewer logs of a folder (``*.jsonl`` opening with an entry), by name."""
    return [log for log in sorted(folder.glob("*.jsonl")) if log.is_file() and _is_log(log)]


def _is_log(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.readline(_FIRST_LINE)
    except OSError:
        return False
    return detect(path, head)


def _read_log(reader: LineReader, store: BlockStore) -> list[Call]:
    entries = _entries(reader)
    reconstruct(entries)
    # a skipped line of a delta log is missing from the requests rebuilt after it
    reader.rebuilds = any(item.delta for item in entries)
    return _calls(entries, reader, store)


def _read_archive(folder: Path, reader: LineReader, store: BlockStore) -> list[Call]:
    """The calls of a cx-viewer V2 session archive (errors name ``timeline.jsonl:N``)."""
    archive = Archive(folder)
    complete = reader.path.is_file() and reader.path.read_bytes().endswith(b"\n")
    lines = list(reader.lines())
    for position, (lineno, text) in enumerate(lines):
        try:
            archive.apply(json.loads(text), lineno)
        except (ValueError, RecursionError) as exc:
            if position == len(lines) - 1 and not complete:
                reader.ignore("timeline record still being written")
                continue
            reason = "not valid JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            reader.fail(lineno, f"{reason}; expected a cx-viewer V2 timeline record")
    entries = []
    for key, line in archive.first_line.items():
        try:
            entries.append(_Entry(line, archive.entry(key), sorted_keys=True))
        except ValueError as exc:
            reader.fail(line, str(exc))
    return _calls(entries, reader, store)


def _calls(entries: list[_Entry], reader: LineReader, store: BlockStore) -> list[Call]:
    refs: list[ObjectScan] = []
    calls: list[Call] = []
    with reader.usage_policy() as done:
        for item in entries:
            call = _one(item, store, refs, reader)
            done(item.line)
            if call is not None:
                call.line = item.line
                calls.append(call)
    return calls


def _one(
    item: _Entry, store: BlockStore, refs: list[ObjectScan], reader: LineReader
) -> Call | None:
    try:
        return _call(item, store, refs, reader)
    except RenderError as exc:
        field = exc.field.replace("request", "body", 1)
        reader.fail(item.line, f"{exc}; fix field `{field}` or skip the entry")
    except UsageError as exc:
        reader.fail(item.line, str(exc))
    except ValueError as exc:
        reader.fail(item.line, f"{exc}; {_EXPECTED}")
    except RecursionError:
        reader.fail(item.line, "JSON nested too deeply")
    return None
