#!/usr/bin/env bash
# Benchmark (not a test): the CPU backend's matrix products on the SmolLM2-135M shapes:
# the exact path's batch-invariant GEMM against OpenBLAS, then the fast path's quant_gemm on
# every instruction set this CPU has against the exact GEMM (scripts/bench_cpu_gemm.cpp).
# Usage: scripts/bench-cpu-gemm.sh [BUILD_DIR] [THREADS] [SECONDS]
# Builds the bench_cpu_gemm target in BUILD_DIR (default build, configured by scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-contention.sh
. scripts/bench-contention.sh
run_begin=$(contention_sample)
build_dir="${1:-build}"
threads="${2:-2}"
seconds="${3:-0.5}"
if [[ ! -f "$build_dir/build.ninja" ]]; then
  echo "bench-cpu-gemm: $build_dir is not configured; run scripts/build.sh first" >&2
  exit 1
fi
ninja -C "$build_dir" bench_cpu_gemm >/dev/null
"$build_dir/app/bench_cpu_gemm" "$threads" "$seconds"
contention_report "the benchmark" "$run_begin"
