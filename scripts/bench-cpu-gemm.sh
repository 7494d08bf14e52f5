#!/usr/bin/env bash
# Benchmark (not a test): the CPU backend's batch-invariant GEMM against OpenBLAS on the
# SmolLM2-135M shapes. Usage: scripts/bench-cpu-gemm.sh [BUILD_DIR] [THREADS] [SECONDS]
# BUILD_DIR (default build) must hold a built pagedgen_core; the bench is compiled here.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
threads="${2:-2}"
seconds="${3:-0.5}"
lib="$build_dir/core/libpagedgen_core.a"
if [[ ! -f "$lib" ]]; then
  echo "bench-cpu-gemm: $lib not found; build first (e.g. ninja -C $build_dir pagedgen_core)" >&2
  exit 1
fi
cblas_dir="$(dirname "$(find /usr/include -name cblas.h -path '*openblas*' | head -n1)")"
out="$build_dir/bench_cpu_gemm"
g++ -std=c++20 -O2 -march=native -Icore -I"$cblas_dir" scripts/bench_cpu_gemm.cpp "$lib" \
  -lopenblas -lfmt -pthread -o "$out"
"$out" "$threads" "$seconds"
