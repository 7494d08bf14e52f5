#!/usr/bin/env bash
# Configures and builds pagedgen in build/ (Release, in unity batches: CMakeLists.txt).
# Arguments starting with -D go to cmake (e.g. -DPAGEDGEN_CUDA=OFF); any other argument
# names a target to build instead of everything (e.g. pagedgen: just the binary,
# build/app/pagedgen).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake_args=()
targets=()
for arg in "$@"; do
  if [[ "$arg" == -D* ]]; then cmake_args+=("$arg"); else targets+=("$arg"); fi
done
cmake -S . -B build -G Ninja "${cmake_args[@]}" >/dev/null
ninja -C build "${targets[@]}"
