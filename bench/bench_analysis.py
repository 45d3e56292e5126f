"""Benchmark: analysis time vs. merely parsing the log, vs. a naive tokenizer baseline.

    python bench/bench_analysis.py                 # 1,000 calls, ~50k tokens each
    python bench/bench_analysis.py --calls 200     # quicker

Generates a long agent session (large system prompt and tools, growing history) into
bench/out/, then measures, each phase in its own process (for its peak memory):

* ``parse``   read the file and ``json.loads`` every line (and ``orjson.loads`` if installed)
* ``analyze`` ``cacheviz.load(path).analyze()``
* ``naive``   parse every line and tokenize every full request (what a tool without a
  content-addressed cache does)

Machines here are noisy: the figures to quote are the ratios between phases of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from cacheviz.formats.native import record_line  # noqa: E402
from cacheviz.teach.samples import ANTHROPIC, Agent, Prose, _tool_specs  # noqa: E402


class VariedProse(Prose):
    """Prose over a large made-up vocabulary, so tokenizing it costs what real text costs."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        rng = random.Random(seed + 1)
        syllables = [c + v for c in "bcdfghjklmnprstvwxz" for v in "aeiouy"] + ["th", "ng", "qu"]
        self.vocabulary = [
            "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(6000)
        ] + [f"{rng.choice(syllables)}_{rng.randint(0, 999)}" for _ in range(2000)]

    def sentence(self, words: int = 12) -> str:
        picked = [self.rng.choice(self.vocabulary) for _ in range(words)]
        return " ".join(picked).capitalize() + "."


def generate(path: Path, calls: int) -> dict[str, Any]:
    """Write a long session: ~20k-token system, 40 tools, ~50 tokens of history per call."""
    static = VariedProse(2024)
    system = [
        "You are a meticulous coding agent. " + static.paragraph(400),
        "Project rules. " + static.paragraph(300),
    ]
    specs = []
    for i in range(7):
        specs += [(f"{name}_{i}", d, s) for name, d, s in _tool_specs(static)]
    tools = ANTHROPIC.tools(specs[:40])
    agent = Agent(ANTHROPIC, 7)
    agent.prose = VariedProse(7)
    agent.history.append(ANTHROPIC.user(agent.user_turn()))
    with path.open("w", encoding="utf-8") as out:
        for index in range(calls):
            body = ANTHROPIC.request(system, tools, agent.history)
            out.write(
                record_line(
                    body,
                    provider="anthropic",
                    model=ANTHROPIC.model,
                    api="messages",
                    ts=agent.tick(),
                )
            )
            out.write("\n")
            rng = agent.prose.rng
            if index % 25 == 24:
                agent.history.append(agent.answer())
                agent.history.append(ANTHROPIC.user(agent.user_turn()))
            else:
                name = rng.choice([s[0] for s in specs[:40]])
                agent.history.extend(
                    ANTHROPIC.tool_round(
                        agent.prose.sentence(6),
                        name,
                        {"path": f"src/{index}.py"},
                        agent.prose.ident("toolu_"),
                        agent.prose.code(2),
                    )
                )
    return {"calls": calls, "bytes": path.stat().st_size}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phase_parse(path: Path) -> dict[str, Any]:
    start = time.perf_counter()
    data = path.read_bytes()
    read = time.perf_counter() - start
    start = time.perf_counter()
    for line in data.split(b"\n"):
        if line:
            json.loads(line)
    stdlib = time.perf_counter() - start
    result = {"read_s": read, "json_s": read + stdlib}
    try:
        import orjson
    except ImportError:
        return result
    start = time.perf_counter()
    for line in data.split(b"\n"):
        if line:
            orjson.loads(line)
    result["orjson_s"] = read + time.perf_counter() - start
    return result


def phase_analyze(path: Path) -> dict[str, Any]:
    import cacheviz
    from cacheviz.request._tokens import get_encoding

    get_encoding("o200k_base")  # loading the BPE file is a one-off, not analysis
    start = time.perf_counter()
    session = cacheviz.load(path)
    loaded = time.perf_counter() - start
    analysis = session.analyze()
    total = time.perf_counter() - start
    start = time.perf_counter()
    segments = analysis.segments.height
    segments_s = time.perf_counter() - start
    simulate_s = {}
    for provider, model in (
        ("anthropic", None),
        ("openai", "gpt-5"),
        ("deepseek", "deepseek-chat"),
    ):
        start = time.perf_counter()
        analysis.simulate(provider, model)
        simulate_s[provider] = time.perf_counter() - start
    calls = analysis.calls
    return {
        "load_s": loaded,
        "analyze_s": total,
        "calls": calls.height,
        "mean_input_tokens": float(calls["input_tokens"].mean()),
        "total_input_tokens": int(calls["input_tokens"].sum()),
        "unique_blocks": len(session.contents),
        "drifts": analysis.drifts.height,
        "segments": segments,
        "segments_s": segments_s,
        "simulate_s": simulate_s,
    }


def phase_naive(path: Path) -> dict[str, Any]:
    from cacheviz.model import Content
    from cacheviz.request._blocks import render_text
    from cacheviz.request._tokens import get_encoding

    enc = get_encoding("o200k_base")
    start = time.perf_counter()
    tokens = 0
    with path.open("rb") as handle:
        for line in handle:
            body = json.loads(line)["request"]
            parts = [Content(b"", t, "tool") for t in body.get("tools", [])]
            parts += [Content(b"", s, "system") for s in body.get("system", [])]
            parts += [Content(b"", m, "message:messages") for m in body["messages"]]
            text = "\n".join(render_text(p)[1] for p in parts)
            tokens += len(enc.encode_ordinary(text))
    return {"naive_s": time.perf_counter() - start, "naive_tokens": tokens}


PHASES = {"parse": phase_parse, "analyze": phase_analyze, "naive": phase_naive}


def run_phase(name: str, path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    ).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of parse/analyze (min is kept)")
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--phase", choices=sorted(PHASES))
    parser.add_argument("path", nargs="?")
    args = parser.parse_args()
    if args.phase:
        result = PHASES[args.phase](Path(args.path))
        result["peak_rss_mb"] = _peak_mb()
        print(json.dumps(result))
        return

    out_dir = HERE / "out"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"long_session_{args.calls}.jsonl"
    if not path.exists():
        start = time.perf_counter()
        info = generate(path, args.calls)
        print(
            f"generated {path.name}: {info['bytes'] / 1e6:.1f} MB in {time.perf_counter() - start:.1f} s"
        )
    parse = min((run_phase("parse", path) for _ in range(args.repeat)), key=lambda r: r["json_s"])
    analyze = min(
        (run_phase("analyze", path) for _ in range(args.repeat)), key=lambda r: r["analyze_s"]
    )
    naive = None if args.skip_naive else run_phase("naive", path)
    baseline = run_phase_import()

    size = path.stat().st_size / 1e6
    print(
        f"\nsession: {analyze['calls']:,} calls, {size:.1f} MB, mean request "
        f"{analyze['mean_input_tokens']:,.0f} tokens, {analyze['total_input_tokens'] / 1e6:.1f} M tokens in all, "
        f"{analyze['unique_blocks']:,} unique blocks, {analyze['drifts']} drifts"
    )
    print(f"read file:                {parse['read_s']:7.2f} s")
    print(
        f"read + json.loads:        {parse['json_s']:7.2f} s   peak {parse['peak_rss_mb']:,.0f} MB"
    )
    if "orjson_s" in parse:
        print(f"read + orjson.loads:      {parse['orjson_s']:7.2f} s")
    print(f"cacheviz load:            {analyze['load_s']:7.2f} s")
    print(
        f"cacheviz load + analyze:  {analyze['analyze_s']:7.2f} s   peak {analyze['peak_rss_mb']:,.0f} MB "
        f"(imports + o200k_base loaded: {baseline:,.0f} MB)"
    )
    print(
        f"segments frame ({analyze['segments']:,} rows, built on first access): {analyze['segments_s']:.2f} s"
    )
    for provider, seconds in analyze["simulate_s"].items():
        print(f"simulate + price, {provider:<10} {seconds:7.2f} s")
    print(f"  = {analyze['analyze_s'] / parse['json_s']:.2f}x json.loads parse time", end="")
    if "orjson_s" in parse:
        print(f", {analyze['analyze_s'] / parse['orjson_s']:.2f}x orjson parse time", end="")
    print()
    if naive:
        print(
            f"naive (parse + tokenize every request): {naive['naive_s']:7.2f} s   peak {naive['peak_rss_mb']:,.0f} MB"
        )
        print(f"  cacheviz is {naive['naive_s'] / analyze['analyze_s']:.1f}x faster than naive")


def run_phase_import() -> float:
    code = (
        "import resource, cacheviz; from cacheviz.request._tokens import get_encoding; get_encoding('o200k_base'); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    return float(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout
    )


if __name__ == "__main__":
    main()
