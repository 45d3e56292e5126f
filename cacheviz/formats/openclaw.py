"""OpenClaw sessions (``~/.openclaw/agents/<agent>/sessions/<session>.jsonl``).

OpenClaw runs pi's agent and writes pi's session format (:mod:`cacheviz.formats.pi`,
whose rules apply: one call per assistant message with non-zero usage; a failed request,
``stopReason: "error"`` with zero usage, is not a call). What it adds:

* ``custom`` entries of its own: ``model-snapshot`` (``data: {provider, modelApi,
  modelId}``) names the model of the messages that follow when a message does not, and
  ``openclaw:*`` entries (bootstrap context, prompt errors) are not sent;
* a ``/reset`` (or its daily reset) renames the transcript to
  ``<session>.jsonl.reset.<time>`` and starts a new one; a deleted session becomes
  ``<session>.jsonl.deleted.<time>``. Each such file is the whole earlier session: read
  as a session of its own (it is not a copy of the live file). ``sessions.json`` beside
  them is OpenClaw's index, not a transcript;
* sub-agents (``sessions_spawn``) run in sessions of their own, files of their own.

The folders ``~/.openclaw`` and the older ``~/.clawdbot``, ``~/.moltbot`` and
``~/.moldbot`` (``$OPENCLAW_DIR``, comma-separated) are scanned. A file is OpenClaw's
rather than pi's when it sits under ``agents/<agent>/sessions/``, is a ``.reset.`` /
``.deleted.`` archive, or holds OpenClaw's own entries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cacheviz.formats.pi import PiSession, is_entry, is_header, read_session, records
from cacheviz.model import Session

NAME = "openclaw"
DESCRIPTION = "OpenClaw sessions (~/.openclaw/agents/<agent>/sessions/<id>.jsonl[.reset.<time>])"
_ARCHIVES = (".jsonl.reset.", ".jsonl.deleted.")


def _openclaw_entry(record: Any) -> bool:
    kind = record.get("customType") if isinstance(record, dict) else None
    return isinstance(kind, str) and (kind == "model-snapshot" or kind.startswith("openclaw"))


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` is a pi-format session that OpenClaw wrote."""
    found = records(head)
    if not found:
        return False
    first, rest = found[0], found[1:4]
    if is_header(first):
        if not all(is_entry(r) for r in rest):
            return False
    elif not (_openclaw_entry(first) and is_entry(first)):
        return False
    parts = path.parts
    in_agents = len(parts) >= 4 and parts[-2] == "sessions" and parts[-4] == "agents"
    archived = any(marker in path.name for marker in _ARCHIVES)
    return in_agents or archived or any(_openclaw_entry(r) for r in found)


class _OpenClawSession(PiSession):
    def custom(self, record: dict[str, Any]) -> None:
        data = record.get("data")
        if record.get("customType") == "model-snapshot" and isinstance(data, dict):
            model, provider = data.get("modelId"), data.get("provider")
            if isinstance(model, str) and model:
                self.model = model
            if isinstance(provider, str) and provider:
                self.provider = provider


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read an OpenClaw session (or a reset / deleted archive of one)."""
    return read_session(path, errors, NAME, _OpenClawSession)
