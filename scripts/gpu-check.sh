#!/usr/bin/env bash
# The one-call GPU check on a machine with an NVIDIA GPU, the CUDA toolkit and the build
# dependencies (scripts/install-deps.sh), no network needed: builds for this GPU
# (build-gpu-check), writes the check's data from the default model
# (scripts/make-gpu-check-data.sh), lays the build out as the GPU bundle is laid out
# (build-gpu-check/check-root: links to the binaries and the sources' data) and runs the
# bundle's own check on it, scripts/gpu-bundle/check.sh (README.md, "The relocatable GPU
# bundle", says what it runs). GPU nodes without build packages run the bundle instead.
#   scripts/gpu-check.sh [CHECK OPTIONS]       e.g. --budget 900 --out /tmp/check
# The options go to check.sh; --out defaults to build-gpu-check/check. The default model is
# $PAGEDGEN_MODEL, else where pagedgen looks for it (scripts/fetch-model.sh); without it,
# the check's steps that need its vocabulary are skipped, saying so. Exit status: check.sh's
# (0 passed, 1 failed, 3 steps skipped for the budget), 2 when the build does not configure.
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir="$(pwd)"
build="build-gpu-check"
root="$source_dir/$build/check-root"
start=$SECONDS

echo "== configure and build for this GPU ($build, native architecture)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 2; }
grep -q "building the CUDA backend" "$build.configure.log" ||
  { echo "gpu-check: CMake did not find the CUDA toolkit" >&2; cat "$build.configure.log"; exit 2; }
gpu_tests=()
for source in tests/test_gpu_*.cpp; do gpu_tests+=("$(basename "$source" .cpp)"); done
ninja -C "$build" -j"$(nproc)" pagedgen bench_gpu bench_kernels bench_load "${gpu_tests[@]}"
echo "   built in $((SECONDS - start)) s"

echo "== lay out $root"
rm -rf "$root"
mkdir -p "$root/bin" "$root/tests" "$root/share/pagedgen/scripts"
for binary in app/pagedgen app/bench_load gpu/bench_gpu gpu/bench_kernels; do
  ln -s "$source_dir/$build/$binary" "$root/bin/"
done
for test in "${gpu_tests[@]}"; do ln -s "$source_dir/$build/tests/$test" "$root/tests/"; done
ln -s "$source_dir/samples" "$root/share/pagedgen/samples"
ln -s "$source_dir/scripts/make-load-model.py" "$root/share/pagedgen/scripts/"
scripts/make-gpu-check-data.sh "$build/app/pagedgen" "$root/share/pagedgen/gpu-check" ||
  echo "gpu-check: no check data; the float32 comparison and the 8B workload will be skipped" >&2

scripts/gpu-bundle/check.sh --root "$root" --out "$build/check" "$@"
