"""Reconcile simulations with reported usage on every real transcript that carries usage.

    python bench/reconcile.py [REALDATA]     # default ../shared/realdata

Each session is replayed under the provider it was recorded with (default rules), and
every call with reported usage gets a verdict (see cacheviz.money._simulate). Prints a
Markdown table: the figures in docs/simulation.md come from it.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import cacheviz  # noqa: E402


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "shared" / "realdata"
    paths = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.name != "README.md" and p.parent.name != "cline_task"
    )
    paths.append(root / "cline_task")
    print(
        "| file | format | provider | calls | reported | match | unexplained miss | unexplained hit | score | token scale |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        session = cacheviz.load(path)
        if not any(c.usage and c.usage.cache_read_tokens is not None for c in session.calls):
            continue
        provider = session.calls[0].provider
        result = session.analyze().simulate(provider, unpriced="skip")
        counts = Counter(result.calls["verdict"].to_list())
        reported = len(session.calls) - counts["not_reported"]
        score = "-" if result.score is None else f"{result.score:.0%}"
        scale = "-" if result.token_scale is None else f"{result.token_scale:.3f}"
        print(
            f"| {path.name[:48]} | {session.format} | {provider} | {len(session.calls)} | {reported} | "
            f"{counts['match']} | {counts['unexplained_miss']} | {counts['unexplained_hit']} | {score} | {scale} |"
        )


if __name__ == "__main__":
    main()
