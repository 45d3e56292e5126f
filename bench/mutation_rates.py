"""Kill rate per module from a mutmut run (``make mutation``): a table for the docs.

Reads ``mutants/**/*.py.meta`` (mutmut 3). Killed = a test failed or timed out with the
mutant in place; survived = the whole selected suite passed; mutants never run (``not
checked``, ``no tests``) are counted apart, not as killed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 36, 24, -24, 152, 255}  # a failing test, or a timeout


def rates(root: Path = Path("mutants")) -> list[tuple[str, int, int, int]]:
    """``(module, killed, survived, not run)`` per mutated module."""
    rows = []
    for meta in sorted(root.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"].values()
        counts = Counter(
            "killed" if c in KILLED else "survived" if c == 0 else "not run" for c in codes
        )
        module = str(meta.relative_to(root)).removesuffix(".meta")
        rows.append((module, counts["killed"], counts["survived"], counts["not run"]))
    return rows


def main() -> None:
    print("| module | mutants run | killed | kill rate | not run |")
    print("|---|---:|---:|---:|---:|")
    for module, killed, survived, idle in rates():
        run = killed + survived
        rate = f"{killed / run:.0%}" if run else "-"
        print(f"| `{module}` | {run} | {killed} | {rate} | {idle} |")


if __name__ == "__main__":
    main()
