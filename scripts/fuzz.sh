#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (in the sanitizer tree, build-fuzz: scripts/sanitizer-tree.sh),
# and runs each on its seed corpus tests/fuzz/corpus/<target> for a number of executions, a
# time, or both (whichever ends first), one target at a time or --jobs N of them side by side
# (one process each):
#
#   scripts/fuzz.sh --runs 3000 --time 20 --jobs 2   # every target, 3000 inputs or 20 s each (CI)
#   scripts/fuzz.sh --time 600 fuzz_gguf             # one target for 10 minutes
#   scripts/fuzz.sh --runs 10000000 fuzz_request_parser -- -max_len=65536   # extra libFuzzer flags
#
# Inputs that find new coverage go to build-fuzz/corpus/<target> (kept between runs, never
# into the tree); a crash, leak or timeout leaves its input in build-fuzz/findings/, and the
# other targets still run. Closes with `fuzz: N passed, N failed` (a target passes when its
# run ends without a finding) and exits 1 when one failed. Reproduce a finding with
#   build-fuzz/tests/fuzz/<target> build-fuzz/findings/<file>
set -euo pipefail
cd "$(dirname "$0")/.."

# The slowest first (3000 inputs alone on a 2-core machine, unoptimised: guided 88 s,
# json_schema 50 s and request_parser 37 s, all three compiling grammars; chat_template 20 s,
# tokenizer_roundtrip 11 s, gguf 4 s, the rest 0-3 s), so that --jobs 2 ends both lanes close
# together.
readonly all_targets=(fuzz_guided fuzz_json_schema fuzz_request_parser fuzz_chat_template fuzz_tokenizer_roundtrip
                      fuzz_gguf fuzz_hf_tokenizer fuzz_safetensors fuzz_hf_config)
runs=""
seconds=""
jobs=1
targets=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:?--runs needs a count}"; shift 2 ;;
    --time) seconds="${2:?--time needs seconds}"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    --jobs) jobs="${2:?--jobs needs a count}"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    fuzz_*) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$runs" ] && [ -z "$seconds" ]; then
  echo "fuzz.sh: give --runs N or --time SECONDS (see --help)" >&2
  exit 2
fi
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then echo "fuzz.sh: --jobs takes a count of 1 or more, not '$jobs'" >&2; exit 2; fi
if [ ${#targets[@]} -eq 0 ]; then targets=("${all_targets[@]}"); fi
for t in "${targets[@]}"; do
  if [ ! -d "tests/fuzz/corpus/$t" ]; then echo "fuzz.sh: no target '$t' (no tests/fuzz/corpus/$t)" >&2; exit 2; fi
done
# shellcheck source=scripts/sanitizer-tree.sh
. scripts/sanitizer-tree.sh
configure_sanitizer_tree
build=$sanitizer_tree
ninja -C "$build" -j"${PAGEDGEN_BUILD_JOBS:-2}" "${targets[@]}"

mkdir -p "$build/findings"
limit=()
if [ -n "$runs" ]; then limit+=("-runs=$runs"); fi
if [ -n "$seconds" ]; then limit+=("-max_total_time=$seconds"); fi
# target_limits T: T's per-input limits (libFuzzer flags; the extra flags after -- come later
# and win). The targets that compile JSON schemas get their own: a schema that takes a
# minute or 2 GiB to compile would stall or end a real run, so such an input is a finding
# (the slowest seed takes 3 s of CPU here; the timeout is wall time, so a run starved of
# CPU, under nice 19 on a busy machine, needs a larger one: -- -timeout=300). Slow inputs
# are mutated less (entropic_scale_per_exec_time), and max_len fits the largest seed (a
# 5,000-link $ref chain, a line of 10,000 keys).
target_limits() {
  case "$1" in
    fuzz_json_schema | fuzz_request_parser | fuzz_guided)
      echo "-timeout=60 -rss_limit_mb=2048 -max_len=200000 -entropic_scale_per_exec_time=1" ;;
    *) echo "-timeout=30 -rss_limit_mb=2560" ;;
  esac
}

# run_target T: runs one target; prints its line (the log's tail too, on a finding) and
# returns 1 on a finding.
run_target() {
  local t=$1 start dict=() limits
  start=$(date +%s)
  read -ra limits <<<"$(target_limits "$t")"
  mkdir -p "$build/corpus/$t"
  if [ -f "tests/fuzz/$t.dict" ]; then dict=("-dict=tests/fuzz/$t.dict"); fi
  # One process per target (no -jobs: the machine is shared); new inputs go to the first
  # directory.
  if "$build/tests/fuzz/$t" "${limit[@]}" "${limits[@]}" -print_final_stats=1 \
    -artifact_prefix="$build/findings/$t-" "${dict[@]}" "${extra[@]}" \
    "$build/corpus/$t" "tests/fuzz/corpus/$t" 2>"$build/$t.log"; then
    echo "== $t ${limit[*]}: $(grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec|^stat::peak_rss_mb' \
      "$build/$t.log" | tr '\n' ' ')($(( $(date +%s) - start )) s)"
  else
    echo "== $t ${limit[*]}: found a problem; its input is in $build/findings/ (full log: $build/$t.log)"
    tail -n 40 "$build/$t.log"
    return 1
  fi
}

# Up to $jobs targets at a time; each one's lines are printed when it ends.
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  rm -f "$build/$t.rc"
  {
    if run_target "$t" >"$build/$t.summary" 2>&1; then echo 0 >"$build/$t.rc"; else echo 1 >"$build/$t.rc"; fi
    cat "$build/$t.summary"
  } &
done
wait
passed=0
failed=()
for t in "${targets[@]}"; do
  if [ "$(cat "$build/$t.rc" 2>/dev/null)" = 0 ]; then passed=$((passed + 1)); else failed+=("$t"); fi
done
echo "fuzz: $passed passed, ${#failed[@]} failed${failed[*]:+ (${failed[*]})}"
[ ${#failed[@]} -eq 0 ]
