#!/usr/bin/env python3
"""Writes the CPU workloads of scripts/bench-cpu-vs-llamacpp.sh (pagedgen's CPU backend
against llama.cpp on the same GGUF), as plain-format JSONL, all greedy (temperature 0) and
with ignore_eos, so that every request generates exactly max_tokens tokens and the token
counts match llama.cpp's benchmarks (llama-batched-bench, llama-bench), which never stop
early:

  shared   64 requests: 8 documents x 8 questions, {"id": "doc3-q5", "prompt": document +
           question}, 64 new tokens each. Requests of one document share its ~490-token
           prefix; a prompt is ~501 tokens (llama-batched-bench -npp 501 -ntg 64 -npl 8).
  prefill  one prompt of ~2,048 tokens, max_tokens 1: the prefill rate
           (llama-bench -p 2048 -n 0).
  decode   one short prompt, 128 new tokens: decoding at batch 1 (llama-bench -p 0 -n 128).

The text is the English-like filler of scripts/make-gpu-workload.py (its word list and
seeded generator are imported from there, not copied): the same --seed gives the same
file on every machine and Python 3 version.

Token counts, measured with `pagedgen tokenize` on the default model (SmolLM2's byte-level
BPE adds no BOS; `--count-tokens` repeats the measurement) at the default settings:
  shared   documents 485-492 tokens (mean 488.4), prompts 498-505 (mean 501.4)
  prefill  2,048 tokens
  decode   12 tokens
--doc-words, --question-words and --prefill-words move the lengths.

Usage:
  scripts/make-cpu-workload.py --workload shared -o /tmp/cpu-shared.jsonl
  scripts/make-cpu-workload.py --workload prefill -o /tmp/cpu-prefill.jsonl
  scripts/make-cpu-workload.py --workload decode -o /tmp/cpu-decode.jsonl
  scripts/make-cpu-workload.py --workload shared --count-tokens build/app/pagedgen
scripts/bench-cpu-vs-llamacpp.sh writes all three and runs them.
"""
import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path


def _gpu_workload_module():
    path = Path(__file__).resolve().parent / "make-gpu-workload.py"
    spec = importlib.util.spec_from_file_location("make_gpu_workload", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_gpu = _gpu_workload_module()
Text = _gpu.Text
document = _gpu.document
question = _gpu.question


def greedy_request(request_id, prompt, max_tokens):
    return {"id": request_id, "prompt": prompt, "max_tokens": max_tokens,
            "temperature": 0, "ignore_eos": True}


def shared_workload(args):
    # The GPU generator's documents and questions, made greedy with a fixed length.
    for request in _gpu.workload(args):
        yield greedy_request(request["id"], request["prompt"], args.shared_max_tokens)


def prefill_workload(args):
    text = Text(args.seed + 1)
    yield greedy_request("prefill", document(text, 0, args.prefill_words), 1)


def decode_workload(args):
    text = Text(args.seed + 2)
    prompt = f"Question: {question(text, args.decode_prompt_words)}\nAnswer:"
    yield greedy_request("decode", prompt, args.decode_max_tokens)


WORKLOADS = {"shared": shared_workload, "prefill": prefill_workload, "decode": decode_workload}


def count_tokens(pagedgen, model, prompt):
    cmd = [pagedgen, "tokenize", "--json"] + (["-m", model] if model else []) + ["-"]
    done = subprocess.run(cmd, input=prompt.encode("utf-8"), capture_output=True, check=True)
    return len(json.loads(done.stdout)["ids"])


def report_token_counts(lines, pagedgen, model):
    """Prints min/mean/max prompt tokens (and, for shared, of the documents alone)."""
    prompts = [count_tokens(pagedgen, model, line["prompt"]) for line in lines]
    print(f"prompts: {len(prompts)}, tokens min {min(prompts)} mean "
          f"{statistics.mean(prompts):.1f} max {max(prompts)}", file=sys.stderr)
    docs = sorted({line["prompt"].split("\n\nQuestion ")[0] for line in lines
                   if "\n\nQuestion " in line["prompt"]})
    if docs:
        counts = [count_tokens(pagedgen, model, doc) for doc in docs]
        print(f"documents: {len(counts)}, tokens min {min(counts)} mean "
              f"{statistics.mean(counts):.1f} max {max(counts)}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), required=True, help="which workload to write")
    parser.add_argument("-o", "--output", default="-", help="JSONL file to write (default: standard output)")
    parser.add_argument("--seed", type=int, default=15, help="generator seed (default 15)")
    parser.add_argument("--documents", type=int, default=8, help="shared: documents (default 8)")
    parser.add_argument("--questions", type=int, default=8, help="shared: questions per document (default 8)")
    parser.add_argument("--doc-words", type=int, default=439, help="shared: words per document (default 439, ~490 tokens)")
    parser.add_argument("--question-words", type=int, default=3, help="shared: words per question (default 3, ~11 tokens with its frame)")
    parser.add_argument("--shared-max-tokens", type=int, default=64, help="shared: new tokens per request (default 64)")
    parser.add_argument("--prefill-words", type=int, default=1869, help="prefill: words in the prompt (default 1869, ~2,048 tokens)")
    parser.add_argument("--decode-prompt-words", type=int, default=6, help="decode: words in the prompt (default 6)")
    parser.add_argument("--decode-max-tokens", type=int, default=128, help="decode: new tokens (default 128)")
    parser.add_argument("--count-tokens", metavar="PAGEDGEN", help="also print the prompts' token counts (stderr), "
                        "measured with PAGEDGEN tokenize")
    parser.add_argument("-m", "--model", help="with --count-tokens: the model whose tokenizer to use (default: pagedgen's)")
    args = parser.parse_args()
    lines = list(WORKLOADS[args.workload](args))
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    with out:
        for line in lines:
            out.write(json.dumps(line) + "\n")
    if args.count_tokens:
        report_token_counts(lines, args.count_tokens, args.model)


if __name__ == "__main__":
    main()
