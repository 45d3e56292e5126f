"""Test helpers for agent developers: keep a cache-friendly layout from regressing.

Record a run of your agent as a cacheviz request log (docs/format.md), then in its
test suite::

    from cacheviz.testing import assert_cache_friendly

    def test_agent_keeps_its_cache(tmp_path):
        log = run_agent_and_record(tmp_path / "run.jsonl")
        assert_cache_friendly(log, allow=["ttl_gaps"])
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from cacheviz.check import CheckResult, check

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis
    from cacheviz.model import Session


def assert_cache_friendly(
    log: str | Path | Session | Analysis, allow: Iterable[str] = ()
) -> CheckResult:
    """Fail when ``cacheviz check`` finds a warning or an error in ``log``.

    Parameters
    ----------
    log
        A transcript path (any format cacheviz reads), a Session or an Analysis.
    allow
        Rule ids to tolerate (e.g. ``["subagent_misaligned"]`` for a framework whose
        sub-agents have their own prompt on purpose).

    Returns
    -------
    CheckResult
        The result, when it passes (``info`` findings may remain).

    Raises
    ------
    AssertionError
        Listing every failing finding: rule, severity, calls and message.
    """
    __tracebackhide__ = True
    result = check(log, allow=allow)
    if result.failed:
        lines = [
            f"- {f.rule} ({f.severity}, calls {f.calls}): {f.message}"
            for f in result.findings
            if f.severity != "info"
        ]
        where = f" in {result.path}" if result.path else ""
        raise AssertionError(
            f"the prompt cache layout broke{where}:\n"
            + "\n".join(lines)
            + "\n(allow=[...] tolerates a rule; docs/check.md explains each one)"
        )
    return result
