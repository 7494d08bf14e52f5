#!/usr/bin/env bash
# Writes `pagedgen generate`'s output files and stats over a fixed matrix into DIR, so that a
# refactor can be checked against the tree before it: outputs byte-identical, stats identical
# except their time_seconds and throughput objects (removed here), that is
#
#   scripts/output-matrix.sh /tmp/before --pagedgen /tmp/old-tree/build/app/pagedgen
#   scripts/output-matrix.sh /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
#
# The matrix: samples/*.jsonl at block sizes 1, 16 and 64, prefix sharing on and off, both
# --cpu-math paths (samples/shared_prefix.jsonl with its max_tokens set to 8 at block size 1
# and with sharing off, where it computes every prompt token); and the tiny model of every architecture
# in tests/data/arch-reference on samples/prompts.jsonl, the same block sizes and sharing, the
# fast path. Tens of minutes on 2 cores (mostly the exact path without sharing). Needs the
# default model (scripts/fetch-model.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=""
bin=build/app/pagedgen
while [ $# -gt 0 ]; do
  case "$1" in
    --pagedgen) bin="${2:?--pagedgen needs a path}"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "output-matrix: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) if [ -n "$dir" ]; then echo "output-matrix: one DIR only (see --help)" >&2; exit 2; fi; dir=$1; shift ;;
  esac
done
if [ -z "$dir" ]; then echo "output-matrix: give the output DIR (see --help)" >&2; exit 2; fi
if [ ! -x "$bin" ]; then echo "output-matrix: $bin not found; build first (scripts/build.sh) or pass --pagedgen" >&2; exit 2; fi
mkdir -p "$dir"
# shared_prefix.jsonl's lines name their max_tokens (so --max-tokens would not apply): a copy
# with 8 instead.
short_shared_prefix="$dir/shared_prefix.max-tokens-8.input"
sed -E 's/"max_tokens": *[0-9]+/"max_tokens": 8/' samples/shared_prefix.jsonl >"$short_shared_prefix"

# run NAME ARGS...: one generate run, its output as NAME.jsonl and its stats, timings
# removed, as NAME.stats.json. A run that exits non-zero keeps what it wrote (its exit
# status is compared too, in NAME.exit) and is listed at the end.
failed_runs=()
run() {
  local name=$1 status=0
  shift
  echo "== $name"
  "$bin" generate -q "$@" -o "$dir/$name.jsonl" --stats "$dir/$name.stats.raw.json" 2>"$dir/$name.stderr" || status=$?
  echo "$status" >"$dir/$name.exit"
  if [ "$status" -ne 0 ]; then failed_runs+=("$name (exit $status)"); fi
  if [ -f "$dir/$name.stats.raw.json" ]; then
    python3 - "$dir/$name.stats.raw.json" "$dir/$name.stats.json" <<'EOF'
import json, sys
stats = json.load(open(sys.argv[1]))
for key in ("time_seconds", "throughput"):
    stats.pop(key, None)
json.dump(stats, open(sys.argv[2], "w"), indent=1, sort_keys=True)
EOF
    rm -f "$dir/$name.stats.raw.json"
  fi
}

for input in samples/*.jsonl; do
  sample=$(basename "$input" .jsonl)
  for math in fast exact; do
    for block_size in 1 16 64; do
      for sharing in on off; do
        file=$input
        if [ "$sample" = shared_prefix ] && { [ "$block_size" = 1 ] || [ "$sharing" = off ]; }; then
          file=$short_shared_prefix
        fi
        flags=(--device cpu --cpu-math "$math" -i "$file" --block-size "$block_size")
        if [ "$sharing" = off ]; then flags+=(--no-prefix-sharing); fi
        run "$sample.$math.bs$block_size.sharing-$sharing" "${flags[@]}"
      done
    done
  done
done
for model in tests/data/arch-reference/*/model.gguf; do
  arch=$(basename "$(dirname "$model")")
  for block_size in 1 16 64; do
    for sharing in on off; do
      flags=(--device cpu -m "$model" -i samples/prompts.jsonl --block-size "$block_size")
      if [ "$sharing" = off ]; then flags+=(--no-prefix-sharing); fi
      run "arch-$arch.bs$block_size.sharing-$sharing" "${flags[@]}"
    done
  done
done
echo "output-matrix: $(find "$dir" -name '*.jsonl' | wc -l) output files in $dir"
if [ ${#failed_runs[@]} -gt 0 ]; then
  echo "output-matrix: ${#failed_runs[@]} runs exited non-zero: ${failed_runs[*]}" >&2
  exit 1
fi
