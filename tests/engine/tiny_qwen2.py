"""Write a tiny random-weight qwen2 GGUF from llama.cpp's vocab-only Qwen2 file (no download).

Run with the engine's Python (the ``gguf`` and ``numpy`` packages)::

    python tests/engine/tiny_qwen2.py VOCAB.gguf OUT.gguf

``VOCAB.gguf`` is ``vendor/llama.cpp/models/ggml-vocab-qwen2.gguf`` of the
llama-cpp-python source package: Qwen2's real tokenizer and ChatML template, no weights.
The model has 4 layers of width 256 (the embedding tied to the output), random weights
from a fixed seed: its answers are noise, its prefill costs what a real model of that
shape costs, and its tokens and template are Qwen2's.
"""

from __future__ import annotations

import sys

import gguf
import numpy as np

EMBED, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 256, 4, 4, 2, 512, 32768


def main(vocab_path: str, out_path: str) -> None:
    reader = gguf.GGUFReader(vocab_path)
    fields = {name: field.contents() for name, field in reader.fields.items()}
    tokens = fields["tokenizer.ggml.tokens"]
    writer = gguf.GGUFWriter(out_path, "qwen2")
    writer.add_name("tiny random qwen2 (cacheviz engine tests)")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBED)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model(fields["tokenizer.ggml.model"])
    writer.add_tokenizer_pre(fields["tokenizer.ggml.pre"])
    writer.add_token_list(tokens)
    writer.add_token_types(fields["tokenizer.ggml.token_type"])
    writer.add_token_merges(fields["tokenizer.ggml.merges"])
    writer.add_eos_token_id(fields["tokenizer.ggml.eos_token_id"])
    writer.add_bos_token_id(fields["tokenizer.ggml.bos_token_id"])
    writer.add_pad_token_id(fields["tokenizer.ggml.padding_token_id"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(fields["tokenizer.chat_template"])
    rng = np.random.default_rng(0)
    head = EMBED // HEADS
    kv = head * KV_HEADS

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float16)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    writer.add_tensor("token_embd.weight", weight(len(tokens), EMBED))
    for i in range(LAYERS):
        blk = f"blk.{i}"
        writer.add_tensor(f"{blk}.attn_norm.weight", ones(EMBED))
        writer.add_tensor(f"{blk}.attn_q.weight", weight(EMBED, EMBED))
        writer.add_tensor(f"{blk}.attn_q.bias", np.zeros(EMBED, dtype=np.float32))
        writer.add_tensor(f"{blk}.attn_k.weight", weight(kv, EMBED))
        writer.add_tensor(f"{blk}.attn_k.bias", np.zeros(kv, dtype=np.float32))
        writer.add_tensor(f"{blk}.attn_v.weight", weight(kv, EMBED))
        writer.add_tensor(f"{blk}.attn_v.bias", np.zeros(kv, dtype=np.float32))
        writer.add_tensor(f"{blk}.attn_output.weight", weight(EMBED, EMBED))
        writer.add_tensor(f"{blk}.ffn_norm.weight", ones(EMBED))
        writer.add_tensor(f"{blk}.ffn_gate.weight", weight(FFN, EMBED))
        writer.add_tensor(f"{blk}.ffn_up.weight", weight(FFN, EMBED))
        writer.add_tensor(f"{blk}.ffn_down.weight", weight(EMBED, FFN))
    writer.add_tensor("output_norm.weight", ones(EMBED))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
