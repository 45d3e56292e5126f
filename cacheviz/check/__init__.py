"""``cacheviz check``: the KV-cache layout rules as a linter over one session.

>>> from cacheviz.check import RULES
>>> sorted(RULES)[:3]
['dynamic_profile', 'dynamic_system', 'env_details_stripped']

Each rule reads the analysis frames (calls, drifts) and the session's blocks; see
docs/check.md for the rules, their sources in the seeds, and example output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cacheviz.check._breakpoint_rules import uncached_history
from cacheviz.check._content_rules import (
    prefix_variants,
    subagent_misaligned,
    text_format,
    thinking_config,
)
from cacheviz.check._context import Context, Finding
from cacheviz.check._drift_rules import drift_findings
from cacheviz.check._rules import RULES, SEVERITIES, Rule
from cacheviz.check._ttl_rules import ttl_gaps

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.model import Session

# order matters: rules that claim drifts run before the drift rules
_PASSES: tuple[Callable[[Context], list[Finding]], ...] = (
    text_format,
    thinking_config,
    drift_findings,
    subagent_misaligned,
    prefix_variants,
    uncached_history,
    ttl_gaps,
)
_FAILING = frozenset({"error", "warning"})
_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass
class CheckResult:
    """The findings of one session, most severe first."""

    findings: list[Finding]
    path: str | None = None
    rules: list[str] = field(default_factory=lambda: list(RULES))

    @property
    def failed(self) -> bool:
        """Whether any finding is a warning or an error (``cacheviz check`` exits 1)."""
        return any(f.severity in _FAILING for f in self.findings)

    @property
    def exit_status(self) -> int:
        """0 when nothing of severity warning/error, 1 otherwise."""
        return 1 if self.failed else 0

    def to_dict(self) -> dict[str, Any]:
        """The ``cacheviz check --json`` document."""
        return {"path": self.path, "findings": [f.to_dict() for f in self.findings]}

    def __repr__(self) -> str:
        counts = ", ".join(f"{sum(f.severity == s for f in self.findings)} {s}" for s in SEVERITIES)
        return f"<CheckResult {self.path} {counts}>"


def check(
    source: str | Path | Session | Analysis,
    *,
    rules: Iterable[str] | None = None,
    allow: Iterable[str] = (),
) -> CheckResult:
    """Run the layout rules over one session.

    Parameters
    ----------
    source
        A transcript path, a :class:`~cacheviz.model.Session` or an
        :class:`~cacheviz.analysis.Analysis`.
    rules
        Rule ids to run (default: all of :data:`RULES`).
    allow
        Rule ids whose findings are left out (one id alone may be given as a string).

    Returns
    -------
    CheckResult

    Raises
    ------
    ValueError
        For a rule id in ``rules`` or ``allow`` that is not one of :data:`RULES`.
    """
    from cacheviz.analysis import Analysis
    from cacheviz.formats import load

    path: str | None = None
    if isinstance(source, str | Path):
        path = str(source)
        source = load(source)
    analysis = source if isinstance(source, Analysis) else source.analyze()
    if path is None and analysis.session.path is not None:
        path = str(analysis.session.path)
    chosen = _rule_ids(RULES if rules is None else rules, "rules")
    allowed = _rule_ids(allow, "allow")
    selected = chosen - allowed
    ctx = Context(analysis)
    findings = [f for run in _PASSES for f in run(ctx) if f.rule in selected]
    findings.sort(key=lambda f: (_ORDER[f.severity], min(f.calls, default=0), f.rule))
    return CheckResult(findings, path, sorted(selected, key=list(RULES).index))


def _rule_ids(ids: Iterable[str] | str, option: str) -> set[str]:
    """Rule ids as a set (one id alone is one rule, not its letters); unknown ids raise."""
    found = {ids} if isinstance(ids, str) else set(ids)
    unknown = sorted(str(i) for i in found - set(RULES))
    if unknown:
        msg = f"{option}: unknown rule(s) {', '.join(unknown)}; expected some of {', '.join(RULES)}"
        raise ValueError(msg)
    return found


__all__ = ["RULES", "CheckResult", "Finding", "Rule", "check"]
