#!/usr/bin/env bash
# The main job on the default model: installs dependencies, fetches the model, builds,
# shows what the model is, and completes a prompt on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/fetch-model.sh
scripts/build.sh
build/app/pagedgen inspect
build/app/pagedgen complete --max-tokens 24 "The capital of France is"
build/app/pagedgen complete --chat --max-tokens 64 "Name three uses of a paged KV cache."
