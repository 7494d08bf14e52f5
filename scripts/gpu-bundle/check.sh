#!/usr/bin/env bash
# The GPU check in one call: every gpu test in its own process under its own time limit,
# then the float32 comparison with the CPU, the 8B workload and the benchmarks, for as long
# as a time budget lasts; every step's output into one log, and one short summary. It runs
# on the GPU bundle's layout (ROOT/bin, ROOT/tests, ROOT/share/pagedgen: what
# scripts/make-gpu-bundle.sh packs; scripts/gpu-check.sh lays a build tree out the same way).
#
#   check.sh --out DIR [--budget SECONDS] [--test-limit SECONDS] [--model MODEL.gguf]
#            [--root DIR] [--work DIR]
#   --out DIR             writes DIR/check.log (every step's command and full output, in
#                         order) and DIR/summary.txt (also printed, and at the end of the log)
#   --budget SECONDS      the whole check's time (default 540). Each step runs under
#                         `timeout` at its own limit or what is left, whichever is less; a
#                         step is skipped, saying so, when less than its minimum is left
#   --test-limit SECONDS  each test binary's limit (default 120; minimum min(10, it))
#   --model MODEL.gguf    the default model ($PAGEDGEN_MODEL): the tests use its real
#                         weights too, and bench_gpu's default-shape row runs on it
#   --root DIR            the layout to run (default: this script's directory)
#   --work DIR            scratch space for outputs and the load benchmark's model (up to
#                         17 GB; default: a new directory under $TMPDIR, removed at the end)
#
# Steps, in order (limit / minimum in seconds):
#   tests/test_gpu_*: gemm, weight_kernels, llama_kernels, tensor_attention,
#     paged_attention, sampler, backend, architectures, structured_outputs, commands, then
#     every other test_gpu_* in tests/ by name                   (--test-limit each)
#   float32 vs cpu: generate --device cuda --dtype float32 on each samples/*.jsonl (dummy
#     weights of the default model's shape), byte for byte against the CPU's file
#     (share/pagedgen/gpu-check/cpu, made by scripts/make-gpu-check-data.sh)   (120 / 20 each)
#   ncu: is Nsight Compute there, and does --clock-control none time a kernel?  (60 / 15)
#   8b workload (share/pagedgen/gpu-check/workload-8b.jsonl, bfloat16, dummy Llama-3-8B):
#     with sharing; the same with --no-overlap --no-cuda-graphs, its output file and counted
#     stats figures compared with the first; then both without sharing   (150 / 45 each)
#   bench_gpu: the Llama-3-8B shape (150 / 40), then the default model's (90 / 20)
#   bench_kernels (its --quick form when less than 240 s is left)          (240 / 30)
#   compute-sanitizer memcheck of test_gpu_backend                        (300 / 60)
#   load: share/pagedgen/scripts/make-load-model.py writes a bf16 Llama model (the 8B shape
#     when 300 s are left and the disk has room, else the 1B one; 240 / 20) and
#     bench_load --device cuda loads it (180 / 20)
# All but the tests need a GPU (`nvidia-smi -L` lists one) and are skipped without one,
# saying so; the tests' GPU cases then skip themselves.
#
# Exit status: 0 every step that ran passed; 1 a step failed or timed out; 2 bad arguments
# or libraries not found; 3 none failed, but steps were skipped for the budget.
set -uo pipefail
shopt -s nullglob

usage() {  # usage STATUS: the comment block above, without its '#'; exits with STATUS
  awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "${BASH_SOURCE[0]}" >&2
  exit "$1"
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="" work="" budget=540 test_limit=120 model="${PAGEDGEN_MODEL:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out | --budget | --test-limit | --model | --root | --work)
      [[ $# -ge 2 ]] || usage 2
      case "$1" in
        --out) out="$2" ;;
        --budget) budget="$2" ;;
        --test-limit) test_limit="$2" ;;
        --model) model="$2" ;;
        --root) root="$2" ;;
        --work) work="$2" ;;
      esac
      shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "check: unknown argument '$1'" >&2; usage 2 ;;
  esac
done
[[ -n "$out" ]] || { echo "check: --out DIR is required" >&2; usage 2; }
[[ "$budget" =~ ^[0-9]+$ && "$test_limit" =~ ^[1-9][0-9]*$ ]] ||
  { echo "check: --budget and --test-limit take whole seconds" >&2; usage 2; }
[[ -d "$root/tests" ]] || { echo "check: $root has no tests/: not a bundle's layout (see --root)" >&2; exit 2; }
if [[ -n "$model" ]]; then
  [[ -f "$model" ]] || { echo "check: model file '$model' not found" >&2; exit 2; }
  export PAGEDGEN_MODEL="$model"
fi
mkdir -p "$out" || exit 2
log="$out/check.log"
summary="$out/summary.txt"
: >"$log" || exit 2
if [[ -z "$work" ]]; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/pagedgen-check.XXXXXX")" || exit 2
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work" || exit 2

bin="$root/bin"
tests="$root/tests"
share="$root/share/pagedgen"
samples="$share/samples"
data="$share/gpu-check"
vocab="$data/smollm2-135m.vocab.gguf"
start=$SECONDS

if [[ -f "$root/env.sh" ]]; then
  # shellcheck source=scripts/gpu-bundle/env.sh
  . "$root/env.sh"
fi

# ---- records and the summary ------------------------------------------------------------

step_names=() step_results=() step_seconds=() step_notes=()
num_passed=0 num_failed=0 num_timed_out=0 num_budget_skips=0 num_other_skips=0

say() { echo "$*" | tee -a "$log"; }

row() {
  printf '%-42s %-16s %5s  %s\n' "$@"
}

# record NAME RESULT SECONDS NOTE: one summary row (printed now too). RESULT is passed,
# FAILED, TIMED OUT, "skipped (budget)" or skipped (a tool, a GPU or a file is not there).
record() {
  step_names+=("$1") step_results+=("$2") step_seconds+=("$3") step_notes+=("$4")
  case "$2" in
    passed) num_passed=$((num_passed + 1)) ;;
    FAILED) num_failed=$((num_failed + 1)) ;;
    "TIMED OUT") num_timed_out=$((num_timed_out + 1)) ;;
    "skipped (budget)") num_budget_skips=$((num_budget_skips + 1)) ;;
    *) num_other_skips=$((num_other_skips + 1)) ;;
  esac
  say "$(row "$1" "$2" "$3" "$4")"
}

skip() { record "$1" skipped 0 "$2"; }

# finish NAME STATUS NOTE: records a step run_limited ran (or skipped) from its status, or
# FAILED when STATUS is "differs" (it ran, but its output is not what it is compared with).
finish() {
  if ! $ran; then
    record "$1" "skipped (budget)" 0 "needs ${minimum_needed} s, ${left} s left"
    return
  fi
  case "$2" in
    0) record "$1" passed "$took" "$3" ;;
    differs) record "$1" FAILED "$took" "$3" ;;
    124) record "$1" "TIMED OUT" "$took" "at its ${limit_used} s limit${3:+; $3}" ;;
    137) if ((took >= limit_used)); then
           record "$1" "TIMED OUT" "$took" "killed at its ${limit_used} s limit${3:+; $3}"
         else
           record "$1" FAILED "$took" "killed (signal 9)${3:+; $3}"
         fi ;;
    *) record "$1" FAILED "$took" "exit status $2${3:+; $3}" ;;
  esac
}

write_summary() {
  {
    echo "== summary: ${gpu_name:-no GPU}; $(head -n 1 "$root/BUILD-INFO.txt" 2>/dev/null || echo "a build tree")"
    row step result s note
    local i
    for i in "${!step_names[@]}"; do
      row "${step_names[$i]}" "${step_results[$i]}" "${step_seconds[$i]}" "${step_notes[$i]}"
    done
    if grep -q '^ROW|' "$log"; then
      echo "== figures (the benchmarks' ROW lines; the workloads' and the load's are in their notes)"
      grep '^ROW|' "$log" | cut -d '|' -f 2- | { column -t -s '|' 2>/dev/null || cat; }
    fi
    echo "check: $num_passed passed, $num_failed failed, $num_timed_out timed out," \
      "$num_budget_skips skipped for the budget, $num_other_skips skipped (not here);" \
      "$((SECONDS - start)) of $budget s; log $log"
  } >"$summary"
  echo | tee -a "$log"
  tee -a "$log" <"$summary"
}

exit_status() {
  if ((num_failed + num_timed_out > 0)); then return 1; fi
  if ((num_budget_skips > 0)); then return 3; fi
  return 0
}

on_signal() {
  record "check" FAILED 0 "interrupted by a signal"
  write_summary
  exit 1
}
trap on_signal INT TERM

# ---- running a step under its limit -------------------------------------------------------

# run_limited LIMIT MINIMUM COMMAND...: runs COMMAND (stdin /dev/null, output appended to
# the log) under `timeout` at LIMIT or what is left of the budget, whichever is less, and
# returns its status; when less than MINIMUM is left it does not run it (ran=false). Sets
# ran, took, limit_used, left, minimum_needed, and step_from (where its output starts in
# the log).
run_limited() {
  local limit="$1"
  minimum_needed="$2"
  shift 2
  left=$((budget - (SECONDS - start)))
  took=0
  ran=false
  if ((left < minimum_needed)); then return 1; fi
  ran=true
  limit_used=$((limit < left ? limit : left))
  step_from="$(stat -c %s "$log")"
  echo "== [$((SECONDS - start)) s] limit ${limit_used} s: $*" >>"$log"
  local began=$SECONDS status
  # timeout puts the command in its own process group and signals all of it, so a hung
  # test's children go too; KILL follows 5 s after TERM for what ignores TERM (the one
  # way a step can outlast the budget: by those 5 s).
  timeout --kill-after=5 "$limit_used" "$@" </dev/null >>"$log" 2>&1
  status=$?
  took=$((SECONDS - began))
  echo "== exit status $status after $took s" >>"$log"
  return "$status"
}

# The log since the current step began.
step_output() { tail -c +"$((step_from + 1))" "$log"; }

# ---- what is here -------------------------------------------------------------------------

gpu_name=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu_name="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  gpu_name="${gpu_name:-a GPU}"
fi

# A profiler or checker on PATH, else where CUDA toolkits and Nsight Compute install it.
find_tool() {
  local candidate
  if candidate="$(command -v "$1")"; then
    echo "$candidate"
    return 0
  fi
  for candidate in /usr/local/cuda/bin/"$1" /usr/local/cuda/compute-sanitizer/"$1" /opt/nvidia/nsight-compute/*/"$1" \
    /opt/nvidia/nsight-compute/*/host/target-linux-x64/"$1"; do
    [[ -x "$candidate" ]] && { echo "$candidate"; return 0; }
  done
  return 1
}

{
  echo "== pagedgen GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), budget $budget s, test limit $test_limit s"
  echo "root $root; work $work"
  cat "$root/BUILD-INFO.txt" 2>/dev/null
  echo "GPU: ${gpu_name:-none (nvidia-smi -L lists none): the steps after the tests are skipped}"
  echo "python3: $(command -v python3 || echo "not found")"
  for tool in ncu nsys compute-sanitizer; do echo "$tool: $(find_tool "$tool" || echo "not found")"; done
  echo "PAGEDGEN_MODEL: ${PAGEDGEN_MODEL:-unset}; LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-unset}"
} | tee -a "$log"

if command -v ldd >/dev/null 2>&1; then
  missing="$(for binary in "$bin"/* "$tests"/*; do [[ -f "$binary" ]] && ldd "$binary" 2>/dev/null; done |
             awk '/not found/ {print $1}' | sort -u)"
  if [[ -n "$missing" ]]; then
    say "check: libraries not found: ${missing//$'\n'/ }"
    say "check: point PAGEDGEN_CUDA_LIBS at the directory holding libcublas.so.13 (for pip's CUDA 13"
    say "       wheels: .../site-packages/nvidia/cu13/lib) and run again; README.md says more."
    exit 2
  fi
fi

# ---- the tests ----------------------------------------------------------------------------

ordered_tests=(test_gpu_gemm test_gpu_weight_kernels test_gpu_llama_kernels test_gpu_tensor_attention
               test_gpu_paged_attention test_gpu_sampler test_gpu_backend test_gpu_architectures
               test_gpu_structured_outputs test_gpu_commands)

# The doctest totals, and how many cases skipped (each says "skipped: why" in the log).
test_note() {
  local output totals num_skipped
  output="$(step_output)"
  totals="$(grep '^\[doctest\] test cases:' <<<"$output" | tail -n 1 | sed 's/^\[doctest\] test cases: *//' | tr -s ' ')"
  num_skipped="$(grep -c 'MESSAGE: skipped' <<<"$output")"
  echo "${totals:-no doctest totals}$( ((num_skipped == 0)) || echo "; $num_skipped cases skipped")"
}

run_test() {
  local name="$1" status
  if [[ ! -x "$tests/$name" ]]; then
    record "$name" FAILED 0 "not in $tests"
    return
  fi
  run_limited "$test_limit" $((test_limit < 10 ? test_limit : 10)) "$tests/$name"
  status=$?
  finish "$name" "$status" "$($ran && test_note)"
}

for name in "${ordered_tests[@]}"; do run_test "$name"; done
for binary in "$tests"/test_gpu_*; do
  name="$(basename "$binary")"
  [[ -x "$binary" && " ${ordered_tests[*]} " != *" $name "* ]] && run_test "$name"
done

# ---- what needs a GPU ---------------------------------------------------------------------

# needs NAME [FILE]...: 0 when the GPU and every FILE are there; otherwise records NAME as
# skipped, saying what is missing, and returns 1.
needs() {
  local name="$1" file
  shift
  if [[ -z "$gpu_name" ]]; then
    skip "$name" "no GPU"
    return 1
  fi
  for file in "$@"; do
    if [[ ! -e "$file" ]]; then
      skip "$name" "${file#"$root/"} is missing$([[ "$file" == "$data"/* ]] && echo " (scripts/make-gpu-check-data.sh makes it)")"
      return 1
    fi
  done
}

float32_vs_cpu() {
  local inputs=("$samples"/*.jsonl) input name status note reference output
  if [[ -z "$gpu_name" || ${#inputs[@]} -eq 0 ]]; then
    skip "float32 vs cpu" "$([[ -z "$gpu_name" ]] && echo "no GPU" || echo "no samples in ${samples#"$root/"}")"
    return
  fi
  for input in "${inputs[@]}"; do
    name="$(basename "$input")"
    reference="$data/cpu/$name"
    output="$work/float32-$name"
    needs "float32 vs cpu: $name" "$reference" "$vocab" "$bin/pagedgen" || continue
    run_limited 120 20 "$bin/pagedgen" generate --device cuda --dtype float32 --load-format dummy \
      -m "$samples/smollm2-135m.config.json" --tokenizer "$vocab" -i "$input" -o "$output"
    status=$?
    note=""
    if ((status == 0)); then
      if cmp -s "$reference" "$output"; then
        note="identical to the CPU's file ($(wc -l <"$output") lines)"
      else
        status=differs
        note="differs from the CPU's file at $(first_difference "$reference" "$output")"
        { echo "== diff ${reference#"$root/"} (CPU) vs the GPU's output"; diff "$reference" "$output" | head -n 40; } >>"$log"
      fi
    fi
    finish "float32 vs cpu: $name" "$status" "$note"
  done
}

ncu_probe() {
  local ncu status note
  needs "ncu --clock-control none" "$tests/test_gpu_gemm" || return
  if ! ncu="$(find_tool ncu)"; then
    skip "ncu --clock-control none" "ncu is not on PATH nor in /usr/local/cuda/bin or /opt/nvidia/nsight-compute"
    return
  fi
  run_limited 60 15 "$ncu" --clock-control none --metrics gpu__time_duration.sum -c 1 "$tests/test_gpu_gemm"
  status=$?
  if ! $ran; then
    finish "ncu --clock-control none" "$status" ""
  elif step_output | grep -q 'gpu__time_duration.sum'; then
    record "ncu --clock-control none" passed "$took" "usable ($ncu): timed a kernel of test_gpu_gemm"
  else
    note="$(step_output | grep -m 1 -E '==ERROR==|ERR_|[Ff]ailed' | cut -c 1-120)"
    record "ncu --clock-control none" skipped "$took" "present ($ncu) but not usable: ${note:-exit status $status}"
  fi
}

first_difference() {  # first_difference FILE1 FILE2: "byte B, line L", or why cmp could not say
  cmp "$1" "$2" 2>&1 | head -n 1 | sed 's/.* differ: //'
}

# A stats JSON holds one field per line; the counted figures are all but these two.
counted_stats() { grep -v -e '^  "time_seconds":' -e '^  "throughput":' "$1"; }

json_number() {  # json_number KEY FILE: the first number given for KEY
  grep -o "\"$1\": [0-9.e+-]*" "$2" 2>/dev/null | head -n 1 | sed 's/.*: //'
}

# workload NAME TAG FLAGS...: one generate of the 8B workload into $work/TAG.jsonl and
# TAG.stats.json. With COMPARE_WITH set to an earlier run's TAG, the two runs' output files
# and counted stats figures must be identical.
workload() {
  local name="$1" tag="$2" status note
  shift 2
  needs "$name" "$data/workload-8b.jsonl" "$vocab" "$bin/pagedgen" || return
  run_limited 150 45 "$bin/pagedgen" generate --device cuda --load-format dummy -m "$samples/llama-3-8b.config.json" \
    --tokenizer "$vocab" -i "$data/workload-8b.jsonl" -o "$work/$tag.jsonl" --stats "$work/$tag.stats.json" \
    --ignore-eos --max-num-seqs 256 --max-batch-tokens 8192 --max-tokens 128 --temperature 0 "$@"
  status=$?
  note=""
  if ((status == 0)); then
    note="$(json_number generated_tokens_per_second "$work/$tag.stats.json") generated tok/s"
    if [[ -n "${COMPARE_WITH:-}" ]]; then
      if [[ ! -f "$work/$COMPARE_WITH.stats.json" ]]; then
        note+="; not compared: the $COMPARE_WITH run did not finish"
      elif ! cmp -s "$work/$COMPARE_WITH.jsonl" "$work/$tag.jsonl"; then
        status=differs
        note+="; output differs from $COMPARE_WITH's at $(first_difference "$work/$COMPARE_WITH.jsonl" "$work/$tag.jsonl")"
      elif ! diff <(counted_stats "$work/$COMPARE_WITH.stats.json") <(counted_stats "$work/$tag.stats.json") >>"$log"; then
        status=differs
        note+="; counted stats differ from $COMPARE_WITH's (the diff is in the log)"
      else
        note+="; output and counted stats identical to $COMPARE_WITH's"
      fi
    fi
  fi
  finish "$name" "$status" "$note"
}

bench() {  # bench NAME LIMIT MINIMUM COMMAND...: a benchmark; the note counts its table rows
  local name="$1" limit="$2" minimum="$3" status
  shift 3
  needs "$name" "$1" || return
  run_limited "$limit" "$minimum" "$@"
  status=$?
  finish "$name" "$status" "$($ran && echo "$(step_output | grep -c '^ROW|') rows")"
}

sanitizer() {
  local name="memcheck: test_gpu_backend" tool status errors
  needs "$name" "$tests/test_gpu_backend" || return
  if ! tool="$(find_tool compute-sanitizer)"; then
    skip "$name" "compute-sanitizer is not on PATH nor in /usr/local/cuda"
    return
  fi
  run_limited 300 60 "$tool" --tool memcheck --error-exitcode 99 "$tests/test_gpu_backend"
  status=$?
  errors="$(step_output | grep -m 1 'ERROR SUMMARY')"
  if $ran && ((status != 0)) && step_output | grep -q 'Device not supported'; then
    record "$name" skipped "$took" "$tool cannot check this device (\"Device not supported\")"
    return
  fi
  finish "$name" "$status" "${errors#*= }"
}

load() {
  local model_dir="$work/load-model" shape=1b free_gb status
  needs "load: write a bf16 model" "$share/scripts/make-load-model.py" "$bin/bench_load" || return
  if ! command -v python3 >/dev/null 2>&1; then
    skip "load: write a bf16 model" "python3 not found"
    return
  fi
  free_gb=$(($(df -Pk "$work" | awk 'NR == 2 {print $4}') / 1000000))
  ((budget - (SECONDS - start) >= 300 && free_gb >= 19)) && shape=8b
  rm -rf "$model_dir" && mkdir -p "$model_dir"
  run_limited 240 20 python3 "$share/scripts/make-load-model.py" "$shape" "$model_dir"
  status=$?
  finish "load: write a bf16 $shape model" "$status" "$($ran && echo "$free_gb GB were free")"
  if ((status == 0)); then
    run_limited 180 20 "$bin/bench_load" --model "$model_dir" --device cuda --dtype bfloat16
    status=$?
    finish "load: bench_load $shape cuda" "$status" "$($ran && load_note)"
  fi
  rm -rf "$model_dir"
}

load_note() {  # seconds and host memory from bench_load's JSON line
  local line="$work/load.json" before
  step_output | grep '"bench": "load"' >"$line"
  [[ -s "$line" ]] || { echo "no JSON line"; return; }
  before="$(json_number rss_anon_before_bytes "$line")"
  echo "$(json_number load_s "$line") s, peak RssAnon $((($(json_number peak_rss_anon_bytes "$line") - before) >> 20)) MiB" \
    "above the $((before >> 20)) MiB before, peak RssFile $(($(json_number peak_rss_file_bytes "$line") >> 20)) MiB," \
    "file $(($(json_number file_bytes "$line") >> 20)) MiB"
}

float32_vs_cpu
ncu_probe
workload "8b workload, sharing" sharing
COMPARE_WITH=sharing workload "8b workload, sharing, no overlap/graphs" sharing-plain --no-overlap --no-cuda-graphs
workload "8b workload, no sharing" no-sharing --no-prefix-sharing
COMPARE_WITH=no-sharing workload "8b workload, no sharing, no overlap/graphs" no-sharing-plain \
  --no-prefix-sharing --no-overlap --no-cuda-graphs
bench "bench_gpu: llama-3-8b shape" 150 40 "$bin/bench_gpu" --dummy "$samples/llama-3-8b.config.json" --name llama-3-8b-dummy
if [[ -n "${PAGEDGEN_MODEL:-}" ]]; then
  bench "bench_gpu: smollm2-135m" 90 20 "$bin/bench_gpu" --model "$PAGEDGEN_MODEL" --name smollm2-135m
else
  bench "bench_gpu: smollm2-135m shape" 90 20 "$bin/bench_gpu" --dummy "$samples/smollm2-135m.config.json" \
    --name smollm2-135m-dummy
fi
if ((budget - (SECONDS - start) >= 240)); then
  bench "bench_kernels" 240 30 "$bin/bench_kernels"
else
  bench "bench_kernels --quick" 240 30 "$bin/bench_kernels" --quick
fi
sanitizer
load

write_summary
exit_status
