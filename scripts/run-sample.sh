#!/usr/bin/env bash
# The main job on the default model: installs dependencies, fetches the model, builds,
# then runs `pagedgen generate` on the samples (plain prompts, chat, and the shared-prefix
# workload with its KV stats). Outputs go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/fetch-model.sh
scripts/build.sh pagedgen  # the binary only; scripts/test.sh builds the tests
mkdir -p out
for name in prompts chat shared_prefix; do
  echo "== samples/$name.jsonl -> out/$name.jsonl (stats: out/$name.stats.json)"
  build/app/pagedgen generate -i "samples/$name.jsonl" -o "out/$name.jsonl" --stats "out/$name.stats.json"
  head -n 3 "out/$name.jsonl"
done
