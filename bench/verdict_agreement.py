"""How cacheviz's own reading compares with the provider's cache verdicts, per session.

    python bench/verdict_agreement.py [PATH ...]

Each PATH is a Claude Code session file (its ``<uuid>/subagents/`` are read with it) or a
folder searched for them (a sub-agent file is read on its own only when its session file
is absent). Without a PATH: ``../shared/realdata/claude_code_jsonl`` and the folder named
by ``CACHEVIZ_VERDICT_EXAMPLES`` (public sessions kept outside the repository).

Per session: calls; populated verdicts (``cache_miss_reason`` an object); comparable (all
but ``unavailable``); compared (``verdict_agrees`` not null); agree; misses, and misses
where the provider read at least 95 % of the request (false misses); the token hit
ratio; simulated / billed. The last line sums them.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

import cacheviz  # noqa: E402
from cacheviz.errors import CacheVizWarning, TranscriptError  # noqa: E402

REALDATA = ROOT.parent / "shared" / "realdata" / "claude_code_jsonl"
NOT_COMPARABLE = ("unavailable",)
# provider_verdict values that are no populated verdict (not requested, checked: null)
NOT_POPULATED = (None, "inconclusive", "checked")


def sessions(paths: list[Path]) -> list[Path]:
    """The session files under ``paths`` (sub-agents with a session file are left out)."""
    out: list[Path] = []
    seen: set[str] = set()
    for path in paths:
        files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
        for file in files:
            if "__subagents__" in file.name:
                continue  # realdata's flattened sub-agents: read with their session
            if file.parent.name == "subagents":
                owner = file.parent.parent.with_suffix(".jsonl")
                if owner.is_file():
                    continue
            if file.name == "history.jsonl":
                continue
            stem = file.stem.rsplit("__", 1)[-1]  # realdata's copies are owner__repo__<uuid>
            if stem in seen:
                continue
            seen.add(stem)
            out.append(file)
    return out


def row(path: Path) -> dict | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheVizWarning)
        try:
            analysis = cacheviz.load(path, format="claude-code", errors="skip").analyze()
        except TranscriptError:
            return None  # no API call in the file
    calls = analysis.calls
    if calls.is_empty() or calls["reported_input_tokens"].is_null().all():
        return None
    verdict = pl.col("provider_verdict")
    populated = calls.filter(
        ~verdict.is_in([v for v in NOT_POPULATED if v]) & verdict.is_not_null()
    )
    comparable = populated.filter(~verdict.is_in(NOT_COMPARABLE))
    compared = comparable.filter(pl.col("verdict_agrees").is_not_null())
    agree = compared.filter(pl.col("verdict_agrees"))
    misses = analysis.misses.join(
        calls.select("call", "reported_input_tokens"), on="call", how="left"
    )
    false = misses.filter(
        pl.col("reported_cache_read_tokens") >= 0.95 * pl.col("reported_input_tokens")
    ).height
    billed = analysis.billed_usd
    priced = calls.filter(pl.col("billed_usd").is_not_null())
    simulated = float(priced["simulated_usd"].sum()) if priced.height else None
    hit = analysis.headline()["hit_ratio"]["tokens"]
    return {
        "session": path.stem.rsplit("__", 1)[-1][:8]
        + ("/" + path.parent.parent.name[:8] if path.parent.name == "subagents" else ""),
        "calls": calls.height,
        "populated": populated.height,
        "comparable": comparable.height,
        "compared": compared.height,
        "agree": agree.height,
        "misses": misses.height,
        "false": false,
        "hit": hit,
        "billed": billed,
        "simulated": simulated,
        "disagree": ", ".join(
            f"{c}:{v}"
            for c, v in zip(
                compared.filter(~pl.col("verdict_agrees"))["call"],
                compared.filter(~pl.col("verdict_agrees"))["provider_verdict"],
                strict=True,
            )
        ),
        "causes": ", ".join(f"{c} {n}" for c, n in misses["cause"].value_counts(sort=True).rows()),
    }


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv]
    if not paths:
        if REALDATA.is_dir():
            paths.append(REALDATA)
        extra = os.environ.get("CACHEVIZ_VERDICT_EXAMPLES")
        if extra:
            paths.append(Path(extra))
    totals = dict.fromkeys(
        ("calls", "populated", "comparable", "compared", "agree", "misses", "false"), 0
    )
    print(
        f"{'session':<17} {'calls':>5} {'pop':>4} {'cmp':>4} {'done':>4} {'agree':>5} "
        f"{'miss':>4} {'≥95%':>4} {'hit':>4} {'sim/billed':>10}  disagreements | miss causes"
    )
    for path in sessions(paths):
        found = row(path)
        if found is None:
            continue
        for key in totals:
            totals[key] += found[key]
        ratio = (
            f"{found['simulated'] / found['billed']:>10.3f}"
            if found["billed"] and found["simulated"] is not None
            else f"{'-':>10}"
        )
        hit = "n/a" if found["hit"] is None else f"{found['hit']:.0%}"
        print(
            f"{found['session']:<17} {found['calls']:>5} {found['populated']:>4} "
            f"{found['comparable']:>4} {found['compared']:>4} {found['agree']:>5} "
            f"{found['misses']:>4} {found['false']:>4} {hit:>4} {ratio}  "
            f"{found['disagree']} | {found['causes']}"
        )
    print(
        f"{'total':<17} {totals['calls']:>5} {totals['populated']:>4} {totals['comparable']:>4} "
        f"{totals['compared']:>4} {totals['agree']:>5} {totals['misses']:>4} {totals['false']:>4}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
