#!/usr/bin/env bash
# The test command: installs dependencies, fetches the default model, builds, and runs
# every CPU test. Then rebuilds the model-file tests with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs them on corrupt files, and runs each fuzz target for
# 3000 inputs (scripts/fuzz.sh). GPU tests (label gpu) skip themselves where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/fetch-model.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j2

echo "== model-file tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -G Ninja -DPAGEDGEN_SANITIZE=ON -DPAGEDGEN_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
ninja -C build-asan pagedgen test_gguf test_safetensors test_e2e_bad_model_files
ctest --test-dir build-asan --output-on-failure -R 'test_gguf|test_safetensors|test_e2e_bad_model_files'

echo "== fuzz targets: a short fixed run of each on its seed corpus (clang, ASan + UBSan, libFuzzer)"
scripts/fuzz.sh --runs 3000
