"""Benchmark: the floor exact token sizes put under a cold scan, against its baselines.

    python bench/bpe_floor.py CLAUDE_CONFIG_DIR [--ccusage PATH] [--repeat 3]
    python bench/bpe_floor.py SESSION.jsonl          # one file: against its orjson parse
    python bench/bpe_floor.py /work/examples/claude_backup/.claude --ccusage \\
        /work/ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage

A scan sizes each distinct block of a session with tiktoken (``o200k_base``) unless
``--sizes bytes`` is asked. This measures that work alone, nothing else of cacheviz:
every Claude Code session under ``CLAUDE_CONFIG_DIR/projects`` is loaded (not timed),
its distinct blocks' texts rendered as the tokenizer sees them (not timed), then only
the BPE of those texts is timed (CPU seconds of this process, best of ``--repeat``):

* ``encode_ordinary``: what :class:`cacheviz.request._tokens.TokenCache` calls;
* the count through tiktoken's buffer (``encode_to_tiktoken_buffer``), no Python ints.

The baselines, measured in the same run: ccusage's ``claude session --json --offline``
over the same folder (``--ccusage`` or ``$CACHEVIZ_BENCH_CCUSAGE``; CPU with
``os.wait4``), and an orjson parse of every line of the files. If the BPE alone costs
more than three times ccusage, a cold scan with exact sizes cannot meet the issue's
``<= 3x`` budget however the rest is written (docs/performance.md, issue 32).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _shared import ccusage, ccusage_env  # noqa: E402
from bench_budgets import measured  # noqa: E402


def session_files(config: Path) -> list[Path]:
    """Each session's main file (its sub-agents' files are read with it)."""
    return sorted(p for p in (config / "projects").glob("*/*.jsonl") if p.is_file())


def distinct_texts(files: list[Path]) -> tuple[list[str], int, int]:
    """The rendered texts of every session's distinct blocks, the sessions read, bytes."""
    import cacheviz
    from cacheviz.model import OPAQUE
    from cacheviz.request._blocks import render_text

    texts: list[str] = []
    read = 0
    size = 0
    for path in files:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                session = cacheviz.load(path)
        except (cacheviz.CacheVizError, OSError, ValueError):
            continue
        read += 1
        size += path.stat().st_size
        for content in session.contents.values():
            if content.kind != OPAQUE:
                texts.append(render_text(content)[1])
    return texts, read, size


def best_cpu(run, repeat: int) -> tuple[float, int]:
    """The best CPU seconds of ``run()`` over ``repeat`` runs, and what it returned."""
    best, value = float("inf"), 0
    for _ in range(repeat):
        start = time.process_time()
        value = run()
        best = min(best, time.process_time() - start)
    return best, value


PARSE = """
import sys, orjson
for name in sys.argv[1:]:
    with open(name, "rb") as handle:
        for line in handle:
            if line.strip():
                orjson.loads(line)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "config", type=Path, help="a CLAUDE_CONFIG_DIR (with projects/), or one session file"
    )
    parser.add_argument("--ccusage", help="ccusage's executable (else $CACHEVIZ_BENCH_CCUSAGE)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from cacheviz.request._tokens import DEFAULT_ENCODING, get_encoding

    single = args.config.is_file()
    files = [args.config] if single else session_files(args.config)
    texts, read, size = distinct_texts(files)
    enc = get_encoding(DEFAULT_ENCODING)
    core = enc._core_bpe  # tiktoken's Rust object: the count without a list of ints
    ordinary, tokens = best_cpu(
        lambda: sum(len(enc.encode_ordinary(t)) for t in texts), args.repeat
    )
    buffered, same = best_cpu(
        lambda: sum(
            memoryview(core.encode_to_tiktoken_buffer(t, set())).nbytes // 4 for t in texts
        ),
        args.repeat,
    )
    if same != tokens:
        msg = f"the buffer counts {same} tokens, encode_ordinary {tokens}"
        raise SystemExit(msg)
    every = files if single else sorted(args.config.glob("projects/**/*.jsonl"))
    parse = min(
        measured([sys.executable, "-c", PARSE, *map(str, every)], dict(os.environ), HERE)[1]
        for _ in range(args.repeat)
    )
    chars = sum(map(len, texts))
    print(f"{read} sessions, {size / 1e6:.1f} MB of main files, {len(every)} files in all")
    print(f"{len(texts):,} distinct blocks, {chars / 1e6:.2f} M characters, {tokens:,} tokens")
    print(f"BPE, encode_ordinary         {ordinary:6.2f} CPU-s")
    print(f"BPE, count through a buffer  {buffered:6.2f} CPU-s")
    print(f"orjson parse of every line   {parse:6.2f} CPU-s")
    print(f"  BPE floor / orjson parse: {ordinary / parse:5.1f}x (buffer {buffered / parse:.1f}x)")
    argv = None if single else ccusage(args.ccusage, args.config)
    if argv is not None:
        env = ccusage_env(args.config)
        baseline = min(measured(argv, env, HERE)[1] for _ in range(args.repeat))
        print(f"ccusage claude session       {baseline:6.2f} CPU-s")
        print(
            f"  BPE floor / ccusage: {ordinary / baseline:5.1f}x "
            f"(buffer {buffered / baseline:.1f}x; the scan's budget is 3x)"
        )


if __name__ == "__main__":
    main()
