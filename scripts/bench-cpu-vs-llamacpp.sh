#!/usr/bin/env bash
# Benchmark (not a test): pagedgen's CPU backend against llama.cpp on the same GGUF and
# thread count, on the workloads of scripts/make-cpu-workload.py:
#   shared    64 requests (8 documents x 8 questions, ~501-token prompts sharing a
#             ~490-token document), 64 new tokens each: pagedgen with prefix sharing vs
#             llama-batched-bench -npp 501 -ntg 64 -npl 8 -pps, times 8 groups
#   unshared  the same file with --no-prefix-sharing vs llama-batched-bench -npp 501
#             -ntg 64 -npl 8 with flash attention (no -pps), times 8 groups; `-fa on` or
#             the older switch `-fa`, whichever its --help shows
#   prefill   one 2,048-token prompt, max_tokens 1 (prompt tok/s) vs llama-bench -p 2048 -n 0
#   decode    one 12-token prompt, 128 new tokens (generated tok/s) vs llama-bench -p 0 -n 128
# A llama.cpp built with -DGGML_NATIVE=ON where the CPU lists AMX but the virtual machine
# does not let a process use it dies with SIGILL (exit 132) in its batched runs (seen with
# llama-cpp-python 0.3.36's vendor/llama.cpp): build it with -DGGML_NATIVE=OFF, the
# GGML_AVX512* options on and GGML_AMX_TILE/INT8/BF16 off.
# pagedgen runs once per --cpu-math mode (fast, exact) when `generate --help` lists
# --cpu-math, else once on its only path (the exact column). Figures: generated (prefill:
# prompt) tokens over the stats JSON's generate-phase time; peak RSS by /usr/bin/time -v
# (else the highest VmHWM polled from /proc), beside the stats' peak KV bytes in use (KV
# pool pages never touched take no memory; RSS-KV is what the rest of the process held). llama.cpp runs only when LLAMA_CPP_DIR (or
# --llama-cpp-dir) names a directory holding llama-bench and llama-batched-bench. Prints
# a detail table, the comparison table and a JSON line; exits 0 even when a run fails
# (its cells read "failed" and its stderr tail is printed). Each run's row says how many
# cores other processes used meanwhile (scripts/bench-contention.sh); above a tenth of a core
# the script warns loudly that the figures are not to be trusted.
#
# Usage: scripts/bench-cpu-vs-llamacpp.sh [-t THREADS] [-m MODEL.gguf] [--pagedgen BIN]
#            [--llama-cpp-dir DIR] [--reps N] [--keep DIR]
#   -t THREADS         threads for both (default: $THREADS, else 2)
#   -m MODEL           GGUF file (default: $PAGEDGEN_MODEL, else the default model)
#   --pagedgen BIN     pagedgen binary (default: $PAGEDGEN, else build/app/pagedgen)
#   --llama-cpp-dir D  llama.cpp binaries (default: $LLAMA_CPP_DIR)
#   --reps N           pagedgen and llama-batched-bench runs per cell, best kept;
#                      llama-bench -r N (default 1)
#   --keep DIR         keep workloads, outputs, stats and logs in DIR (default: a temp dir)
# $PAGEDGEN_FLAGS (word-split) is added to every pagedgen generate, e.g.
# PAGEDGEN_FLAGS="--kv-cache-memory 2GiB"; pagedgen otherwise runs at its defaults.
set -euo pipefail

threads="${THREADS:-2}"
model="${PAGEDGEN_MODEL:-}"
bin="${PAGEDGEN:-}"
llama_dir="${LLAMA_CPP_DIR:-}"
reps=1
keep=""
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"
while [[ $# -gt 0 ]]; do
  if bench_option "$@"; then shift 2; continue; fi
  case "$1" in
    --llama-cpp-dir) llama_dir="$2"; shift 2 ;;
    *) echo "bench-cpu-vs-llamacpp: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bench_absolute_paths model bin llama_dir keep
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-contention.sh
. scripts/bench-contention.sh
run_begin=$(contention_sample)
bench_check_inputs bench-cpu-vs-llamacpp
if [[ -n "$llama_dir" && ! ( -x "$llama_dir/llama-bench" && -x "$llama_dir/llama-batched-bench" ) ]]; then
  echo "bench-cpu-vs-llamacpp: $llama_dir lacks llama-bench or llama-batched-bench" >&2
  exit 2
fi

bench_work_dir

read -r -a extra_flags <<<"${PAGEDGEN_FLAGS:-}"
modes=(exact)
generate_help=$("$bin" generate --help)  # not piped into grep -q: pipefail and SIGPIPE
if grep -q -- '--cpu-math' <<<"$generate_help"; then
  modes=(fast exact)
fi

for workload in shared prefill decode; do
  scripts/make-cpu-workload.py --workload "$workload" -o "$tmp/$workload.jsonl"
done

# measure NAME CMD...: CMD's stdout and stderr to $tmp/NAME.{out,err}; "rc wall_s rss_kib
# other_cores" to $tmp/NAME.res (other_cores: other processes' CPU meanwhile).
measure() {
  local name=$1; shift
  local start end rc=0 rss=0 begin
  begin=$(contention_sample)
  start=$(date +%s.%N)
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -v -o "$tmp/$name.timev" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
    rss=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' "$tmp/$name.timev")
  else
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    local pid=$! hwm
    while kill -0 "$pid" 2>/dev/null; do
      hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      if [[ -n "$hwm" && "$hwm" -gt "$rss" ]]; then rss=$hwm; fi
      sleep 0.1
    done
    wait "$pid" || rc=$?
  fi
  end=$(date +%s.%N)
  echo "$rc $(awk "BEGIN {print $end - $start}") ${rss:-0} $(contention_cores "$begin" "$(contention_sample)")" \
    >"$tmp/$name.res"
  contention_report "$name" "$begin" >/dev/null
  if [[ $rc -ne 0 ]]; then
    echo "bench-cpu-vs-llamacpp: $name failed (exit $rc):" >&2
    tail -n 5 "$tmp/$name.err" >&2
  fi
}

for mode in "${modes[@]}"; do
  math=()
  [[ ${#modes[@]} -gt 1 ]] && math=(--cpu-math "$mode")
  for run in shared unshared prefill decode; do
    input=$run flags=()
    [[ $run == unshared ]] && input=shared flags=(--no-prefix-sharing)
    for ((r = 0; r < reps; r++)); do
      name="pagedgen-$mode-$run-$r"
      echo "running $name" >&2
      measure "$name" "$bin" generate -q -m "$model" -i "$tmp/$input.jsonl" \
        -o "$tmp/$name.jsonl" --stats "$tmp/$name.stats.json" --threads "$threads" \
        "${math[@]}" "${flags[@]}" "${extra_flags[@]}"
    done
  done
done

if [[ -n "$llama_dir" ]]; then
  # Flash attention is a switch (`-fa`) in older llama.cpp builds and takes a value
  # (`-fa on|off|auto`) in newer ones, which refuse the bare switch: ask the binary.
  fa=(-fa)
  if "$llama_dir/llama-batched-bench" --help 2>&1 | grep -E -e '--flash-attn' | grep -q 'on|off'; then
    fa=(-fa on)
  fi
  # One group of 8 requests; the 64-request file is 8 such groups. -c fits 8 unshared
  # sequences of 501 + 64 tokens.
  batched=("$llama_dir/llama-batched-bench" -m "$model" -c 4608 -b 2048 -ub 512
           -npp 501 -ntg 64 -npl 8 -t "$threads" -tb "$threads" --output-format jsonl)
  for ((r = 0; r < reps; r++)); do
    echo "running llama-batched-bench (shared, unshared) $r" >&2
    measure "llama-shared-$r" "${batched[@]}" -pps
    measure "llama-unshared-$r" "${batched[@]}" "${fa[@]}"
  done
  echo "running llama-bench (prefill, decode)" >&2
  measure llama-prefill "$llama_dir/llama-bench" -m "$model" -p 2048 -n 0 -t "$threads" -r "$reps" -o json
  measure llama-decode "$llama_dir/llama-bench" -m "$model" -p 0 -n 128 -t "$threads" -r "$reps" -o json
fi

python3 - "$tmp" "$threads" "$reps" "$model" "$bin" "${modes[*]}" "$llama_dir" <<'PY'
import json, os, sys
tmp, threads, reps, model, binary, modes, llama_dir = sys.argv[1:]
reps, modes = int(reps), modes.split()
RUNS = ("shared", "unshared", "prefill", "decode")

def res(name):
    rc, wall, rss, _ = open(f"{tmp}/{name}.res").read().split()
    return int(rc), float(wall), int(rss)

def other_cores(name):
    return float(open(f"{tmp}/{name}.res").read().split()[3])

def pagedgen_cell(mode, run):
    """Best of the reps: rate, generate s, wall s, peak RSS MiB, token counts."""
    best = None
    for r in range(reps):
        name = f"pagedgen-{mode}-{run}-{r}"
        rc, wall, rss = res(name)
        if rc != 0:
            continue
        s = json.load(open(f"{tmp}/{name}.stats.json"))
        gen_s = s["time_seconds"]["generate"]
        tokens = s["tokens"]["prompt_computed"] if run == "prefill" else s["tokens"]["generated"]
        cell = {"rate": tokens / gen_s, "generate_s": gen_s, "wall_s": wall, "rss_mib": rss / 1024,
                "peak_kv_mib": s["blocks"]["peak_kv_bytes"] / 2**20,
                "prompt_tokens": s["tokens"]["prompt"], "prompt_computed": s["tokens"]["prompt_computed"],
                "generated": s["tokens"]["generated"], "output": f"{name}.jsonl",
                "other_cores": other_cores(name)}
        if best is None or cell["rate"] > best["rate"]:
            best = cell
    return best

def llama_batched_cell(run):
    """Best of the reps; the 64-request file is 8 groups of 8, so its time is 8 x T."""
    best = None
    for r in range(reps):
        name = f"llama-{run}-{r}"
        rc, wall, rss = res(name)
        rows = [json.loads(l) for l in open(f"{tmp}/{name}.out") if l.startswith("{")] if rc == 0 else []
        if not rows:
            continue
        row = rows[-1]
        total_s = 8 * row["t"]
        cell = {"rate": 8 * row["pl"] * row["tg"] / total_s, "generate_s": total_s, "wall_s": wall,
                "rss_mib": rss / 1024, "group_t_s": row["t"], "group_t_pp_s": row["t_pp"],
                "group_t_tg_s": row["t_tg"], "flash_attn": row["flash_attn"], "other_cores": other_cores(name)}
        if best is None or cell["rate"] > best["rate"]:
            best = cell
    return best

def llama_bench_cell(run):
    rc, wall, rss = res(f"llama-{run}")
    if rc != 0:
        return None
    row = json.loads(open(f"{tmp}/llama-{run}.out").read())[0]
    tokens = row["n_prompt"] if run == "prefill" else row["n_gen"]
    return {"rate": row["avg_ts"], "generate_s": tokens / row["avg_ts"], "wall_s": wall,
            "rss_mib": rss / 1024, "stddev_ts": row["stddev_ts"], "flash_attn": row.get("flash_attn"),
            "other_cores": other_cores(f"llama-{run}")}

pagedgen = {m: {run: pagedgen_cell(m, run) for run in RUNS} for m in modes}
llama = {}
if llama_dir:
    llama = {"shared": llama_batched_cell("shared"), "unshared": llama_batched_cell("unshared"),
             "prefill": llama_bench_cell("prefill"), "decode": llama_bench_cell("decode")}

def texts(mode, run):  # output lines without usage (cached_tokens differs by design)
    cell = pagedgen[mode][run]
    return cell and [{k: v for k, v in json.loads(l).items() if k != "usage"}
                     for l in open(f"{tmp}/{cell['output']}")]

extra = os.environ.get("PAGEDGEN_FLAGS", "").strip()
print(f"model: {model}\npagedgen: {binary} {extra + ' ' if extra else ''}(cpu-math: {', '.join(modes) if len(modes) > 1 else 'option absent, one path'})")
print(f"llama.cpp: {llama_dir or 'not run (set LLAMA_CPP_DIR)'}\nthreads: {threads}, reps: {reps} (best kept)\n")

print(f"{'run':<28} {'rate tok/s':>10} {'generate s':>10} {'wall s':>8} {'other cores':>11} {'peak RSS MiB':>12} "
      f"{'peak KV MiB':>11} {'RSS-KV MiB':>10} {'prompt':>7} {'computed':>8} {'generated':>9}")
for m in modes:
    for run in RUNS:
        c = pagedgen[m][run]
        label = f"pagedgen {m} {run}"
        if c is None:
            print(f"{label:<28} {'failed':>10}")
            continue
        print(f"{label:<28} {c['rate']:>10.1f} {c['generate_s']:>10.2f} {c['wall_s']:>8.2f} {c['other_cores']:>11.2f} "
              f"{c['rss_mib']:>12.0f} {c['peak_kv_mib']:>11.0f} {c['rss_mib'] - c['peak_kv_mib']:>10.0f} "
              f"{c['prompt_tokens']:>7} {c['prompt_computed']:>8} {c['generated']:>9}")
for run, c in llama.items():
    label = f"llama.cpp {run}"
    if c is None:
        print(f"{label:<28} {'failed':>10}")
        continue
    note = f"  (8 x group T {c['group_t_s']:.2f} s)" if "group_t_s" in c else ""
    print(f"{label:<28} {c['rate']:>10.1f} {c['generate_s']:>10.2f} {c['wall_s']:>8.2f} {c['other_cores']:>11.2f} "
          f"{c['rss_mib']:>12.0f}{note}")

expected = {"shared": 64 * 64, "unshared": 64 * 64, "prefill": 1, "decode": 128}
for m in modes:
    for run in RUNS:
        c = pagedgen[m][run]
        if c and c["generated"] != expected[run]:
            print(f"WARNING: pagedgen {m} {run} generated {c['generated']} tokens, expected {expected[run]}")
    shared, unshared = texts(m, "shared"), texts(m, "unshared")
    if shared and unshared:
        print(f"pagedgen {m}: outputs with and without sharing identical: "
              f"{'yes' if shared == unshared else 'NO'}")

UNITS = {"shared": "gen tok/s, 64 req x 64", "unshared": "gen tok/s, no sharing",
         "prefill": "prompt tok/s, 2048", "decode": "gen tok/s, batch 1, 128"}
def fmt(c):
    return f"{c['rate']:.1f}" if c else "failed"
def ratio(a, b):
    return f"{a['rate'] / b['rate']:.2f}x" if a and b else "-"
print()
header = f"{'workload':<34} {'pagedgen fast':>13} {'pagedgen exact':>14} {'llama.cpp':>10} {'ratio fast/llama':>16} {'ratio exact/llama':>17}"
print(header)
print("-" * len(header))
rows = []
for run in RUNS:
    fast = pagedgen.get("fast", {}).get(run)
    exact = pagedgen["exact"][run]
    ref = llama.get(run)
    fast_text = fmt(fast) if "fast" in pagedgen else "n/a"
    exact_text = fmt(exact)
    ref_text = fmt(ref) if llama else "n/a"
    print(f"{run + ' (' + UNITS[run] + ')':<34} {fast_text:>13} {exact_text:>14} {ref_text:>10} "
          f"{ratio(fast, ref):>16} {ratio(exact, ref):>17}")
    rows.append({"workload": run, "unit": UNITS[run],
                 "pagedgen_fast": fast, "pagedgen_exact": exact, "llama_cpp": ref})
print(json.dumps({"bench": "cpu_vs_llamacpp", "model": model, "threads": int(threads), "reps": reps,
                  "cpu_math_modes": modes, "llama_cpp_dir": llama_dir or None, "rows": rows}))
PY
contention_report "the whole benchmark" "$run_begin"
