"""What every rule reads: the analysis frames as rows, the session's blocks, helpers.

Calls and drifts belong to a ``thread`` (a conversation); a drift's ``cost_usd`` and
``material`` come from the analysis (the what-if of :mod:`cacheviz.money._costs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from cacheviz.model import Call, Content
from cacheviz.request._blocks import render_text

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding of ``cacheviz check``.

    ``calls`` are call indexes; ``cost_usd`` is what the session would have saved
    without it (``None`` when it can't be priced: never a guess).
    """

    rule: str
    severity: str
    calls: list[int]
    message: str
    cost_usd: float | None = None
    thread: str | None = None
    line: int | None = None  # transcript line of the first call involved

    def to_dict(self) -> dict[str, Any]:
        """The finding as in ``cacheviz check --json``."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "calls": list(self.calls),
            "message": self.message,
            "cost_usd": self.cost_usd,
            "thread": self.thread,
        }


# The columns of the calls frame that rules read from ``Context.calls`` rows.
CALL_COLUMNS = (
    "call",
    "line",
    "ts",
    "thread",
    "parent_thread",
    "provider",
    "model",
    "ttl_seconds",
    "prev_call",
    "prev_common_tokens",
    "miss_cause",
    "ideal_usd",
    "waste_usd",
    "prefix_hash",
)


@dataclass
class Context:
    """The analysis as rules read it, plus the drifts a more specific rule has claimed."""

    analysis: Analysis
    claimed: set[int] = field(default_factory=set)  # drift call indexes already explained

    @cached_property
    def calls(self) -> list[dict[str, Any]]:
        """The calls frame as rows, by index: the columns of :data:`CALL_COLUMNS`.

        Only the columns the rules read: every column of every call as a dict is ~1.5 KB
        a call (38 MB on a 25,000-call session).
        """
        return self.analysis.calls.select(CALL_COLUMNS).to_dicts()

    @cached_property
    def drifts(self) -> list[dict[str, Any]]:
        """The drifts frame as rows."""
        return self.analysis.drifts.to_dicts()

    @property
    def session_calls(self) -> list[Call]:
        """The session's calls (blocks, params, timestamps)."""
        return self.analysis.session.calls

    @cached_property
    def threads(self) -> dict[str, list[int]]:
        """Call indexes of every thread, in request order."""
        out: dict[str, list[int]] = {}
        for row in self.calls:
            out.setdefault(row["thread"], []).append(row["call"])
        return out

    @cached_property
    def breaks_at(self) -> dict[tuple[str, str, int], int]:
        """How many drifts of each thread break at each place: ``(thread, part, position)``."""
        out: dict[tuple[str, str, int], int] = {}
        for drift in self.drifts:
            key = (drift["thread"], drift["part"], drift["position"])
            out[key] = out.get(key, 0) + 1
        return out

    def thread_of(self, call: int) -> str:
        """The thread a call belongs to."""
        return self.calls[call]["thread"]

    def parent_of(self, thread: str) -> str | None:
        """The thread a sub-agent hangs under, when the transcript says so."""
        return self.calls[self.threads[thread][0]].get("parent_thread")

    def content(self, digest: str) -> Content:
        """The content of a block hash."""
        return self.analysis.session.contents[digest]

    def rendered(self, digest: str) -> tuple[str | None, str]:
        """``(role, text)`` of a block in one rendering (its value may be parsed anew)."""
        return render_text(self.content(digest))

    def text(self, digest: str) -> str:
        """What the tokenizer sees of a block."""
        return render_text(self.content(digest))[1]

    def role(self, digest: str) -> str | None:
        """The role of a message block (``None`` for tools and system)."""
        return render_text(self.content(digest))[0]

    def system_text(self, call: int) -> str:
        """The system blocks of a call, joined by newlines."""
        blocks = self.session_calls[call].blocks
        return "\n".join(self.text(b.hash) for b in blocks if b.part == "system")

    def tools(self, call: int) -> list[tuple[str, str]]:
        """``(name, hash)`` of a call's tool definitions, in order."""
        return [(b.label, b.hash) for b in self.session_calls[call].blocks if b.part == "tools"]

    def line(self, call: int) -> int | None:
        """The transcript line a call came from."""
        return self.calls[call].get("line")

    def cost(self, drifts: list[dict[str, Any]]) -> float | None:
        """Sum of the drifts' ``cost_usd``; ``None`` when unknown for any of them."""
        if not drifts:
            return None
        values = [v for d in drifts if (v := d.get("cost_usd")) is not None]
        if len(values) < len(drifts):
            return None
        return float(sum(values))

    def immaterial(self, drifts: list[dict[str, Any]]) -> bool:
        """True when every one of the drifts cost nothing (the analysis' ``material``)."""
        return bool(drifts) and all(d.get("material") is False for d in drifts)
