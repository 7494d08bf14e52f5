#!/usr/bin/env bash
# The test command: installs dependencies, fetches the default model, builds, and runs every
# CPU test (ctest: labels unit and e2e; gpu tests skip themselves where there is no GPU).
# Then builds the sanitizer tree (clang, AddressSanitizer + UndefinedBehaviorSanitizer:
# scripts/sanitizer-tree.sh), runs the model-file tests there on corrupt files, and runs each
# fuzz target for 3000 inputs or 20 seconds, whichever ends first (scripts/fuzz.sh).
#
#   scripts/test.sh           everything (what CI runs, .ci/run)
#   scripts/test.sh --quick   the unit tests only, after an incremental build of them
#
# Every stage runs even when an earlier test stage failed (a failed build or install stops
# what needs it), each stage's time is printed, and the last line counts ctest's tests, the
# sanitized tests and the fuzz targets: `summary: N passed, N failed`. Exit 0 when all passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

quick=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

passed=0
failed=0
failures=()
stage_times=()
start=$SECONDS

# stage NAME: prints the stage's header and remembers when it began.
stage_start=$SECONDS
stage() {
  stage_start=$SECONDS
  echo "== $1"
}
# stage_done NAME: records the stage's time.
stage_done() {
  stage_times+=("$1 $((SECONDS - stage_start)) s")
  echo "   ($1: $((SECONDS - stage_start)) s)"
}

# fail WHAT: counts one failure that is not a test's (a build, an install).
fail() {
  failed=$((failed + 1))
  failures+=("$1")
}

# summarize: prints the stage times and the closing line, and exits.
summarize() {
  local times
  times=$(printf '%s, ' "${stage_times[@]}")
  echo
  echo "== stages (total $((SECONDS - start)) s): ${times%, }"
  if [ ${#failures[@]} -gt 0 ]; then echo "failed: ${failures[*]}"; fi
  echo "summary: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

# count_ctest LOG NAME: adds a ctest run's counts ("N% tests passed, F tests failed out of T").
count_ctest() {
  local line total bad
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -n 1)
  if [ -z "$line" ]; then
    fail "$2 (ctest printed no result)"
    return
  fi
  bad=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  passed=$((passed + total - bad))
  failed=$((failed + bad))
  if [ "$bad" -gt 0 ]; then failures+=("$2 ($bad)"); fi
}

# run_ctest NAME ARGS...: runs ctest with ARGS, its output shown and kept, and counts it.
run_ctest() {
  local name=$1 log
  shift
  log=$(mktemp)
  ctest --output-on-failure "$@" 2>&1 | tee "$log"
  count_ctest "$log" "$name"
  rm -f "$log"
}

stage "dependencies and the default model"
if ! scripts/install-deps.sh || ! scripts/fetch-model.sh; then
  fail "install"
  stage_done install
  summarize
fi
stage_done install

if $quick; then
  stage "build the unit tests (build/, incremental)"
  if ! scripts/build.sh pagedgen_unit_tests pagedgen_model_file_tests; then
    fail "build"
    stage_done build
    summarize
  fi
  stage_done build
  stage "unit tests"
  run_ctest "unit tests" --test-dir build -L unit -j2
  stage_done unit
  echo "left out by --quick: the e2e and gpu labels, the sanitized model-file tests and the fuzz targets"
  summarize
fi

# The sanitizer tree builds beside the main build and ctest, at the lowest priority: it takes
# only the CPU time they leave (ctest's tests wait on processes and sleeps, and some run one
# thread), so most of its compiling is done by the time ctest ends. Its log is printed after.
# shellcheck source=scripts/sanitizer-tree.sh
. scripts/sanitizer-tree.sh
sanitizer_log=$(mktemp)
(configure_sanitizer_tree && nice -n 19 ninja -C "$sanitizer_tree" pagedgen pagedgen_model_file_tests fuzz_targets) \
  >"$sanitizer_log" 2>&1 &
sanitizer_build=$!

stage "build (build/; the sanitizer tree builds beside it at low priority)"
if ! scripts/build.sh; then
  fail "build"
  stage_done build
  wait "$sanitizer_build"
  rm -f "$sanitizer_log"
  summarize
fi
stage_done build

stage "tests (ctest: unit, e2e; gpu skips without a GPU)"
run_ctest "ctest" --test-dir build -j2
# ctest prints a test's output only when it fails: the Slurm recipe's requeue and comparison
# (tests/CMakeLists.txt slurm_recipe) are worth seeing on every run.
grep -hE '^(test-slurm: (requeued|merge job|slurm counts|the resumed|comparison|ok|FAILED)|SKIP: the Slurm)' \
  build/Testing/Temporary/LastTest.log || echo "   (slurm_recipe printed nothing: not run)"
stage_done ctest

stage "sanitizer tree (clang, ASan + UBSan): the rest of its build, then model-file tests on corrupt files"
# The fuzz targets are built in the same ninja run, so that both cores stay busy.
wait "$sanitizer_build"
sanitizer_status=$?
if [ "$sanitizer_status" -eq 0 ]; then tail -n 2 "$sanitizer_log"; else cat "$sanitizer_log"; fi
rm -f "$sanitizer_log"
if [ "$sanitizer_status" -eq 0 ]; then
  stage_done "sanitizer build (after ctest)"
  stage "model-file tests under ASan + UBSan"
  run_ctest "sanitized tests" --test-dir "$sanitizer_tree" -R 'test_gguf|test_safetensors|test_e2e_bad_model_files'
  stage_done "sanitized tests"
  stage "fuzz targets: a short fixed run of each on its seed corpus (libFuzzer)"
  fuzz_log=$(mktemp)
  scripts/fuzz.sh --runs 3000 --time 20 --jobs 2 2>&1 | tee "$fuzz_log"
  fuzz_line=$(grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' "$fuzz_log" | tail -n 1)
  rm -f "$fuzz_log"
  if [ -n "$fuzz_line" ]; then
    passed=$((passed + $(sed -E 's/^fuzz: ([0-9]+) passed.*/\1/' <<<"$fuzz_line")))
    fuzz_failed=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$fuzz_line")
    failed=$((failed + fuzz_failed))
    if [ "$fuzz_failed" -gt 0 ]; then failures+=("fuzz ($fuzz_failed)"); fi
  else
    fail "fuzz (fuzz.sh printed no result)"
  fi
  stage_done fuzz
else
  fail "sanitizer build"
  stage_done "sanitizer build"
fi
summarize
