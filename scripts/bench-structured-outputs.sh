#!/usr/bin/env bash
# Benchmark (not a test): the cost of structured outputs on the CPU backend (the
# target: generated tokens/s with the schema >= 80% of the same requests
# unconstrained, both in the same run). The workload, from
# scripts/make-structured-workload.py: 64 sampled chat requests (temperature 0.8, a fixed
# seed per line), each asking for one order record, and a nested schema (an object with
# strings, an enum, integers and an array of 2-4 objects with a string, an enum and an
# integer). Three runs of the same lines, alternated rep by rep:
#   schema     --json-schema FILE: masked decoding; a record ends `stop` when its value
#              is complete, or `length` at max_tokens
#   free       --ignore-eos, the same max_tokens and seeds: every request generates
#              exactly max_tokens tokens (the batch stays full to the end, so its tok/s is
#              the upper bound the schema run is held to)
#   matched    ignore_eos with each line's max_tokens set to the tokens its schema twin
#              generated (from the first schema rep's outputs): the same token count per
#              request, so the same batch sizes step by step as the schema run; the ratio
#              schema/matched is the mask's own cost, schema/free adds the cost of records
#              ending at different steps
# Constrained lines cannot take ignore_eos or min_tokens (pagedgen refuses them beside a
# schema), hence the two unconstrained baselines. Figures are the stats JSON's counted
# numbers: generated tokens over the generate-phase seconds (prefill included; the prompts
# are the same in all runs), and over the decode-step seconds; the median of the reps.
# The finish reasons of the schema run's records are counted from its output lines (stop:
# the value closed; length: cut by max_tokens). Prints a table, the ratios and a JSON
# line; exits 1 when a run fails.
#
# --constraint picks what the constrained run ("schema" in the table) asks for instead of
# the order schema: a 50-way --choice (labels, some sharing prefixes, some multi-byte) or a
# typical --regex (a date, a name and an amount); the two baselines are made the same way
# from its outputs. The masks' own cost per sequence per step is bench_grammar's table
# (its choice-50 and regex rows use the same two constraints).
#
# Usage: scripts/bench-structured-outputs.sh [-t THREADS] [-m MODEL.gguf] [--pagedgen BIN]
#            [--requests N] [--max-tokens N] [--reps N] [--constraint KIND] [--keep DIR]
#   -t THREADS       threads (default: $THREADS, else 2)
#   -m MODEL         GGUF file (default: $PAGEDGEN_MODEL, else the default model)
#   --pagedgen BIN   pagedgen binary (default: $PAGEDGEN, else build/app/pagedgen)
#   --requests N     requests (default 64)
#   --max-tokens N   max_tokens of every request (default 192: the longest record of the
#                    default workload is ~130 tokens)
#   --reps N         runs of each kind, alternated (schema, free, matched, schema, ...);
#                    the median is kept (default 3)
#   --constraint K   schema (default), choice or regex
#   --keep DIR       keep the schema, workloads, outputs, stats and logs in DIR (default: a
#                    temp dir)
# $PAGEDGEN_FLAGS (word-split) is added to every pagedgen generate.
set -euo pipefail

threads="${THREADS:-2}"
model="${PAGEDGEN_MODEL:-}"
bin="${PAGEDGEN:-}"
requests=64
max_tokens=192
reps=3
constraint=schema
keep=""
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"
while [[ $# -gt 0 ]]; do
  if bench_option "$@"; then shift 2; continue; fi
  case "$1" in
    --requests) requests="$2"; shift 2 ;;
    --max-tokens) max_tokens="$2"; shift 2 ;;
    --constraint) constraint="$2"; shift 2 ;;
    *) echo "bench-structured-outputs: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ "$reps" =~ ^[1-9][0-9]*$ ]]; then
  echo "bench-structured-outputs: --reps must be a positive integer, got $reps" >&2
  exit 2
fi
bench_absolute_paths model bin keep
case "$constraint" in
  schema|choice|regex) ;;
  *) echo "bench-structured-outputs: --constraint must be schema, choice or regex, got $constraint" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-contention.sh
. scripts/bench-contention.sh
run_begin=$(contention_sample)
bench_check_inputs bench-structured-outputs
bench_work_dir

read -r -a extra_flags <<<"${PAGEDGEN_FLAGS:-}"
scripts/make-structured-workload.py --schema "$tmp/order.schema.json" -o "$tmp/orders.jsonl" \
  --requests "$requests" --max-tokens "$max_tokens"

# The constrained run's flags.
case "$constraint" in
  schema) constraint_flags=(--json-schema "$tmp/order.schema.json") ;;
  choice)
    constraint_flags=()
    for label in positive positively negative neutral mixed sarcastic café naïve 日本語; do
      constraint_flags+=(--choice "$label")
    done
    for ((i = 0; i < 41; i++)); do constraint_flags+=(--choice "category $i"); done ;;
  regex)
    constraint_flags=(--regex '(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01]) [A-Z][a-z]+( [A-Z][a-z]+)*, [0-9]{1,5} (EUR|USD)') ;;
esac

# run NAME INPUT FLAGS...: one pagedgen generate; outputs, stats and stderr under $tmp.
run() {
  local name=$1 input=$2; shift 2
  echo "running $name" >&2
  if ! "$bin" generate -q -m "$model" -i "$input" -o "$tmp/$name.jsonl" \
      --stats "$tmp/$name.stats.json" --threads "$threads" "$@" "${extra_flags[@]}" \
      2>"$tmp/$name.err"; then
    echo "bench-structured-outputs: $name failed:" >&2
    tail -n 5 "$tmp/$name.err" >&2
    exit 1
  fi
}

for ((r = 0; r < reps; r++)); do
  run "schema-$r" "$tmp/orders.jsonl" "${constraint_flags[@]}"
  if [[ $r -eq 0 ]]; then
    scripts/make-structured-workload.py -o "$tmp/orders.jsonl" \
      --matched "$tmp/orders-matched.jsonl" --from "$tmp/schema-0.jsonl"
  fi
  run "free-$r" "$tmp/orders.jsonl" --ignore-eos
  run "matched-$r" "$tmp/orders-matched.jsonl"
done

contention_report "the timed runs" "$run_begin"
python3 - "$tmp" "$threads" "$reps" "$model" "$bin" "$requests" "$max_tokens" "$constraint" <<'PY'
import json, os, statistics, sys
tmp, threads, reps, model, binary, requests, max_tokens, constraint = sys.argv[1:]
reps, requests, max_tokens = int(reps), int(requests), int(max_tokens)
KINDS = ("schema", "free", "matched")

def outputs(name):
    return [json.loads(l) for l in open(f"{tmp}/{name}.jsonl")]

def cell(kind):
    """Median over the reps of the counted rates; token counts of every rep."""
    runs = []
    for r in range(reps):
        s = json.load(open(f"{tmp}/{kind}-{r}.stats.json"))
        t = s["time_seconds"]
        generated = s["tokens"]["generated"]
        runs.append({"generated": generated, "generate_s": t["generate"],
                     "decode_steps_s": t["decode_steps"], "rate": generated / t["generate"],
                     "decode_rate": generated / t["decode_steps"]})
    return {"runs": runs,
            "rate": statistics.median(x["rate"] for x in runs),
            "decode_rate": statistics.median(x["decode_rate"] for x in runs),
            "generate_s": statistics.median(x["generate_s"] for x in runs),
            "generated": sorted({x["generated"] for x in runs})}

cells = {k: cell(k) for k in KINDS}

# The schema run's records: finish reasons, and whether every rep gave the same texts.
texts = [[o.get("text") for o in outputs(f"schema-{r}")] for r in range(reps)]
records = outputs("schema-0")
errors = [o for o in records if "error" in o]
finish = {}
for o in records:
    reason = o.get("finish_reason", "error")
    finish[reason] = finish.get(reason, 0) + 1
def parses(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False
parsed = sum(1 for o in records if o.get("finish_reason") == "stop" and parses(o["text"])) \
    if constraint == "schema" else "n/a"
free_lengths = sorted({o["usage"]["completion_tokens"] for o in outputs("free-0")})

extra = os.environ.get("PAGEDGEN_FLAGS", "").strip()
print(f"model: {model}\npagedgen: {binary} {extra + ' ' if extra else ''}(CPU backend)")
print(f"threads: {threads}, reps: {reps} (median kept), {requests} requests, max_tokens {max_tokens}, "
      f"constraint: {constraint}\n")
header = (f"{'run':<10} {'gen tok/s':>9} {'decode tok/s':>12} {'generate s':>10} {'generated':>10}  "
          f"per-rep gen tok/s")
print(header)
print("-" * len(header))
for k in KINDS:
    c = cells[k]
    generated = "/".join(str(g) for g in c["generated"])
    per_rep = " ".join(f"{x['rate']:.1f}" for x in c["runs"])
    print(f"{k:<10} {c['rate']:>9.1f} {c['decode_rate']:>12.1f} {c['generate_s']:>10.2f} {generated:>10}  {per_rep}")
print()
ratio_free = cells["schema"]["rate"] / cells["free"]["rate"]
ratio_matched = cells["schema"]["rate"] / cells["matched"]["rate"]
print(f"schema / free    (same max_tokens, ignore_eos):      {ratio_free:.1%} (target >= 80%)")
print(f"schema / matched (same tokens per request):          {ratio_matched:.1%}")
total = len(records)
print(f"schema records: {finish.get('stop', 0)}/{total} stop ({finish.get('stop', 0) / total:.1%}), "
      f"{finish.get('length', 0)}/{total} length ({finish.get('length', 0) / total:.1%}), "
      f"{len(errors)} error lines; stop records that parse as JSON: {parsed}")
print(f"schema texts identical across reps: {'yes' if all(t == texts[0] for t in texts) else 'NO'}; "
      f"free completion tokens per request: {'/'.join(map(str, free_lengths))}")
for o in errors[:3]:
    print(f"  error line {o['index']}: {o['error']}")
print(json.dumps({"bench": "structured_outputs", "constraint": constraint, "model": model, "threads": int(threads), "reps": reps,
                  "requests": requests, "max_tokens": max_tokens, "runs": cells,
                  "ratio_schema_free": ratio_free, "ratio_schema_matched": ratio_matched,
                  "finish_reasons": finish}))
if errors or any(c["generated"][0] == 0 for c in cells.values()):
    sys.exit(1)
PY
