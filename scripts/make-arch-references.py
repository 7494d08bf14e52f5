#!/usr/bin/env python3
"""Writes tests/data/arch-reference/<arch>/: a tiny random-weight GGUF of each architecture
pagedgen runs beyond the Llama block (qwen3, phi3, gemma2, gemma3), and the logits and
greedy continuations llama.cpp (through llama-cpp-python) computes on that same file, for
tests/test_e2e_arch_reference.cpp to compare pagedgen's CPU forward pass with.

Each model.gguf (a few hundred KB, committed):
  - weights: float32 (general.file_type = ALL_F32), drawn from numpy's PCG64 with a fixed
    seed per architecture: embeddings N(0, 1), matrices N(0, 1/fan_in) (Q and K matrices
    twice that scale, so attention is peaked and the soft-caps bite), norm weights
    1 + N(0, 0.1^2) (the form llama.cpp's converter stores, Gemma's +1 included);
  - dimensions: hidden 32, 4 query heads and 2 KV heads (GQA), feed-forward 64, head dim
    16 (Qwen3) or 24 (Gemma), so that heads * head_dim != hidden as in the real models,
    and 8 for Phi-3 (whose fused tensors assume heads * head_dim == hidden); an untied
    output head (Phi-3) is N(0, 1) like the embeddings, so logits span tens of units and
    greedy steps have clear margins;
  - layout of the real files: phi3 with fused attn_qkv and ffn_up (gate rows first, then
    up), gemma2 with post-attention / post-feed-forward norms, attention and final logit
    soft-caps (3 and 20, below the real 50 and 30 so that they bite on a tiny model) and a
    sliding window on even layers, gemma3 with q/k norms, a window on 5 of
    6 layers and a different RoPE base on those (rope.freq_base_swa absent: llama.cpp's
    default 10,000, as in the real files), qwen3 with q/k norms and tied embeddings;
  - the sliding window is 6 positions, shorter than every prompt, so it changes the result;
  - vocabulary: the first 512 tokens of the default model's (SmolLM2, byte-level BPE:
    17 special tokens, the 256 byte tokens, then the merges that build the rest) with the
    merges among them, so prompts are real text and pagedgen's tokenizer is checked too.

How llama.cpp is run (as scripts/make-reference.py): CPU, F32 KV cache, flash attention
off, n_ctx 512, 2 threads; prompts tokenized with add_bos=False, special=True; logits at
the last prompt position; 32 greedy steps (argmax, first index on ties), each token fed
back with Llama.eval, no stop on EOS. Outputs per architecture, in make-reference.py's
format (tests/reference_data.h reads it): manifest.json and logits.f32.

<arch>/q8_0/ holds the same model with its matrices quantized to Q8_0 (gguf.quants) and
llama.cpp's run on it as it is (activations quantized to Q8_0 per 32 values): the
reference for pagedgen's fast path (--cpu-math fast).

Usage (versions used for the committed data are in each manifest's "generator"):
  python3 -m venv /tmp/refvenv
  /tmp/refvenv/bin/pip install llama-cpp-python==0.3.36 gguf numpy
  /tmp/refvenv/bin/python scripts/make-arch-references.py [--arch NAME ...] [out_dir]
The default model (for the vocabulary) is found as pagedgen finds it: $PAGEDGEN_MODEL,
else $PAGEDGEN_MODELS_DIR, $XDG_CACHE_HOME/pagedgen/models, ~/.cache/pagedgen/models.
"""
import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType, quants

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
VOCAB_SIZE = 512
NUM_GREEDY_TOKENS = 32
N_CTX = 512
N_THREADS = 2
SLIDING_WINDOW = 6

# (name, text): several lengths, all longer than the sliding window.
PROMPTS = [
    ("capital_of_france", "The capital of France is"),
    ("story_start", "Once upon a time, in a small village by the sea,"),
    ("python_code", "def add(a, b):\n    return a + b\n"),
    ("numbers", "1, 1, 2, 3, 5, 8, 13, 21, 34, 55,"),
    ("chatml_question", "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"),
]

# Per architecture: dimensions and the features its real files carry.
ARCHS = {
    "qwen3": dict(seed=3, layers=2, head_dim=16, qk_norm=True, tied=True, rope_base=1_000_000.0),
    "phi3": dict(seed=31, layers=2, head_dim=8, fused=True, tied=False, rope_base=10_000.0),
    "gemma2": dict(seed=2, layers=4, head_dim=24, gemma=True, tied=True, rope_base=10_000.0,
                   attn_softcap=3.0, final_softcap=20.0),
    "gemma3": dict(seed=33, layers=6, head_dim=24, gemma=True, qk_norm=True, tied=True,
                   rope_base=1_000_000.0),
}
HIDDEN = 32
FFN = 64
NUM_HEADS = 4
NUM_KV_HEADS = 2


def find_default_model() -> Path:
    def env(name):
        value = os.environ.get(name)
        return value if value else None

    if env("PAGEDGEN_MODEL"):
        return Path(env("PAGEDGEN_MODEL"))
    if env("PAGEDGEN_MODELS_DIR"):
        models_dir = Path(env("PAGEDGEN_MODELS_DIR"))
    elif env("XDG_CACHE_HOME"):
        models_dir = Path(env("XDG_CACHE_HOME")) / "pagedgen" / "models"
    elif env("HOME"):
        models_dir = Path(env("HOME")) / ".cache" / "pagedgen" / "models"
    else:
        models_dir = Path(".cache") / "pagedgen" / "models"
    return models_dir / DEFAULT_MODEL_FILE


def small_vocabulary(model_path: Path):
    """The first VOCAB_SIZE tokens of the default model and the merges among them."""
    reader = gguf.GGUFReader(model_path)
    def contents(key):
        return reader.get_field(key).contents()
    tokens = contents("tokenizer.ggml.tokens")[:VOCAB_SIZE]
    types = list(contents("tokenizer.ggml.token_type"))[:VOCAB_SIZE]
    kept = set(tokens)
    merges = [m for m in contents("tokenizer.ggml.merges")
              if all(part in kept for part in m.split(" ")) and m.replace(" ", "") in kept]
    special = {key: int(contents(key)) for key in (
        "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id")}
    assert all(v < VOCAB_SIZE for v in special.values())
    return tokens, types, merges, special, contents("tokenizer.ggml.pre")


def write_model(path: Path, arch: str, spec: dict, vocab, q8_0: bool = False) -> None:
    tokens, types, merges, special, pre = vocab
    rng = np.random.Generator(np.random.PCG64(spec["seed"]))
    head_dim = spec["head_dim"]
    q_dim, kv_dim = NUM_HEADS * head_dim, NUM_KV_HEADS * head_dim

    def matrix(rows, cols, gain=1.0):  # numpy (rows, cols) = GGUF dims {cols, rows}
        return (rng.standard_normal((rows, cols)) * gain / np.sqrt(cols)).astype(np.float32)

    def norm(dim):
        return (1.0 + 0.1 * rng.standard_normal(dim)).astype(np.float32)

    w = gguf.GGUFWriter(path, arch)
    # No architecture in the name: llama.cpp changes token attributes of files named "phi3".
    w.add_name("pagedgen tiny random model")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if q8_0 else gguf.LlamaFileType.ALL_F32)
    w.add_context_length(N_CTX)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(spec["layers"])
    w.add_feed_forward_length(FFN)
    w.add_head_count(NUM_HEADS)
    w.add_head_count_kv(NUM_KV_HEADS)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(spec["rope_base"])
    if head_dim * NUM_HEADS != HIDDEN:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if arch == "phi3":
        w.add_rope_dimension_count(head_dim)
        w.add_sliding_window(2047)  # as Phi-3-mini-4k's files; llama.cpp ignores it
    if spec.get("gemma"):
        w.add_sliding_window(SLIDING_WINDOW)
    if "attn_softcap" in spec:
        w.add_attn_logit_softcapping(spec["attn_softcap"])
    if "final_softcap" in spec:
        w.add_final_logit_softcapping(spec["final_softcap"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(special["tokenizer.ggml.bos_token_id"])
    w.add_eos_token_id(special["tokenizer.ggml.eos_token_id"])
    w.add_unk_token_id(special["tokenizer.ggml.unknown_token_id"])
    w.add_pad_token_id(special["tokenizer.ggml.padding_token_id"])
    w.add_add_bos_token(False)

    def add(name, values):  # matrices in Q8_0 when asked, norms always float32
        if q8_0 and values.ndim == 2:
            w.add_tensor(name, quants.quantize(values, GGMLQuantizationType.Q8_0),
                         raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, values, raw_dtype=GGMLQuantizationType.F32)

    add("token_embd.weight", rng.standard_normal((VOCAB_SIZE, HIDDEN)).astype(np.float32))
    add("output_norm.weight", norm(HIDDEN))
    if not spec["tied"]:
        add("output.weight", matrix(VOCAB_SIZE, HIDDEN, np.sqrt(HIDDEN)))
    for i in range(spec["layers"]):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", norm(HIDDEN))
        wq, wk, wv = matrix(q_dim, HIDDEN, 2.0), matrix(kv_dim, HIDDEN, 2.0), matrix(kv_dim, HIDDEN)
        if spec.get("fused"):
            add(p + "attn_qkv.weight", np.concatenate([wq, wk, wv]))
        else:
            add(p + "attn_q.weight", wq)
            add(p + "attn_k.weight", wk)
            add(p + "attn_v.weight", wv)
        if spec.get("qk_norm"):
            add(p + "attn_q_norm.weight", norm(head_dim))
            add(p + "attn_k_norm.weight", norm(head_dim))
        add(p + "attn_output.weight", matrix(HIDDEN, q_dim))
        if spec.get("gemma"):
            add(p + "post_attention_norm.weight", norm(HIDDEN))
        add(p + "ffn_norm.weight", norm(HIDDEN))
        gate, up = matrix(FFN, HIDDEN), matrix(FFN, HIDDEN)
        if spec.get("fused"):
            add(p + "ffn_up.weight", np.concatenate([gate, up]))
        else:
            add(p + "ffn_gate.weight", gate)
            add(p + "ffn_up.weight", up)
        add(p + "ffn_down.weight", matrix(HIDDEN, FFN))
        if spec.get("gemma"):
            add(p + "post_ffw_norm.weight", norm(HIDDEN))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def greedy(llm, prompt_ids):
    """Logits at the last prompt position, NUM_GREEDY_TOKENS argmax tokens and each step's
    gap between the best and second-best logit."""
    llm.reset()
    llm.eval(prompt_ids)
    last_logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32, copy=True)
    generated, margins = [], []
    logits = last_logits
    for _ in range(NUM_GREEDY_TOKENS):
        token = int(np.argmax(logits))
        top2 = np.partition(logits, -2)[-2:]
        generated.append(token)
        margins.append(round(float(top2[1] - top2[0]), 6))
        llm.eval([token])
        logits = llm.scores[llm.n_tokens - 1]
    return last_logits, generated, margins


def write_reference(out_dir: Path, arch: str, q8_0: bool = False) -> None:
    import llama_cpp
    model_path = out_dir / "model.gguf"
    llm = llama_cpp.Llama(
        model_path=str(model_path), n_ctx=N_CTX, n_threads=N_THREADS, n_threads_batch=N_THREADS,
        logits_all=True, type_k=int(GGMLQuantizationType.F32), type_v=int(GGMLQuantizationType.F32),
        flash_attn=False, n_batch=N_CTX, n_ubatch=N_CTX, n_gpu_layers=0, verbose=False, seed=0)
    assert llm.n_vocab() == VOCAB_SIZE
    rows, entries = [], []
    for index, (name, text) in enumerate(PROMPTS):
        prompt_ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        assert len(prompt_ids) > SLIDING_WINDOW, name
        last_logits, generated, margins = greedy(llm, prompt_ids)
        rows.append(last_logits)
        entries.append({"name": name, "text": text, "prompt_ids": prompt_ids,
                        "greedy_ids": generated, "greedy_margins": margins,
                        "greedy_text": llm.detokenize(generated, special=True).decode("utf-8", "replace"),
                        "logits_row": index})
        print(f"{arch} {name}: {len(prompt_ids)} prompt tokens, smallest greedy margin "
              f"{min(margins):.4f}, logits in [{last_logits.min():.2f}, {last_logits.max():.2f}]")
    del llm
    logits = np.stack(rows).astype("<f4")
    assert np.all(np.isfinite(logits))
    manifest = {
        "format": 1,
        "model_file": "model.gguf",
        "model_sha256": sha256_of(model_path),
        "architecture": arch,
        "vocab_size": VOCAB_SIZE,
        "num_prompts": len(entries),
        "num_greedy_tokens": NUM_GREEDY_TOKENS,
        "logits_file": "logits.f32",
        "logits_dtype": "float32 little-endian",
        "logits_layout": "row-major [num_prompts][vocab_size]; row i = prompts[i].logits_row",
        "generator": {
            "script": "scripts/make-arch-references.py",
            "implementation": "llama.cpp via llama-cpp-python",
            "llama_cpp_python": llama_cpp.__version__,
            "gguf": _package_version("gguf"),
            "numpy": np.__version__,
            "weights": ("the float32 file's matrices quantized to Q8_0 with gguf.quants (norms float32); "
                        "llama.cpp's CPU matmuls quantize activations to Q8_0 per 32 values"
                        if q8_0 else "random float32") + ", see the script (seed " + str(ARCHS[arch]["seed"]) + ")",
            "kv_cache": "F32 (type_k = type_v = 0)",
            "flash_attn": False,
            "n_ctx": N_CTX,
            "n_batch": N_CTX,
            "n_threads": N_THREADS,
            "tokenize": "add_bos=False, special=True",
        },
        "notes": [
            "logits_row holds the logits at the last prompt position, before any generated token.",
            "greedy_ids: argmax (first index on ties) at each step, each token fed back with "
            "Llama.eval; always num_greedy_tokens steps, no stop on EOS.",
            "greedy_margins[i]: best minus second-best logit at greedy step i.",
        ],
        "prompts": entries,
    }
    (out_dir / "logits.f32").write_bytes(logits.tobytes(order="C"))
    with open(out_dir / "manifest.json", "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")


def _package_version(name: str) -> str:
    from importlib.metadata import version
    return version(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", action="append", choices=sorted(ARCHS),
                        help="only this architecture (repeatable); default all")
    parser.add_argument("--models-only", action="store_true",
                        help="write the GGUF files, not the llama.cpp references")
    parser.add_argument("out_dir", nargs="?", type=Path,
                        help="default tests/data/arch-reference")
    args = parser.parse_args()
    out_root = args.out_dir or Path(__file__).resolve().parent.parent / "tests" / "data" / "arch-reference"
    model_path = find_default_model()
    if not model_path.is_file():
        sys.exit(f"error: default model not found at {model_path}; run scripts/fetch-model.sh "
                 "or set PAGEDGEN_MODEL")
    vocab = small_vocabulary(model_path)
    for arch in args.arch or list(ARCHS):
        out_dir = out_root / arch
        out_dir.mkdir(parents=True, exist_ok=True)
        for q8_0, model_dir in ((False, out_dir), (True, out_dir / "q8_0")):
            model_dir.mkdir(parents=True, exist_ok=True)
            write_model(model_dir / "model.gguf", arch, ARCHS[arch], vocab, q8_0)
            print(f"wrote {model_dir / 'model.gguf'} ({(model_dir / 'model.gguf').stat().st_size} bytes)")
            if not args.models_only:
                write_reference(model_dir, arch, q8_0)


if __name__ == "__main__":
    main()
