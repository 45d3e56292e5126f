"""Write a tiny random-weight Qwen2 Hugging Face model for ``bench/vllm_cpu.py`` (no download).

Run with vLLM's Python (it has ``transformers`` and ``torch``; add ``gguf``)::

    python bench/vllm_tiny_model.py VOCAB.gguf OUT_DIR

``VOCAB.gguf`` is ``vendor/llama.cpp/models/ggml-vocab-qwen2.gguf`` of the
llama-cpp-python source package (``bench/engine_setup.sh`` unpacks it): Qwen2's real
tokenizer and ChatML template, which transformers reads from the GGUF. The model has the
shape of the engine tier's GGUF (tests/engine/tiny_qwen2.py: 4 layers of width 256, 4
query and 2 key/value heads, the embedding tied to the output), random weights from a
fixed seed, stored in bfloat16: its answers are noise, its tokens and template are Qwen2's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

EMBED, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 256, 4, 4, 2, 512, 32768


def main(vocab_path: str, out_dir: str) -> None:
    vocab = Path(vocab_path)
    tokenizer = AutoTokenizer.from_pretrained(str(vocab.parent), gguf_file=vocab.name)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=EMBED,
        intermediate_size=FFN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=CONTEXT,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
