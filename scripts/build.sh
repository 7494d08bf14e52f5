#!/usr/bin/env bash
# Configures and builds pagedgen in build/ (Release with debug info). Extra arguments go
# to cmake, e.g. scripts/build.sh -DPAGEDGEN_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja "$@" >/dev/null
ninja -C build
