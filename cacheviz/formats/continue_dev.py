"""Continue's token log (``~/.continue/dev_data/0.2.0/tokensGenerated.jsonl``): usage only.

Continue (continuedev/continue; read from its dev-data schemas,
``packages/config-yaml/src/schemas/data/tokensGenerated``) appends one record per model
completion, chat and autocomplete alike, to ``tokensGenerated.jsonl``: ``{model,
provider, promptTokens, generatedTokens, eventName: "tokensGenerated", schema:
"0.2.0", createdAt, userId, userAgent, selectedProfileId}`` (schema 0.1.0 writes the
same counts). **One call per record**: input ``promptTokens`` (the whole prompt: no
cache split is logged, so cache reads and writes are not reported), output
``generatedTokens``.

No request is logged: each call's request is the opaque unlogged prefix of its model's
thread (Continue's records name no session, and do not say chat from autocomplete), its
size inferred from the reported input. Calls carry ``meta["usage_only"] = True`` and
Continue's ``provider`` in ``meta["agent_provider"]``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cacheviz.errors import UsageError
from cacheviz.formats._body import provider_for
from cacheviz.formats._conversation import Thread
from cacheviz.formats._counts import count
from cacheviz.formats._lines import LineReader
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session, SkippedLine, Usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import json_type

NAME = "continue"
DESCRIPTION = "Continue token log (~/.continue/dev_data/0.2.0/tokensGenerated.jsonl): usage only"
USAGE_ONLY = True
_DETECT_LINES = 5


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` holds Continue ``tokensGenerated`` records."""
    for line in head.splitlines()[:_DETECT_LINES]:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return False
        return (
            isinstance(record, dict)
            and record.get("eventName", "tokensGenerated") == "tokensGenerated"
            and "promptTokens" in record
            and "generatedTokens" in record
            and "model" in record
        )
    return False


class _Log:
    def __init__(self, reader: LineReader) -> None:
        self.reader = reader
        self.store = BlockStore()
        self.threads: dict[str, Thread] = {}
        self.calls: list[Call] = []

    def add(self, lineno: int, record: Any) -> None:
        if not isinstance(record, dict):
            msg = f"the line is {json_type(record)}; expected a tokensGenerated record"
            raise ValueError(msg)
        model = record.get("model")
        if not isinstance(model, str) or not model:
            msg = f"field `model` is {json_type(model)}; expected the model name"
            raise ValueError(msg)
        try:
            prompt = count(record, "promptTokens", "promptTokens")
            generated = count(record, "generatedTokens", "generatedTokens")
        except UsageError as exc:
            if self.reader.errors == "raise":
                raise
            self.reader.usage_nulled.append(SkippedLine(lineno, str(exc)))
            prompt = generated = None
        usage = (
            Usage(input_tokens=prompt, output_tokens=generated)
            if prompt is not None or generated is not None
            else None
        )
        thread = self.threads.get(model)
        if thread is None:
            thread = self.threads[model] = Thread(self.store, f"continue {model}")
        vendor = record.get("provider")
        guessed = provider_for(model)
        meta: dict[str, Any] = {"usage_only": True}
        if isinstance(vendor, str) and vendor:
            meta["agent_provider"] = vendor
        call = thread.call(
            model=model,
            provider=guessed if guessed != "unknown" else (vendor or "unknown"),
            ts=parse_ts(record.get("createdAt") or record.get("timestamp"), "createdAt"),
            usage=usage,
            meta=meta,
        )
        call.line = lineno
        self.calls.append(call)


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read Continue's ``tokensGenerated.jsonl``: one usage-only call per record."""
    reader = LineReader(path, errors=errors)
    log = _Log(reader)
    reader.each_record(log.add, "expected one Continue tokensGenerated record per line")
    return reader.session(NAME, log.calls, log.store)
