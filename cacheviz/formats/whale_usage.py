"""Whale's usage ledger (``~/.whale/usage.jsonl``): usage only, no request bytes.

One JSON record per call: ``ts`` (epoch milliseconds), ``session``, ``model``,
``prefix_fingerprint``, ``prompt_tokens``, ``completion_tokens``,
``prompt_cache_hit_tokens``, ``prompt_cache_miss_tokens``, ``cache_hit_ratio``,
``reasoning_replay_tokens`` and Whale's own ``cost_usd``. Counts are DeepSeek's
(``prompt_tokens`` includes the cache hits; DeepSeek reports no cache writes).

Each Whale session is a thread of one ledger. A call's request is one opaque block that
stands for the session's system+tools prefix under its ``prefix_fingerprint``: when the
fingerprint changes within a session the block changes, so the change shows as a drift
at hash level (no offset inside the prefix is known). The block's size is inferred from
reported usage like any unlogged prefix (after a marker block naming the fingerprint, so
that a new fingerprint is a new first block). Calls carry ``meta["usage_only"] = True``,
Whale's cost in ``meta["reported_cost_usd"]`` and the fingerprint in
``meta["prefix_fingerprint"]``.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cacheviz.formats._lines import LineReader
from cacheviz.model import OPAQUE, Block, Call, Content, Session
from cacheviz.reported._usage import normalize_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import digest, json_type

NAME = "whale-usage"
DESCRIPTION = "Whale usage ledger (~/.whale/usage.jsonl): usage only, no request bytes"
USAGE_ONLY = True
_KEYS = ("prefix_fingerprint", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens")
_COUNTS = (
    "prompt_tokens",
    "completion_tokens",
    "prompt_cache_hit_tokens",
    "prompt_cache_miss_tokens",
    "reasoning_replay_tokens",
)
_DETECT_LINES = 5


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` looks like a Whale usage ledger."""
    if path.is_dir():
        return False
    for line in head.splitlines()[:_DETECT_LINES]:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        return isinstance(record, dict) and "session" in record and any(k in record for k in _KEYS)
    return False


def _ts(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"field `ts` is {json_type(value)}; expected epoch milliseconds"
        raise ValueError(msg)
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        msg = f"field `ts` {value!r} is not a time; expected epoch milliseconds"
        raise ValueError(msg) from None


def _check(record: dict[str, Any]) -> None:
    for key in _COUNTS:
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            msg = f"field `{key}` is {json_type(value)}; expected a token count"
            raise ValueError(msg)
    cost = record.get("cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        msg = f"field `cost_usd` is {json_type(cost)}; expected a number"
        raise ValueError(msg)


class _Ledger:
    def __init__(self, reader: LineReader) -> None:
        self.reader = reader
        self.store = BlockStore()
        self.blocks: dict[tuple[str, str], list[Block]] = {}
        self.calls: list[Call] = []

    def _prefix(self, session: str, fingerprint: str) -> list[Block]:
        """A marker block naming the fingerprint, then the opaque prefix it stands for.

        The marker makes a changed fingerprint a changed first block (a drift at hash
        level); the opaque block is sized from reported usage.
        """
        key = (session, fingerprint)
        blocks = self.blocks.get(key)
        if blocks is None:
            text = f"prefix_fingerprint {fingerprint}"
            marker = digest(text.encode())
            self.store.contents[marker] = Content(text.encode(), text, "system")
            opaque = digest(f"whale prefix {session} {fingerprint}".encode())
            self.store.contents[opaque] = Content(
                b"", {"unlogged": session, "prefix_fingerprint": fingerprint}, OPAQUE
            )
            blocks = [
                Block(len(self.store.blocks), "system", 0, "prefix_fingerprint", marker),
                Block(len(self.store.blocks) + 1, "system", 1, "unlogged prefix", opaque),
            ]
            self.store.blocks += blocks
            self.blocks[key] = blocks
        return blocks

    def add(self, lineno: int, record: Any) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}; expected a Whale usage record object"
            raise ValueError(msg)
        session = record.get("session")
        model = record.get("model")
        if not isinstance(session, str) or not session:
            msg = f"field `session` is {json_type(session)}; expected the session id"
            raise ValueError(msg)
        if not isinstance(model, str) or not model:
            msg = f"field `model` is {json_type(model)}; expected the model name"
            raise ValueError(msg)
        _check(record)
        fingerprint = record.get("prefix_fingerprint")
        fingerprint = fingerprint if isinstance(fingerprint, str) else ""
        usage = normalize_usage(
            {k: record[k] for k in _COUNTS[:4] if record.get(k) is not None}
            or {"prompt_cache_hit_tokens": None}
        )
        meta: dict[str, Any] = {
            "usage_only": True,
            "session": session,
            "prefix_fingerprint": fingerprint or None,
        }
        if record.get("cost_usd") is not None:
            meta["reported_cost_usd"] = float(record["cost_usd"])
        if record.get("reasoning_replay_tokens") is not None:
            meta["reasoning_replay_tokens"] = int(record["reasoning_replay_tokens"])
        call = Call(
            -1,
            lineno,
            _ts(record.get("ts")),
            "deepseek",
            "chat.completions",
            model,
            self._prefix(session, fingerprint),
            usage,
            f"whale:{session}",
            meta,
            reconstructed=True,
            message_start=2,
        )
        self.calls.append(call)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read a Whale usage ledger: one call per record, one thread per Whale session.

    Raises
    ------
    TranscriptError
        On the first bad line (``errors="raise"``) or when no call could be read.
    """
    reader = LineReader(path, errors=errors)
    ledger = _Ledger(reader)
    reader.each_record(ledger.add, "expected one Whale usage record per line")
    return reader.session(NAME, ledger.calls, ledger.store)
