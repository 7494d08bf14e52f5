#!/usr/bin/env bash
# The benchmark of scripts/gpu-check.sh from the bundle: bench_gpu on the default model
# (MODEL.gguf, or $PAGEDGEN_MODEL; without one, dummy weights of its shape) and on a
# Llama-3-8B-shaped dummy model, then the attention kernels alone (bench_kernels); prints
# the table rows (ROW|model|metric|value|note, then ROW|kernel|shape|metric|value|note).
#   pagedgen-gpu/run-bench.sh [MODEL.gguf]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/gpu-bundle/env.sh
. "$here/env.sh"
samples="$here/share/pagedgen/samples"
model="${1:-${PAGEDGEN_MODEL:-}}"
command -v nvidia-smi >/dev/null 2>&1 &&
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
if [[ -n "$model" ]]; then
  bench_gpu --model "$model" --name smollm2-135m
else
  bench_gpu --dummy "$samples/smollm2-135m.config.json" --name smollm2-135m-dummy
fi
bench_gpu --dummy "$samples/llama-3-8b.config.json" --name llama-3-8b-dummy
bench_kernels
