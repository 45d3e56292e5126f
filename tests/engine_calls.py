"""Hand-built calls for the self-hosted engines' simulators (SGLang, vLLM) in tests."""

from cacheviz.providers._base import HandBuilt

BUILD = HandBuilt()


def run(n, start=0):
    """``n`` distinct token ids from ``start`` on."""
    return list(range(start, start + n))


def call(index, blocks, *, output_tokens=None, model="qwen3-coder", **params):
    """Call ``index`` of ``blocks`` (lists of token ids), as the engines' tests send it."""
    return BUILD.call(index, blocks, output_tokens=output_tokens, model=model, **params)


def results(simulator, prompts):
    """``simulator``'s results for one call per prompt (a prompt: a list of blocks)."""
    return simulator.run([call(i, p) for i, p in enumerate(prompts)])


def hits(simulator, prompts):
    """The tokens each call read, after checking what an engine reports of every call.

    An engine bills nothing: the prefill it saves is what it read, and it writes no
    cache entry that costs anything.
    """
    out = results(simulator, prompts)
    for r in out:
        assert r.extra["prefill_tokens_saved"] == r.cache_read_tokens
        assert r.cache_write_tokens == 0
    return [r.cache_read_tokens for r in out]
