"""Benchmark: does simulation grow with new blocks (issue 13, items 21 and 22)?

    python bench/bench_scale.py                       # this checkout
    python bench/bench_scale.py --root ../main        # another checkout, same sessions

Two measurements, each as ratios within one run (machines here are noisy):

* ``compare``: the 4-provider comparison (``Analysis.compare``) of one growing thread at
  N, 2N and 4N calls (generated like ``bench_analysis.py``). Work in proportion to new
  blocks doubles with the calls (ratio ~2); walking every block of every call
  quadruples (ratio ~4). Loading and analysis are not timed.
* ``deepseek``: the DeepSeek simulator on one huge message of M, 2M, 4M tokens, sent
  twice. Linear in the block: ratio ~2; the old per-interval hashing: ~4.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import os
import sys
from pathlib import Path

from _shared import best_seconds

HERE = Path(__file__).resolve().parent
TARGETS = [
    "anthropic:claude-sonnet-4-5",
    "openai:gpt-5",
    "gemini:gemini-2.5-pro",
    "deepseek:deepseek-chat",
]


def bench_compare(sizes: list[int], out: Path) -> list[dict]:
    import cacheviz

    sys.path.insert(0, str(HERE))
    from bench_analysis import generate

    rows = []
    for calls in sizes:
        path = out / f"scale_{calls}.jsonl"
        if not path.exists():
            generate(path, calls)
        analysis = cacheviz.load(path).analyze()
        tokens = int(analysis.calls["input_tokens"].sum())
        seconds = best_seconds(lambda a=analysis: a.compare(TARGETS), repeat=3)
        rows.append({"calls": calls, "tokens": tokens, "compare_s": round(seconds, 3)})
    return rows


def bench_deepseek(sizes: list[int]) -> list[dict]:
    from cacheviz.providers._base import HandBuilt
    from cacheviz.providers.deepseek import DeepSeekSimulator

    rows = []
    for tokens in sizes:
        build = HandBuilt()
        block = list(range(tokens))
        calls = [
            build.call(0, [block], output_tokens=10),
            build.call(1, [block, [7] * 20], output_tokens=10),
        ]
        seconds = best_seconds(lambda c=calls: DeepSeekSimulator().run(c), repeat=3)
        rows.append({"tokens": tokens, "deepseek_s": round(seconds, 3)})
    return rows


def _ratios(rows: list[dict], key: str) -> list[float]:
    return [round(b[key] / a[key], 2) for a, b in itertools.pairwise(rows) if a[key]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=str(HERE.parent), help="the cacheviz checkout to time")
    parser.add_argument("--calls", type=int, default=250, help="N: the smallest thread")
    parser.add_argument("--tokens", type=int, default=1_000_000, help="M: the smallest block")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.root).resolve()))
    importlib.invalidate_caches()
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    compare = bench_compare([args.calls, 2 * args.calls, 4 * args.calls], out)
    deepseek = bench_deepseek([args.tokens, 2 * args.tokens, 4 * args.tokens])
    report = {
        "root": args.root,
        "cpus": os.cpu_count(),
        "compare": compare,
        "compare_ratios": _ratios(compare, "compare_s"),
        "deepseek": deepseek,
        "deepseek_ratios": _ratios(deepseek, "deepseek_s"),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
