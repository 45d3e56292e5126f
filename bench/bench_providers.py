"""A provider simulator on ``bench_inspector.py``'s sliding window (issue 32).

    python bench/bench_providers.py [--provider openai|deepseek|google] [--calls 600 2000 10000]
        [--root /path/to/other-checkout] [--runs 2]

On the session ``bench_inspector.py`` generates (a sliding window of 40 messages, a
drift every 50 calls; written once per size under ``--out``), in one fresh process per
checkout and size: the analysis, then ``analysis.simulate(provider, model)`` timed in
CPU seconds (best of ``--repeat`` in the process), with the number of times the
simulator's search compared or hashed something (the functions of :data:`COUNTED`: the
same names in every checkout, so the counts compare), the sum of the reads and digests
of the per-call reads and details (the unit or writer each hit names): the same for
every checkout when the searches find the same prefixes.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import bench_inspector
from _shared import child_json

HERE = Path(__file__).resolve().parent

MODELS = {"openai": "gpt-5", "deepseek": "deepseek-chat", "google": "gemini-2.5-pro"}
"""The model each provider is simulated as (the one the inspector's comparison uses)."""

COUNTED = {
    "openai": [("cacheviz.providers.openai", "_token_lcp", "prompt comparisons")],
    "deepseek": [
        ("cacheviz.providers.deepseek", "_block_digest", "block-prefix digests looked up"),
        ("cacheviz.providers._cache", "differing_block_common", "sibling blocks compared in full"),
    ],
    "google": [
        ("cacheviz.providers._cache", "differing_block_common", "sibling blocks compared in full")
    ],
}
"""Per provider, the module-level functions whose calls are counted: ``(module, name, what)``."""

CHILD = r"""
import hashlib, importlib, json, sys, time
path, repeat, provider, model, counted = sys.argv[1:6]
repeat, counted = int(repeat), json.loads(counted)
import cacheviz

counts = [0] * len(counted)
def wrap(i, real):
    def counting(*args, **kwargs):
        counts[i] += 1
        return real(*args, **kwargs)
    return counting
for i, (module, name, _) in enumerate(counted):
    module = importlib.import_module(module)
    setattr(module, name, wrap(i, getattr(module, name)))
analysis = cacheviz.load(path).analyze()
best, reads = float("inf"), None
for _ in range(int(repeat)):
    counts[:] = [0] * len(counted)
    start = time.process_time()
    sim = analysis.simulate(provider, model)
    best = min(best, time.process_time() - start)
    reads = sim.calls["cache_read_tokens"].to_list()
    details = sim.calls["detail"].to_list()
digest = lambda rows: hashlib.sha1(json.dumps(rows).encode()).hexdigest()[:10]
print(json.dumps({
    "cpu_s": best, "counts": counts, "reads": sum(reads),
    "reads_digest": digest(reads), "details_digest": digest(details),
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--provider", choices=sorted(MODELS), default="openai")
    parser.add_argument("--calls", type=int, nargs="*", default=[600, 2000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/cacheviz-bench"))
    parser.add_argument("--root", type=Path, nargs="*", default=[], help="checkouts to compare")
    parser.add_argument("--repeat", type=int, default=2, help="timings per process (best)")
    parser.add_argument("--runs", type=int, default=1, help="rounds, checkouts alternating")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    roots = [HERE.parent, *args.root]
    model, counted = MODELS[args.provider], COUNTED[args.provider]
    for calls in args.calls:
        path = args.out / f"sliding_window_{calls}.jsonl"
        if not path.exists():
            bench_inspector.CALLS = calls
            bench_inspector.session(path)
        for _ in range(args.runs):
            for root in roots:
                load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
                argv = [str(path), str(args.repeat), args.provider, model, json.dumps(counted)]
                row = child_json(CHILD, argv, root.resolve())
                counts = ", ".join(
                    f"{n:,} {what}" for n, (_, _, what) in zip(row["counts"], counted, strict=True)
                )
                print(
                    f"{calls} calls, {root} (load {load}): simulate {args.provider} "
                    f"{row['cpu_s']:.3f} CPU-s, {counts}, "
                    f"reads {row['reads']:,} (per call: {row['reads_digest']}; "
                    f"details: {row['details_digest']})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
