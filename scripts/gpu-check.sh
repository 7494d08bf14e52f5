#!/usr/bin/env bash
# The one-call GPU check, for a machine with an NVIDIA GPU, the CUDA toolkit and the
# build dependencies (scripts/install-deps.sh) but no network and no build outputs:
# configures and builds for this GPU only, runs the gpu-labelled tests, then benchmarks
# the CUDA backend (scripts/bench_gpu.cpp) and its attention kernels (scripts/bench_kernels.cpp)
# and prints two tables.
#   scripts/gpu-check.sh [MODEL.gguf]
# MODEL (or $PAGEDGEN_MODEL) is the default model, SmolLM2-135M-Instruct; without one the
# GPU tests that need it skip and the benchmark uses dummy weights of its shape
# (samples/smollm2-135m.config.json). The 8B benchmark always uses dummy weights
# (samples/llama-3-8b.config.json). Then the load benchmark (scripts/bench-load.sh) on a
# Llama-3.2-1B-shaped bf16 file, CPU and GPU. Nothing is downloaded. About 6 minutes on an H200.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
model="${1:-${PAGEDGEN_MODEL:-}}"
if [[ -n "$model" ]]; then
  [[ -f "$model" ]] || { echo "gpu-check: model file '$model' not found" >&2; exit 2; }
  model="$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"
  export PAGEDGEN_MODEL="$model"
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
build=build-gpu-check
jobs="$(nproc)"

echo "== configure and build for this GPU ($build, native architecture)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
grep -q "building the CUDA backend" "$build.configure.log" ||
  { echo "gpu-check: CMake did not find the CUDA toolkit" >&2; cat "$build.configure.log"; exit 1; }
gpu_tests=()
for source in tests/test_gpu_*.cpp; do gpu_tests+=("$(basename "$source" .cpp)"); done
ninja -C "$build" -j"$jobs" pagedgen bench_gpu bench_kernels bench_load "${gpu_tests[@]}"
echo "   built in $((SECONDS - start)) s"

echo "== gpu tests"
ctest --test-dir "$build" -L gpu --output-on-failure
echo "   tests done at $((SECONDS - start)) s"

echo "== benchmark"
rows="$build/gpu-check.rows"
: >"$rows"
if [[ -n "$model" ]]; then
  "$build/gpu/bench_gpu" --model "$model" --name smollm2-135m | tee -a "$rows"
else
  "$build/gpu/bench_gpu" --dummy samples/smollm2-135m.config.json --name smollm2-135m-dummy | tee -a "$rows"
fi
"$build/gpu/bench_gpu" --dummy samples/llama-3-8b.config.json --name llama-3-8b-dummy | tee -a "$rows"
kernel_rows="$build/gpu-check.kernel-rows"
"$build/gpu/bench_kernels" | tee "$kernel_rows"

echo
echo "== gpu-check: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1), bfloat16, $((SECONDS - start)) s"
{
  echo "model|metric|value|note"
  grep '^ROW|' "$rows" | cut -d'|' -f2-
} | column -t -s'|'
echo
{
  echo "kernel|shape|metric|value|note"
  grep '^ROW|' "$kernel_rows" | cut -d'|' -f2-
} | column -t -s'|'

echo
echo "== load benchmark"
scripts/bench-load.sh --shape 1b --build "$build" --build-cuda "$build"
