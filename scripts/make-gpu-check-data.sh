#!/usr/bin/env bash
# Writes what the GPU check (scripts/gpu-bundle/check.sh) runs on and compares against that
# a GPU node cannot make itself (it has neither the default model nor a network):
#   OUT/smollm2-135m.vocab.gguf  the default model's vocabulary alone (~1.8 MB; make-vocab-gguf.py):
#                                the --tokenizer of every dummy-weight run of the check
#   OUT/workload-8b.jsonl        scripts/make-gpu-workload.py's workload at its defaults (256
#                                prompts of ~985 tokens, 8 documents x 32 questions)
#   OUT/cpu/NAME.jsonl           the CPU reference of the check's float32 comparison: generate
#                                on samples/NAME.jsonl with dummy weights of the default model's
#                                shape, --device cpu --cpu-math exact (check.sh runs the same
#                                with --device cuda --dtype float32 and compares byte for byte)
#   scripts/make-gpu-check-data.sh PAGEDGEN OUT_DIR
# PAGEDGEN: a built pagedgen (any build: only its CPU backend runs). The default model is
# $PAGEDGEN_MODEL, else SmolLM2-135M-Instruct.Q4_1.gguf where pagedgen looks for it
# (scripts/fetch-model.sh puts it there). Exit status 0; 1 when a step fails (its output
# says which); 2 on bad arguments or without the model.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: make-gpu-check-data.sh PAGEDGEN OUT_DIR" >&2
  exit 2
fi
pagedgen="$1" out="$2"
model="${PAGEDGEN_MODEL:-${PAGEDGEN_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pagedgen/models}/SmolLM2-135M-Instruct.Q4_1.gguf}"
[[ -x "$pagedgen" ]] || { echo "make-gpu-check-data: $pagedgen is not an executable" >&2; exit 2; }
if [[ ! -f "$model" ]]; then
  echo "make-gpu-check-data: the default model is not at $model (scripts/fetch-model.sh, or set PAGEDGEN_MODEL)" >&2
  exit 2
fi
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
samples="$source_dir/samples"
vocab="$out/smollm2-135m.vocab.gguf"
mkdir -p "$out/cpu"

python3 "$source_dir/scripts/make-vocab-gguf.py" "$model" "$vocab"
python3 "$source_dir/scripts/make-gpu-workload.py" -o "$out/workload-8b.jsonl"
for input in "$samples"/*.jsonl; do
  name="$(basename "$input")"
  start=$SECONDS
  "$pagedgen" generate -q --device cpu --cpu-math exact --load-format dummy \
    -m "$samples/smollm2-135m.config.json" --tokenizer "$vocab" -i "$input" -o "$out/cpu/$name"
  echo "make-gpu-check-data: cpu/$name in $((SECONDS - start)) s" >&2
done
