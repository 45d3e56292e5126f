"""A Cline ``ui_messages.json`` on its own: usage only, no request bytes.

Without ``api_conversation_history.json`` beside it the messages Cline sent are not
known, but every answered ``say: "api_req_started"`` event still carries the usage
Cline recorded (``tokensIn``, ``tokensOut``, ``cacheWrites``, ``cacheReads``, ``cost``);
see :mod:`cacheviz.formats.cline` for how they are read. Each call's request is the
task's unlogged prefix alone; calls carry ``meta["usage_only"] = True`` and Cline's cost
in ``meta["reported_cost_usd"]``.
"""

from __future__ import annotations

from pathlib import Path

from cacheviz.errors import TranscriptError
from cacheviz.formats import cline
from cacheviz.model import Session

NAME = "cline-ui"
DESCRIPTION = "Cline ui_messages.json alone (no conversation history): usage only"
USAGE_ONLY = True


def detect(path: Path, head: bytes) -> bool:
    """Whether ``path`` is a ``ui_messages.json`` without its conversation history."""
    if path.is_dir() or not path.name.endswith(cline.UI):
        return False
    prefix = path.name[: -len(cline.UI)]
    if (path.parent / f"{prefix}{cline.HISTORY}").is_file():
        return False  # a whole task: the cline reader's
    return head.lstrip()[:1] == b"[" and b"api_req_started" in head


class _UsageTask(cline._Task):
    """A Cline task whose conversation history is not there."""

    def load_history(self) -> None:
        """Nothing to read: usage only."""


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read the usage of every answered request of a Cline ``ui_messages.json``.

    Raises
    ------
    TranscriptError
        When the file is not JSON, an event has the wrong shape, or no request was answered.
    """
    if not path.name.endswith(cline.UI):
        msg = f"expected Cline's {cline.UI}"
        raise TranscriptError(msg, path=path)
    task = _UsageTask(path.parent, path.name[: -len(cline.UI)], errors)
    task.load_metadata()
    calls = task.calls(task.requests())
    for call in calls:
        call.meta["usage_only"] = True
    session = task.session(calls)
    session.format = NAME
    return session
