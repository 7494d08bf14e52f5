#!/usr/bin/env bash
# Tests the GPU check (scripts/gpu-bundle/check.sh) without a GPU, on test doubles: a
# bundle layout whose tests/ holds small shell scripts named like the gpu tests (one fails,
# one hangs ignoring TERM, one takes 2 s, one is not in the check's list) and a PATH whose
# nvidia-smi finds no GPU. Checks that the check runs every test in its order, goes on past
# the failure and the hang (and leaves no process behind), keeps to its budget, skipping
# what no longer fits and saying so, writes one log and the summary in the directory it is
# given, and exits with the status each case calls for. Then, with doubles of nvidia-smi,
# ncu, compute-sanitizer, pagedgen and the benchmarks, that the steps after the tests run in
# order and that their comparisons catch a file and a stats figure that differ. About 30 s.
#   scripts/test-gpu-check.sh        exit status 0 when all hold, 1 when one does not
set -uo pipefail
check="$(cd "$(dirname "$0")" && pwd)/gpu-bundle/check.sh"
dir="$(mktemp -d "${TMPDIR:-/tmp}/pagedgen-test-gpu-check.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
failures=0

expect() {  # expect DESCRIPTION COMMAND...: runs COMMAND, reports ok or FAILED
  if "${@:2}"; then
    echo "ok: $1"
  else
    echo "FAILED: $1"
    failures=$((failures + 1))
  fi
}

# The check's own order, then the one it finds by name.
ordered=(test_gpu_gemm test_gpu_weight_kernels test_gpu_llama_kernels test_gpu_tensor_attention
         test_gpu_paged_attention test_gpu_sampler test_gpu_backend test_gpu_architectures
         test_gpu_structured_outputs test_gpu_commands test_gpu_zz_found_by_name)
passing='echo "[doctest] test cases: 3 | 3 passed | 0 failed | 0 skipped"'

double() {  # double ROOT NAME BODY: an executable tests/NAME that says it ran, then BODY
  mkdir -p "$1/tests"
  printf '#!/bin/sh\necho "double %s ran"\n%s\n' "$2" "$3" >"$1/tests/$2"
  chmod +x "$1/tests/$2"
}

mixed="$dir/mixed"
for name in "${ordered[@]}"; do double "$mixed" "$name" "$passing"; done
double "$mixed" test_gpu_weight_kernels 'echo "[doctest] test cases: 2 | 1 passed | 1 failed | 0 skipped"; exit 1'
double "$mixed" test_gpu_llama_kernels "echo \$\$ >'$dir/hung.pid'; trap '' TERM; sleep 600"
double "$mixed" test_gpu_sampler "sleep 2; $passing"
double "$mixed" test_gpu_backend "echo 'MESSAGE: skipped: no GPU'; $passing"
passing_only="$dir/passing"
for name in "${ordered[@]}"; do double "$passing_only" "$name" "$passing"; done

mkdir -p "$dir/path"
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' >"$dir/path/nvidia-smi"
chmod +x "$dir/path/nvidia-smi"

run_check() {  # run_check NAME ARGS...: sets status and seconds; the output is in $dir/NAME
  local began=$SECONDS
  PATH="${doubles_path:-$dir/path}:$PATH" "$check" --out "$dir/$1" "${@:2}" >"$dir/$1.stdout" 2>&1
  status=$?
  seconds=$((SECONDS - began))
}

result_of() {  # result_of OUT TEST: the result column of TEST's row in OUT's summary
  awk -v name="$2" '$1 == name {sub(/^[^ ]+ +/, ""); sub(/ +[0-9]+ .*$/, ""); print}' "$dir/$1/summary.txt"
}

tests_in_log_order() {  # the tests' names in the order the log says they started
  grep -o '^== \[[0-9]* s\] limit [0-9]* s: .*/tests/test_gpu_[a-z_]*' "$dir/$1/check.log" | sed 's|.*/tests/||'
}

echo "== a failure, a hang, a test found by name; budget enough (60 s, 3 s per test)"
run_check ample --budget 60 --test-limit 3 --root "$mixed"
expect "exit status 1 (a test failed, one timed out), was $status" test "$status" -eq 1
expect "the out directory holds check.log and summary.txt only" \
  test "$(cd "$dir/ample" && echo *)" = "check.log summary.txt"
expect "every test ran, in the check's order" test "$(tests_in_log_order ample | tr '\n' ' ')" = "${ordered[*]} "
expect "each double's output is in the one log" \
  test "$(grep -c '^double test_gpu_[a-z_]* ran$' "$dir/ample/check.log")" -eq "${#ordered[@]}"
expect "test_gpu_weight_kernels FAILED" test "$(result_of ample test_gpu_weight_kernels)" = FAILED
expect "test_gpu_llama_kernels TIMED OUT" test "$(result_of ample test_gpu_llama_kernels)" = "TIMED OUT"
expect "the hung test's process is gone" bash -c "! kill -0 \"\$(cat '$dir/hung.pid')\" 2>/dev/null"
expect "test_gpu_zz_found_by_name passed" test "$(result_of ample test_gpu_zz_found_by_name)" = passed
expect "test_gpu_backend's note counts its skipped case" grep -q '^test_gpu_backend .*; 1 cases skipped$' \
  "$dir/ample/summary.txt"
expect "the steps after the tests are skipped for want of a GPU" \
  test "$(grep -c ' skipped  *0  no GPU$' "$dir/ample/summary.txt")" -ge 8
expect "the final line counts 9 passed, 1 failed, 1 timed out, 0 skipped for the budget" \
  grep -q '^check: 9 passed, 1 failed, 1 timed out, 0 skipped for the budget, ' "$dir/ample/summary.txt"
expect "the summary is printed and ends the log" \
  bash -c "tail -n 1 '$dir/ample.stdout' | grep -q '^check: ' && tail -n 1 '$dir/ample/check.log' | grep -q '^check: '"

echo "== the same with a budget of 12 s"
run_check tight --budget 12 --test-limit 3 --root "$mixed"
expect "exit status 1, was $status" test "$status" -eq 1
expect "the check kept to its budget and the 5 s KILL grace (took $seconds s)" test "$seconds" -le 18
expect "test_gpu_llama_kernels TIMED OUT" test "$(result_of tight test_gpu_llama_kernels)" = "TIMED OUT"
expect "the last test was skipped for the budget, saying what it needed" \
  grep -q '^test_gpu_zz_found_by_name  *skipped (budget)  *0  needs 3 s, [0-9-]* s left$' "$dir/tight/summary.txt"
expect "once one test is skipped for the budget, so are all after it" \
  bash -c "awk '/^test_gpu_/ {print (\$0 ~ /skipped \\(budget\\)/)}' '$dir/tight/summary.txt' | uniq | tr -d '\n' |
           grep -qx '01'"

echo "== all passing"
run_check passing --budget 60 --test-limit 3 --root "$passing_only"
expect "exit status 0, was $status" test "$status" -eq 0
run_check no_time --budget 2 --test-limit 3 --root "$passing_only"
expect "exit status 3 when tests are only skipped for the budget, was $status" test "$status" -eq 3
"$check" --root "$passing_only" >"$dir/no_out.stdout" 2>&1
status=$?
expect "exit status 2 without --out, was $status" test "$status" -eq 2

echo "== with a GPU: doubles of nvidia-smi, ncu, compute-sanitizer, pagedgen and the benchmarks"
gpu="$dir/gpu"
for name in "${ordered[@]}"; do double "$gpu" "$name" "$passing"; done
mkdir -p "$gpu/bin" "$gpu/share/pagedgen/samples" "$gpu/share/pagedgen/gpu-check/cpu" \
  "$gpu/share/pagedgen/scripts" "$dir/gpu-path"
executable() {  # executable PATH TEXT
  printf '%s\n' "$2" >"$1"
  chmod +x "$1"
}
for file in samples/a.jsonl samples/b.jsonl samples/llama-3-8b.config.json samples/smollm2-135m.config.json \
  gpu-check/smollm2-135m.vocab.gguf gpu-check/workload-8b.jsonl; do
  echo '{}' >"$gpu/share/pagedgen/$file"
done
echo '{"text": "the CPU'"'"'s"}' >"$gpu/share/pagedgen/gpu-check/cpu/a.jsonl"
echo '{"text": "the CPU'"'"'s"}' >"$gpu/share/pagedgen/gpu-check/cpu/b.jsonl"
# generate: a.jsonl as the CPU wrote it, b.jsonl not; the 8B workload's counted stats
# change with --no-overlap only without sharing.
# shellcheck disable=SC2016 # the text is the double's own shell code
executable "$gpu/bin/pagedgen" '#!/bin/sh
sharing=yes plain=no
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
    --stats) stats="$2"; shift ;;
    -i) input="$2"; shift ;;
    --no-prefix-sharing) sharing=no ;;
    --no-overlap) plain=yes ;;
  esac
  shift
done
case "$input" in
  */a.jsonl) cp "$(dirname "$0")/../share/pagedgen/gpu-check/cpu/a.jsonl" "$out" ;;
  */b.jsonl) echo "{\"text\": \"the GPU s\"}" >"$out" ;;
  *) echo "{\"text\": \"workload\"}" >"$out"
     preemptions=0
     [ "$sharing$plain" = noyes ] && preemptions=1
     printf "{\n  \"preemption\": {\"preemptions\": %s},\n  \"time_seconds\": {\"generate\": %s},\n" \
       "$preemptions" "$$" >"$stats"
     printf "  \"throughput\": {\"generated_tokens_per_second\": 1234.5}\n}\n" >>"$stats" ;;
esac'
# shellcheck disable=SC2016 # the text is the double's own shell code
executable "$gpu/bin/bench_gpu" '#!/bin/sh
echo "ROW|$4|decode tokens/s at batch 1|100|1.2x the floor"'
executable "$gpu/bin/bench_kernels" '#!/bin/sh
echo "ROW|decode|1k x 64|GB/s|1000|0.5 of copy ($*)"'
executable "$gpu/bin/bench_load" '#!/bin/sh
echo "{\"bench\": \"load\", \"file_bytes\": 2147483648, \"load_s\": 1.500, \"rss_anon_before_bytes\": 104857600, \"peak_rss_anon_bytes\": 314572800, \"peak_rss_file_bytes\": 209715200}"'
executable "$gpu/share/pagedgen/scripts/make-load-model.py" 'import sys
print("writing a", sys.argv[1], "model to", sys.argv[2])'
executable "$dir/gpu-path/nvidia-smi" '#!/bin/sh
echo "GPU 0: a test double"'
executable "$dir/gpu-path/ncu" '#!/bin/sh
echo "    gpu__time_duration.sum    usecond    1.00"'
# shellcheck disable=SC2016 # the text is the double's own shell code
executable "$dir/gpu-path/compute-sanitizer" '#!/bin/sh
for last in "$@"; do :; done
"$last" && echo "========= ERROR SUMMARY: 0 errors"'
doubles_path="$dir/gpu-path" run_check with_gpu --budget 120 --test-limit 3 --root "$gpu"
expect "exit status 1 (b.jsonl and the no-sharing pair differ), was $status" test "$status" -eq 1
# row_is OUT STEP RESULT NOTE: OUT's summary has STEP's row with RESULT and a note holding NOTE.
row_is() {
  grep -F -- "$(printf '%-42s %-16s' "$2" "$3")" "$dir/$1/summary.txt" | grep -q -F -- "$4"
}
expect_row() { expect "$1: $2, $3" row_is with_gpu "$@"; }
expect_row "float32 vs cpu: a.jsonl" passed "identical to the CPU's file (1 lines)"
expect_row "float32 vs cpu: b.jsonl" FAILED "differs from the CPU's file at byte 15, line 1"
expect_row "ncu --clock-control none" passed "usable ($dir/gpu-path/ncu)"
expect_row "8b workload, sharing" passed "1234.5 generated tok/s"
expect_row "8b workload, sharing, no overlap/graphs" passed "output and counted stats identical to sharing's"
expect_row "8b workload, no sharing" passed "1234.5 generated tok/s"
expect_row "8b workload, no sharing, no overlap/graphs" FAILED "counted stats differ from no-sharing's"
expect_row "bench_gpu: llama-3-8b shape" passed "1 rows"
expect_row "bench_gpu: smollm2-135m shape" passed "1 rows"
expect_row "bench_kernels --quick" passed "1 rows"
expect_row "memcheck: test_gpu_backend" passed "ERROR SUMMARY: 0 errors"
expect_row "load: write a bf16 1b model" passed "GB were free"
expect_row "load: bench_load 1b cuda" passed \
  "1.500 s, peak RssAnon 200 MiB above the 100 MiB before, peak RssFile 200 MiB, file 2048 MiB"
expect "the figures table holds the benchmarks' rows" grep -q -E '^decode[ |]+1k x 64[ |]+GB/s[ |]+1000[ |]+0\.5 of copy \(--quick\)$' \
  "$dir/with_gpu/summary.txt"
expect "the final line counts 22 passed, 2 failed" grep -q '^check: 22 passed, 2 failed, 0 timed out, 0 skipped for the budget, 0 skipped' \
  "$dir/with_gpu/summary.txt"

echo "test-gpu-check: $failures failed"
[[ $failures -eq 0 ]]
