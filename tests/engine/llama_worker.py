"""Run chat sessions on llama.cpp in-process (llama-cpp-python) and report each call's reuse.

Run with the engine's Python (``llama_cpp`` installed)::

    python tests/engine/llama_worker.py MODEL.gguf < sessions.json > measured.json

``sessions.json``: ``{"kind": [messages, ...], ...}``, each session's requests in order
(``messages``: an OpenAI chat message list). Each session starts on an empty KV cache.
Per call the answer holds the prompt's token ids (the model's chat template, its
tokenizer), the tokens the engine evaluated (counted at ``Llama.eval``, the prefill),
llama.cpp's own ``n_p_eval``, and the prefill's time in milliseconds: CPU time of the
engine's one thread (``prefill_ms``; a loaded machine makes the wall time of a short
call swing several-fold, its CPU time does not) and wall time (``wall_ms``). One slot, no
host cache: ``Llama`` keeps the previous prompt and reuses its common prefix (at most
``len - 1``), as ``LlamaCppSimulator(slots=1, host_cache_tokens=0)`` says.
"""

from __future__ import annotations

import json
import sys
import time

import llama_cpp
from llama_cpp.llama_chat_format import Jinja2ChatFormatter


def main(model: str) -> None:
    sessions = json.load(sys.stdin)
    llm = llama_cpp.Llama(
        model_path=model,
        n_ctx=8192,
        n_batch=512,
        n_threads=1,
        n_threads_batch=1,
        seed=0,
        verbose=False,
    )
    template = llm.metadata["tokenizer.chat_template"]
    eos = llm._model.token_get_text(llm.token_eos())
    formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token="")
    state = {"evaluated": 0, "ms": 0.0, "wall": 0.0}
    plain_eval = llm.eval

    def counted_eval(tokens):
        cpu, wall = time.process_time(), time.perf_counter()
        plain_eval(tokens)
        state["ms"] += (time.process_time() - cpu) * 1000
        state["wall"] += (time.perf_counter() - wall) * 1000
        state["evaluated"] += len(tokens)

    llm.eval = counted_eval
    out = {}
    for kind, requests in sessions.items():
        llm.reset()
        calls = []
        for messages in requests:
            prompt = formatter(messages=messages).prompt
            ids = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            state["evaluated"], state["ms"], state["wall"] = 0, 0.0, 0.0
            llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
            llm.create_completion(ids, max_tokens=1, temperature=0.0)
            perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
            calls.append(
                {
                    "ids": ids,
                    "evaluated": state["evaluated"],
                    "n_p_eval": perf.n_p_eval,
                    "prefill_ms": round(state["ms"], 3),
                    "wall_ms": round(state["wall"], 3),
                    "t_p_eval_ms": round(perf.t_p_eval_ms, 3),
                }
            )
        out[kind] = calls
    json.dump({"llama_cpp": llama_cpp.__version__, "sessions": out}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
