#!/usr/bin/env python3
"""Writes tests/data/reference/: logits and greedy continuations of the default model
(SmolLM2-135M-Instruct.Q4_1.gguf) computed by an independent implementation, llama.cpp
through llama-cpp-python, for the CPU backend test to compare pagedgen's forward pass with.
With --quantized it writes tests/data/reference-q4_1/ instead: the same prompts run on the
Q4_1 file as it is (see "--quantized" below), the reference for pagedgen's quantized
(`--cpu-math fast`) path. With --model gemma3 it does the same for Gemma 3 270M
(gemma-3-270m-q4_k_m.gguf, scripts/fetch-gemma3.sh): tests/data/reference-gemma3/ and,
with --quantized, tests/data/reference-gemma3-q4_k_m/ (see "--model gemma3" below).

How it stays comparable with pagedgen (default mode, the exact F32 path):
  - The Q4_1/Q8_0 model is first converted to an all-F32 GGUF in a temp dir: every tensor
    dequantized with gguf.quants.dequantize (the same numbers pagedgen's dequantizer gives,
    see tests/test_dequant.cpp), all metadata copied, general.file_type = 0 (ALL_F32). So
    llama.cpp multiplies the exact weights pagedgen uses, in F32, not re-quantized
    activations against Q4_1 blocks.
  - llama.cpp runs on the CPU with an F32 KV cache (type_k = type_v = 0; its default is
    F16), flash attention off, one sequence, n_ctx 512, n_batch 512, 2 threads.
  - Prompts are tokenized by llama.cpp with add_bos as the model's add_bos_token says
    (false for SmolLM2) and special=True (so "<|im_start|>" is one token). The two chat
    prompts are conversations rendered with the model's chat template (ChatML for SmolLM2).
  - Greedy tokens are argmax over the logits (first index on ties), each chosen token fed
    back with Llama.eval; 32 steps always, with no stop on EOS, so every prompt has the
    same count.

--quantized (tests/data/reference-q4_1/): no conversion; llama.cpp loads the Q4_1/Q8_0
file itself and uses its default CPU matmuls for those types: each activation row is
quantized per 32-value block (to Q8_1 against the Q4_1 layers, Q8_0 against the Q8_0
token embedding / tied output) and multiplied with integer dot products, scales applied
per block. Everything else is as above: F32 KV cache, flash attention off, n_ctx 512,
2 threads, the same 13 prompts, tokenization and greedy loop. Its logits differ from the
F32 reference by the activation rounding (far more than summation order), so greedy
tokens can part ways after a low-margin step; manifest.json's "generator" says which
mode made the files.

--model gemma3: the same 13 prompts on Gemma 3 270M, whose Q4_K_M file holds Q8_0, Q5_0,
Q4_K, Q6_K and F32 tensors (--quantized: llama.cpp's matmuls quantize activations to Q8_0
against Q8_0/Q5_0, to Q8_K per 256 values against Q4_K/Q6_K). Tokenized with add_bos=True
(the file's add_bos_token); the chat prompts are the same conversations rendered with
Gemma 3's own template (tests/data/chat_templates/gemma-3-it.jinja, through Jinja2 as
transformers renders it; the file carries no template), which writes <bos> itself, so
they are tokenized with add_bos=False; their manifest entries carry the "messages" too.
Its vocabulary has 262,144 tokens, so a logits row is 1 MiB: instead of logits.f32 each
prompt stores the NUM_TOP_LOGITS largest logits at the last prompt position
("top_logits": [[id, logit], ...], best first) and the manifest has no "logits_file".

Outputs of either mode (the total stays under 3 MB):
  manifest.json  {"format": 1, "model_file", "model_sha256", "vocab_size", "num_prompts",
                  "num_greedy_tokens", "logits_file", "logits_dtype", "logits_layout",
                  "generator": {versions and llama.cpp settings}, "notes": [...],
                  "prompts": [{"name", "text", ["messages",] "prompt_ids", "greedy_ids",
                               "greedy_margins", "greedy_text", "logits_row" | "top_logits"}]}
                 logits_row indexes logits.f32; it holds the logits at the last prompt
                 position (the distribution of the first generated token); "messages" (the
                 conversation "text" renders) came after the committed SmolLM2 data.
  logits.f32     float32 little-endian, row-major [num_prompts][vocab_size], no header
                 (not for gemma3: top_logits instead, see "--model gemma3").

Usage (versions used for the committed data: llama-cpp-python 0.3.36, gguf 0.19.0,
numpy 2.4.6, Python 3.11):
  python3 -m venv /tmp/refvenv
  /tmp/refvenv/bin/pip install llama-cpp-python==0.3.36 gguf numpy
  /tmp/refvenv/bin/python scripts/make-reference.py [out_dir]   (default tests/data/reference)
  /tmp/refvenv/bin/python scripts/make-reference.py --quantized [out_dir]
                                                 (default tests/data/reference-q4_1)
  /tmp/refvenv/bin/python scripts/make-reference.py --model gemma3 [--quantized] [out_dir]
                                       (also needs jinja2, which llama-cpp-python brings)
The model is found as pagedgen finds it (core/loader/default_model.cpp): $PAGEDGEN_MODEL
(the default model only), else $PAGEDGEN_MODELS_DIR, $XDG_CACHE_HOME/pagedgen/models,
~/.cache/pagedgen/models.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import gguf
from gguf import GGMLQuantizationType, GGUFValueType, quants

import llama_cpp

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
NUM_GREEDY_TOKENS = 32
NUM_TOP_LOGITS = 64
N_CTX = 512
N_THREADS = 2

WEIGHTS_F32 = ("all tensors dequantized to F32 with gguf.quants.dequantize "
               "(general.file_type = ALL_F32)")
WEIGHTS_QUANTIZED = ("the Q4_1/Q8_0 file as it is, llama.cpp's default CPU matmuls: "
                     "activations quantized per 32-value block (Q8_1 against Q4_1, Q8_0 "
                     "against Q8_0), integer dot products")
WEIGHTS_QUANTIZED_GEMMA3 = ("the Q4_K_M file as it is (Q8_0, Q5_0, Q4_K, Q6_K matrices), "
                            "llama.cpp's default CPU matmuls: activations quantized to Q8_0 "
                            "per 32 values against Q8_0/Q5_0, to Q8_K per 256 values against "
                            "Q4_K/Q6_K, integer dot products")
NOTE_F32 = ("Computed in F32 on CPU; expect differences of order 1e-4..1e-3 in logits "
            "from summation order, not exact equality.")
NOTE_QUANTIZED = ("Computed on CPU with quantized activations (see generator.weights); "
                  "another implementation quantizing the same way differs by rounding "
                  "and summation order, the F32 reference (tests/data/reference) by the "
                  "activation quantization itself.")

CHAT_SYSTEM = {"role": "system",
               "content": "You are a helpful AI assistant named SmolLM, trained by Hugging Face"}


# (name, text or conversation). Varied on purpose: lengths from one token to ~150, code,
# digits, several scripts and emoji (multi-byte and byte-fallback tokens), and two chats
# (rendered with each model's template: special tokens).
PROMPTS = [
    ("capital_of_france", "The capital of France is"),
    ("one_word", "Hello"),
    ("story_start", "Once upon a time, in a small village by the sea,"),
    ("long_paragraph",
     "The history of computing is a story of abstraction. Early machines were programmed "
     "by rewiring panels and flipping switches, and every program was written for one "
     "particular machine. Assembly languages gave names to instructions, and compilers "
     "later let people write formulas instead of opcodes. Operating systems hid the "
     "details of disks and terminals behind files and processes, while virtual memory "
     "let each program believe it owned the whole address space. Networks then joined "
     "machines together, and protocols layered on protocols made it possible to send a "
     "message across the world without knowing which cables it would travel through. "
     "Each layer made the one below it invisible to most people, and that invisibility "
     "is exactly what made the next layer possible. Today, a student can"),
    ("python_code",
     "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
     "    if n < 2:\n        return n\n"),
    ("c_code", "#include <stdio.h>\n\nint main(void) {\n    for (int i = 0; i < 10; ++i) {\n"),
    ("numbers", "1, 1, 2, 3, 5, 8, 13, 21, 34, 55,"),
    ("arithmetic", "Q: What is 127 + 385?\nA: 127 + 385 = "),
    ("json", '{"name": "Alice", "age": 30, "languages": ["en", "fr"], "city": '),
    ("multilingual_emoji",
     "Bonjour, je m'appelle Zoé. Привет, мир! 東京は日本の首都です。🌍🚀 Ich heiße"),
    ("chatml_question", [CHAT_SYSTEM, {"role": "user", "content": "What is the capital of France?"}]),
    ("chatml_multiturn", [
        CHAT_SYSTEM,
        {"role": "user", "content": "Write a haiku about autumn."},
        {"role": "assistant",
         "content": "Crimson leaves falling,\nwhispers of the cooling wind,\nthe year exhales slow."},
        {"role": "user", "content": "Now one about winter."}]),
    ("whitespace", "Item\tPrice\n  apple\t1.20\n  pear\t0.95\n\n\nTotal:"),
]


def render_chatml(messages: list[dict]) -> str:
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def render_gemma3(messages: list[dict]) -> str:
    """Gemma 3's template (the file has none) rendered as transformers does, by the Jinja
    set-up tests/data/chat_templates/render_expected.py uses for pagedgen's template tests."""
    templates = Path(__file__).resolve().parent.parent / "tests" / "data" / "chat_templates"
    spec = importlib.util.spec_from_file_location("render_expected", templates / "render_expected.py")
    render_expected = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_expected)
    template = render_expected.environment().from_string(
        (templates / "gemma-3-it.jinja").read_text(encoding="utf-8"))
    return template.render(messages=messages, bos_token="<bos>", eos_token="<eos>",
                           add_generation_prompt=True)


@dataclass(frozen=True)
class ModelSpec:
    file: str
    fetch_script: str
    add_bos: bool                            # tokenizer.ggml.add_bos_token
    render_chat: Callable[[list[dict]], str]
    chat_has_bos: bool                       # the rendered chat text starts with BOS itself
    out_dirs: tuple[str, str]                # under tests/data: F32 run, --quantized run
    weights_quantized: str
    full_logits: bool                        # logits.f32, else top_logits in the manifest
    sanity: Optional[tuple[str, str]]        # (prompt name, start of its greedy text)


MODELS = {
    "smollm2": ModelSpec(DEFAULT_MODEL_FILE, "scripts/fetch-model.sh", False, render_chatml, False,
                         ("reference", "reference-q4_1"), WEIGHTS_QUANTIZED, True,
                         ("capital_of_france", " Paris")),
    "gemma3": ModelSpec("gemma-3-270m-q4_k_m.gguf", "scripts/fetch-gemma3.sh", True, render_gemma3, True,
                        ("reference-gemma3", "reference-gemma3-q4_k_m"), WEIGHTS_QUANTIZED_GEMMA3, False,
                        None),
}


def find_model(spec: ModelSpec) -> Path:
    def env(name):
        value = os.environ.get(name)
        return value if value else None

    if env("PAGEDGEN_MODEL") and spec.file == DEFAULT_MODEL_FILE:
        path = Path(env("PAGEDGEN_MODEL"))
    else:
        if env("PAGEDGEN_MODELS_DIR"):
            models_dir = Path(env("PAGEDGEN_MODELS_DIR"))
        elif env("XDG_CACHE_HOME"):
            models_dir = Path(env("XDG_CACHE_HOME")) / "pagedgen" / "models"
        elif env("HOME"):
            models_dir = Path(env("HOME")) / ".cache" / "pagedgen" / "models"
        else:
            models_dir = Path(".cache") / "pagedgen" / "models"
        path = models_dir / spec.file
    if not path.is_file():
        sys.exit(f"error: model not found at {path}; run {spec.fetch_script}"
                 + (" or set PAGEDGEN_MODEL" if spec.file == DEFAULT_MODEL_FILE else ""))
    return path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def field_value(field: gguf.ReaderField):
    """A metadata value as the writer wants it (a string, a number, a list)."""
    value = field.contents()
    if field.types[0] == GGUFValueType.ARRAY and field.types[-1] != GGUFValueType.STRING:
        return list(value)
    return value


def convert_to_f32(src: Path, dst: Path) -> None:
    reader = gguf.GGUFReader(src)
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(dst, arch)  # writes general.architecture itself
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in (gguf.Keys.General.ARCHITECTURE,
                                              gguf.Keys.General.FILE_TYPE):
            continue  # header pseudo-fields, and the two keys set above
        sub_type = field.types[-1] if field.types[0] == GGUFValueType.ARRAY else None
        if field.types[0] == GGUFValueType.ARRAY and len(field.types) > 2:
            sys.exit(f"error: nested array metadata {key} is not handled")
        writer.add_key_value(key, field_value(field), field.types[0], sub_type=sub_type)
    for tensor in reader.tensors:
        # ggml order -> numpy order: the writer reverses the numpy shape back.
        numpy_shape = tuple(int(d) for d in reversed(tensor.shape.tolist()))
        values = quants.dequantize(tensor.data, tensor.tensor_type)
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(numpy_shape)
        writer.add_tensor(tensor.name, values, raw_dtype=GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def greedy(llm: llama_cpp.Llama, prompt_ids: list[int]):
    """Logits at the last prompt position, NUM_GREEDY_TOKENS argmax tokens, and at each
    step the gap between the best and second-best logit (a small gap is a step where an
    implementation with other rounding may rightly choose differently)."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2",
                        help="the default model (smollm2) or Gemma 3 270M (gemma3)")
    parser.add_argument("--quantized", action="store_true",
                        help="run llama.cpp on the quantized file itself (no F32 conversion)")
    parser.add_argument("out_dir", nargs="?", type=Path,
                        help="default tests/data/reference, or tests/data/reference-q4_1 "
                             "with --quantized (gemma3: reference-gemma3, reference-gemma3-q4_k_m)")
    args = parser.parse_args()
    spec = MODELS[args.model]
    data_dir = Path(__file__).resolve().parent.parent / "tests" / "data"
    out_dir = args.out_dir or data_dir / spec.out_dirs[1 if args.quantized else 0]
    model_path = find_model(spec)
    print(f"model: {model_path}")
    model_sha256 = sha256_of(model_path)

    with tempfile.TemporaryDirectory(prefix="pagedgen-ref-") as tmp:
        if args.quantized:
            run_path = model_path
        else:
            run_path = Path(tmp) / "model-f32.gguf"
            convert_to_f32(model_path, run_path)
            print(f"converted to F32: {run_path} ({run_path.stat().st_size} bytes)")
        llm = llama_cpp.Llama(
            model_path=str(run_path), n_ctx=N_CTX, n_threads=N_THREADS,
            n_threads_batch=N_THREADS, logits_all=True,
            type_k=int(GGMLQuantizationType.F32), type_v=int(GGMLQuantizationType.F32),
            flash_attn=False, n_batch=N_CTX, n_ubatch=N_CTX, n_gpu_layers=0,
            verbose=False, seed=0)
        vocab_size = llm.n_vocab()

        rows = []
        entries = []
        for index, (name, prompt) in enumerate(PROMPTS):
            chat = isinstance(prompt, list)
            text = spec.render_chat(prompt) if chat else prompt
            add_bos = spec.add_bos and not (chat and spec.chat_has_bos)
            prompt_ids = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
            if len(prompt_ids) + NUM_GREEDY_TOKENS > N_CTX:
                sys.exit(f"error: prompt {name} is too long for n_ctx {N_CTX}")
            last_logits, generated, margins = greedy(llm, prompt_ids)
            greedy_text = llm.detokenize(generated, special=True).decode("utf-8", "replace")
            entry = {"name": name, "text": text}
            if chat:
                entry["messages"] = prompt
            entry.update({"prompt_ids": prompt_ids, "greedy_ids": generated,
                          "greedy_margins": margins, "greedy_text": greedy_text})
            if spec.full_logits:
                rows.append(last_logits)
                entry["logits_row"] = index
            else:
                top = np.argsort(-last_logits, kind="stable")[:NUM_TOP_LOGITS]
                entry["top_logits"] = [[int(t), round(float(last_logits[t]), 6)] for t in top]
            entries.append(entry)
            print(f"{name}: {len(prompt_ids)} prompt tokens -> {greedy_text!r}")
        del llm

    if spec.full_logits:
        logits = np.stack(rows).astype("<f4")
        assert logits.shape == (len(PROMPTS), vocab_size)
        assert np.all(np.isfinite(logits))

    if spec.sanity:
        name, start = spec.sanity
        entry = next(e for e in entries if e["name"] == name)
        if not entry["greedy_text"].startswith(start):
            sys.exit(f"error: sanity check failed: {entry['text']!r} continues with "
                     f"{entry['greedy_text']!r}, expected {start!r}...")
        print(f"sanity: {entry['text']!r} -> {entry['greedy_text']!r}")

    manifest = {
        "format": 1,
        "model_file": spec.file,
        "model_sha256": model_sha256,
        "vocab_size": vocab_size,
        "num_prompts": len(entries),
        "num_greedy_tokens": NUM_GREEDY_TOKENS,
    }
    if spec.full_logits:
        manifest.update({
            "logits_file": "logits.f32",
            "logits_dtype": "float32 little-endian",
            "logits_layout": "row-major [num_prompts][vocab_size]; row i = prompts[i].logits_row"})
    manifest.update({
        "generator": {
            "script": "scripts/make-reference.py",
            "implementation": "llama.cpp via llama-cpp-python",
            "llama_cpp_python": llama_cpp.__version__,
            "gguf": getattr(gguf, "__version__", None) or _package_version("gguf"),
            "numpy": np.__version__,
            "mode": "quantized" if args.quantized else "f32",
            "weights": spec.weights_quantized if args.quantized else WEIGHTS_F32,
            "kv_cache": "F32 (type_k = type_v = 0)",
            "flash_attn": False,
            "n_ctx": N_CTX,
            "n_batch": N_CTX,
            "n_threads": N_THREADS,
            "tokenize": (f"add_bos={spec.add_bos}"
                         + (" (False for the chats: the template writes BOS)"
                            if spec.add_bos and spec.chat_has_bos else "")
                         + ", special=True"),
        },
        "notes": [
            ("logits_row holds the logits at the last prompt position, before any "
             "generated token." if spec.full_logits else
             f"top_logits: the {NUM_TOP_LOGITS} largest logits at the last prompt position "
             "(before any generated token), [id, logit], best first."),
            "A prompt with \"messages\" is that conversation rendered with the model's chat "
            "template (text) and tokenized.",
            "greedy_ids: argmax (first index on ties) at each step, each token fed back "
            "with Llama.eval; always num_greedy_tokens steps, no stop on EOS.",
            "greedy_margins[i]: best minus second-best logit at greedy step i; where it is "
            "tiny, another correct F32 implementation may pick the other token.",
            NOTE_QUANTIZED if args.quantized else NOTE_F32,
        ],
        "prompts": entries,
    })
    out_dir.mkdir(parents=True, exist_ok=True)
    total = 0
    if spec.full_logits:
        (out_dir / "logits.f32").write_bytes(logits.tobytes(order="C"))
        total += (out_dir / "logits.f32").stat().st_size
    with open(out_dir / "manifest.json", "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")
    total += (out_dir / "manifest.json").stat().st_size
    print(f"wrote {out_dir} ({total} bytes)")


def _package_version(name: str) -> str:
    from importlib.metadata import version
    return version(name)


if __name__ == "__main__":
    main()
