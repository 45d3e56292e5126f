"""Precision and recall of drift causes and of reported misses, on labelled sessions.

    python bench/diagnosis_accuracy.py            # 20 variants per pattern
    python bench/diagnosis_accuracy.py --variants 5

Labelled sessions:

* the ten bundled samples, labelled by sample_sessions/README.md (which calls drift, and
  the cause; costless drifts are excluded, as the CLI folds them);
* random variants of each misbehaviour of tests/core/test_diagnosis.py (sizes, lengths,
  positions and values drawn at random): a timestamp on the first line of a big system
  prompt, environment details stripped, a thinking-budget change, a tool_choice change,
  a model switch, a compaction request with fewer tools, reordered tools, a sliding
  window; and, with reported usage, a TTL gap, a read the provider did not serve, and
  a clean call (no miss).

A drift counts as found when its call is labelled and its cause matches; a false drift
is a material drift on a call labelled clean. Precision = right / reported, recall =
right / labelled, per cause.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "core"))  # test_diagnosis.py

import test_diagnosis as t  # noqa: E402

import cacheviz  # noqa: E402

SAMPLES = {
    "append_only": (set(), None),
    "timestamp_in_system": (set(range(1, 8)), "volatile_value"),
    "shuffled_tools": (set(range(1, 8)), "reorder"),
    "dynamic_profile": (set(range(1, 8)), "volatile_value"),
    "sliding_window": (set(range(4, 12)), "truncated_front"),
    "text_format": (set(range(1, 10)), "content_edited"),
    "environment_details": ({3, 5, 8}, "env_details_stripped"),
    "unpinned_memory": (set(range(1, 8)), "content_edited"),
    "compaction": (set(), None),
    "side_calls": (set(), None),
}


def _session(tmp: Path, calls) -> cacheviz.Analysis:
    return t._load(tmp, calls)


def _variant(pattern: str, rng: random.Random, tmp: Path):
    """A session of ``pattern`` and its labels {call: cause}."""
    n = rng.randint(3, 6)
    steps = t._conversation(n)
    at = rng.randint(1, n - 1)
    if pattern == "volatile_value":
        calls = [
            (
                60 * k,
                t._body(
                    m, system=t._system(f"Now: 2026-05-0{1 + k % 9} 1{k}:{rng.randint(10, 59)}")
                ),
                None,
                None,
            )
            for k, m in enumerate(steps)
        ]
        return calls, dict.fromkeys(range(1, n), "volatile_value")
    if pattern == "env_details_stripped":
        task = {"type": "text", "text": "Task: " + t._text(rng.randint(20, 80), rng.randint(0, 9))}
        env = {
            "type": "text",
            "text": "<environment_details>\n" + t._text(30, 2) + "\n</environment_details>",
        }
        first = [{"role": "user", "content": [task, env]}]
        second = [
            {"role": "user", "content": [task]},
            {"role": "assistant", "content": "ok " + t._text(15, 3)},
            {"role": "user", "content": [{"type": "text", "text": "next"}, env]},
        ]
        return [(0, t._body(first), None, None), (20, t._body(second), None, None)], {
            1: "env_details_stripped"
        }
    if pattern in ("params_changed_thinking", "params_changed_tool_choice"):
        calls = []
        for k, m in enumerate(steps):
            extra = {}
            if pattern.endswith("thinking"):
                extra["thinking"] = {"type": "enabled", "budget_tokens": 2048 if k < at else 4096}
            elif k >= at:
                extra["tool_choice"] = {"type": "any"}
            calls.append((30 * k, t._body(m, **extra), None, None))
        return calls, {at: "params_changed"}
    if pattern == "model_switch":
        calls = [
            (30 * k, t._body(m, model=t.MODEL if k < at else "claude-opus-4-5"), None, None)
            for k, m in enumerate(steps)
        ]
        return calls, {at: "model_switch"}
    if pattern == "block_removed":
        keep = rng.sample(t.TOOLS, rng.randint(1, 4))
        ask = {"role": "user", "content": "Summarize the conversation. " + t._text(10, 1)}
        calls = [(30 * k, t._body(m), None, None) for k, m in enumerate(steps)]
        calls.append((30 * n, t._body([*steps[-1], ask], tools=keep), None, None))
        return calls, {n: "block_removed"}
    if pattern == "reorder":
        calls = []
        for k, m in enumerate(steps):
            tools = list(t.TOOLS)
            if k >= at:
                rng.shuffle(tools)
                if tools == t.TOOLS:
                    tools = tools[::-1]
            calls.append((30 * k, t._body(m, tools=tools), None, None))
        labels = {at: "reorder"}
        for k in range(at + 1, n):  # each later call reshuffles too
            if [x["name"] for x in calls[k][1]["tools"]] != [
                x["name"] for x in calls[k - 1][1]["tools"]
            ]:
                labels[k] = "reorder"
        return calls, labels
    if pattern == "truncated_front":
        history = t._turns(2 * n + 5)
        window = 5
        calls = [
            (30 * k, t._body(history[max(0, 2 * k + 1 - window) : 2 * k + 1]), None, None)
            for k in range(n)
        ]
        labels = {k: "truncated_front" for k in range(n) if 2 * k + 1 - window > 0}
        return calls, labels
    raise ValueError(pattern)


PATTERNS = (
    "volatile_value",
    "env_details_stripped",
    "params_changed_thinking",
    "params_changed_tool_choice",
    "model_switch",
    "block_removed",
    "reorder",
    "truncated_front",
)


def _miss_variant(kind: str, rng: random.Random, tmp: Path):
    steps = t._conversation(3)
    bodies = [t._body(m) for m in steps]
    total = _session(tmp, [(0, b, None, None) for b in bodies]).calls["input_tokens"].to_list()
    gap = rng.randint(400, 3000) if kind == "ttl_expired" else rng.randint(5, 250)
    read = 0 if kind != "none" else total[1]
    usage = [
        t._usage(read=0, write=total[0] - 10, uncached=10),
        t._usage(read=total[0], write=total[1] - total[0] - 10, uncached=10),
        t._usage(read=read, write=total[2] - read - 10, uncached=10),
    ]
    times = (0, 30, 30 + gap)
    calls = [(s, b, u, None) for s, b, u in zip(times, bodies, usage, strict=True)]
    return calls, ({} if kind == "none" else {2: kind})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(7)
    found, reported, labelled = Counter(), Counter(), Counter()
    confusion: Counter[tuple[str, str]] = Counter()

    def score(analysis, labels: dict[int, str]) -> None:
        drifts = analysis.drifts.filter(analysis.drifts["material"].fill_null(True))
        got = dict(zip(drifts["call"].to_list(), drifts["cause"].to_list(), strict=True))
        for call, cause in labels.items():
            labelled[cause] += 1
            confusion[(cause, got.get(call, "(none)"))] += 1
        for call, cause in got.items():
            reported[cause] += 1
            if labels.get(call) == cause:
                found[cause] += 1

    for name, (calls, cause) in SAMPLES.items():
        a = cacheviz.load(ROOT / "sample_sessions" / f"{name}.jsonl").analyze()
        material = set(a.drifts.filter(a.drifts["material"].fill_null(True))["call"].to_list())
        score(a, {c: cause for c in calls if c in material})
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for pattern in PATTERNS:
            for _ in range(args.variants):
                calls, labels = _variant(pattern, rng, tmp)
                score(_session(tmp, calls), labels)
        m_found, m_reported, m_labelled = Counter(), Counter(), Counter()
        for kind in ("ttl_expired", "provider_side", "none"):
            for _ in range(args.variants):
                calls, labels = _miss_variant(kind, rng, tmp)
                a = _session(tmp, calls)
                got = dict(
                    zip(a.misses["call"].to_list(), a.misses["cause"].to_list(), strict=True)
                )
                for call, cause in labels.items():
                    m_labelled[cause] += 1
                    m_found[cause] += got.get(call) == cause
                for cause in got.values():
                    m_reported[cause] += 1
    print("drift causes (material drifts):")
    print(
        f"{'cause':<22} {'labelled':>8} {'reported':>8} {'right':>6} {'precision':>9} {'recall':>7}"
    )
    for cause in sorted(set(labelled) | set(reported)):
        p = found[cause] / reported[cause] if reported[cause] else float("nan")
        r = found[cause] / labelled[cause] if labelled[cause] else float("nan")
        print(
            f"{cause:<22} {labelled[cause]:>8} {reported[cause]:>8} {found[cause]:>6} {p:>9.1%} {r:>7.1%}"
        )
    wrong = {k: v for k, v in confusion.items() if k[0] != k[1]}
    print(
        "confusions (labelled → reported):",
        json.dumps({f"{a}→{b}": n for (a, b), n in wrong.items()}),
    )
    print("misses:")
    for cause in sorted(set(m_labelled) | set(m_reported)):
        p = m_found[cause] / m_reported[cause] if m_reported[cause] else float("nan")
        r = m_found[cause] / m_labelled[cause] if m_labelled[cause] else float("nan")
        print(
            f"{cause:<22} {m_labelled[cause]:>8} {m_reported[cause]:>8} {m_found[cause]:>6} {p:>9.1%} {r:>7.1%}"
        )


REALDATA = ROOT.parent / "shared" / "realdata"


def real_table() -> None:
    """Per real transcript with reported usage: misses, false misses, simulated vs billed.

    A false miss is one where the provider read at least 95 % of the request; "exp>in"
    counts expected reads above the reported input. Claude Code files are read with
    ``format="claude-code"``; sub-agent files that sit beside them are left out.
    """
    import warnings

    import polars as pl

    from cacheviz.errors import CacheVizWarning

    if not REALDATA.is_dir():
        print("../shared/realdata is not present")
        return
    print(
        f"{'transcript':<44} {'calls':>5} {'hit':>5} {'misses':>6} {'≥95%':>5} {'exp>in':>6} "
        f"{'billed':>9} {'simulated':>9} {'sim/billed':>10}  causes"
    )
    for path in sorted(REALDATA.rglob("*.json*")):
        skip = ("README", ".meta.json", "__ui_messages", "__task_metadata")
        if any(s in path.name for s in skip):
            continue
        fmt = "claude-code" if path.parent.name == "claude_code_jsonl" else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheVizWarning)
            analysis = cacheviz.load(path, format=fmt, errors="skip").analyze()
        calls = analysis.calls
        if calls["reported_input_tokens"].is_null().all():
            continue
        misses = analysis.misses.join(
            calls.select(pl.col("call").alias("call"), "reported_input_tokens"), on="call"
        )
        false = misses.filter(
            pl.col("reported_cache_read_tokens") >= 0.95 * pl.col("reported_input_tokens")
        ).height
        over = calls.filter(pl.col("expected_read_tokens") > pl.col("reported_input_tokens")).height
        head = analysis.headline()
        billed = analysis.billed_usd
        priced = calls.filter(pl.col("billed_usd").is_not_null())
        simulated = float(priced["simulated_usd"].sum()) if priced.height else None
        ratio = f"{simulated / billed:>10.3f}" if billed and simulated is not None else f"{'-':>10}"
        hit = head["hit_ratio"]["tokens"]
        causes = misses["cause"].value_counts(sort=True).rows()
        name = path.stem.split("__", 1)[-1]
        name = name if len(name) <= 44 else f"{name[:20]}…{name[-23:]}"
        print(
            f"{name:<44} {calls.height:>5} {'n/a' if hit is None else f'{hit:.0%}':>5} "
            f"{misses.height:>6} {false:>5} {over:>6} "
            f"{'-' if billed is None else f'${billed:,.3f}':>9} "
            f"{'-' if simulated is None else f'${simulated:,.3f}':>9} {ratio}  "
            + ", ".join(f"{c} {n}" for c, n in causes)
        )


if __name__ == "__main__":
    if "--real" in sys.argv:
        real_table()
    else:
        main()
