#!/usr/bin/env python3
"""Writes a random-weight HF model directory of a Llama shape, as an 8B model comes: bf16
safetensors (config.json, model.safetensors, a byte-level tokenizer.json). The weights'
values do not matter to a load, so it is written quickly from a repeated 8 MiB pattern.
scripts/bench-load.sh and the GPU bundle's check.sh load it with bench_load.

Usage: make-load-model.py 8b|1b|135m OUT_DIR
  8b    Llama-3-8B (a 16 GB file)    1b  Llama-3.2-1B (2.5 GB)    135m  SmolLM2-135M (270 MB)
OUT_DIR must exist; the file needs its size and 2 GB to spare on that disk.
"""
import json
import os
import random
import shutil
import struct
import sys

if len(sys.argv) != 3 or sys.argv[1] not in ("8b", "1b", "135m"):
    sys.exit("usage: make-load-model.py 8b|1b|135m OUT_DIR")
shape, out = sys.argv[1:]
configs = {
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False, rope_theta=500000.0),
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True, rope_theta=500000.0),
    "135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                 num_key_value_heads=3, head_dim=64, vocab_size=49152, tie_word_embeddings=True, rope_theta=100000.0),
}
c = dict(configs[shape], architectures=["LlamaForCausalLM"], model_type="llama", max_position_embeddings=8192,
         rms_norm_eps=1e-5, torch_dtype="bfloat16")
json.dump(c, open(os.path.join(out, "config.json"), "w"), indent=1)
h, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
q, kv = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"]
tensors = [("model.embed_tokens.weight", [v, h])]
for i in range(c["num_hidden_layers"]):
    p = f"model.layers.{i}."
    tensors += [(p + "input_layernorm.weight", [h]), (p + "self_attn.q_proj.weight", [q, h]),
                (p + "self_attn.k_proj.weight", [kv, h]), (p + "self_attn.v_proj.weight", [kv, h]),
                (p + "self_attn.o_proj.weight", [h, q]), (p + "post_attention_layernorm.weight", [h]),
                (p + "mlp.gate_proj.weight", [f, h]), (p + "mlp.up_proj.weight", [f, h]),
                (p + "mlp.down_proj.weight", [h, f])]
tensors.append(("model.norm.weight", [h]))
if not c["tie_word_embeddings"]:
    tensors.append(("lm_head.weight", [v, h]))
header, offset = {}, 0
for name, dims in tensors:
    n = 2
    for d in dims:
        n *= d
    header[name] = {"dtype": "BF16", "shape": dims, "data_offsets": [offset, offset + n]}
    offset += n
free = shutil.disk_usage(out).free
if free < offset + (2 << 30):
    sys.exit(f"make-load-model: {out} has {free / 1e9:.1f} GB free; the file needs {offset / 1e9:.1f} GB (and 2 GB to spare)")
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
# Random bf16 values of magnitude 2^-10 .. 2^-4, repeated: the values do not matter to a load.
rng = random.Random(0)
pattern = b"".join(struct.pack("<H", (rng.getrandbits(1) << 15) | (rng.randint(0x75, 0x7b) << 7) | rng.getrandbits(7))
                   for _ in range(1 << 20)) * 4  # 8 MiB
with open(os.path.join(out, "model.safetensors"), "wb") as w:
    w.write(struct.pack("<Q", len(text)))
    w.write(text)
    left = offset
    while left > 0:
        chunk = pattern[:min(left, len(pattern))]
        w.write(chunk)
        left -= len(chunk)
# A byte-level tokenizer (no merges) with ChatML specials: only what loading needs.
def byte_symbol(b):
    printable = lambda x: 33 <= x <= 126 or 161 <= x <= 172 or 174 <= x <= 255
    return chr(b) if printable(b) else chr(256 + sum(1 for x in range(b) if not printable(x)))
vocab = {byte_symbol(b): b for b in range(256)}
added = [{"id": 256 + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
          "special": True} for i, t in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
json.dump({"version": "1.0", "added_tokens": added, "normalizer": None, "pre_tokenizer": level, "post_processor": None,
           "decoder": level, "model": {"type": "BPE", "dropout": None, "unk_token": None, "ignore_merges": False,
                                       "vocab": vocab, "merges": []}},
          open(os.path.join(out, "tokenizer.json"), "w"))
json.dump({"bos_token": None, "eos_token": "<|im_end|>", "add_bos_token": False},
          open(os.path.join(out, "tokenizer_config.json"), "w"))
print(f"make-load-model: wrote {shape} ({offset / 1e9:.2f} GB of bf16 weights) to {out}", file=sys.stderr)
