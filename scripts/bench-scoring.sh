#!/usr/bin/env bash
# Benchmark (not a test): the cost of scoring prompts (prompt_logprobs) on the default
# model. The workload: N distinct plain prompts of about L tokens (seeded random English
# words, no shared prefixes, so the prefix cache helps no run), three runs of the same
# lines, alternated rep by rep:
#   plain      max_tokens 1: the prompts prefilled, one token sampled (the baseline)
#   scored     max_tokens 1 and prompt_logprobs: K: the same, plus each prompt token's log
#              probability and top K (a logits row per prompt position, at most 512 a step)
#   score-only max_tokens 0 and prompt_logprobs: K: the prompts scored, nothing sampled
# Figures are the stats JSON's counted numbers: prompt tokens over the generate-phase
# seconds, and over the prefill-step seconds; the median of the reps; the ratios to the
# baseline of the same run. Prints a table and a JSON line; exits 1 when a run fails.
#
# Usage: scripts/bench-scoring.sh [-t THREADS] [-m MODEL.gguf] [--pagedgen BIN]
#            [--requests N] [--prompt-words L] [--top K] [--reps N] [--keep DIR]
#   -t THREADS        threads (default: $THREADS, else 2)
#   -m MODEL          GGUF file (default: $PAGEDGEN_MODEL, else the default model)
#   --pagedgen BIN    pagedgen binary (default: $PAGEDGEN, else build/app/pagedgen)
#   --requests N      prompts (default 64)
#   --prompt-words L  words per prompt (default 300, about 400 tokens)
#   --top K           prompt_logprobs of the scored runs (default 5)
#   --reps N          runs of each kind, alternated; the median is kept (default 3)
#   --keep DIR        keep the workloads, outputs, stats and logs in DIR (default: a temp dir)
# $PAGEDGEN_FLAGS (word-split) is added to every pagedgen generate (e.g. --device cuda).
set -euo pipefail

threads="${THREADS:-2}"
model="${PAGEDGEN_MODEL:-}"
bin="${PAGEDGEN:-}"
requests=64
words=300
top=5
reps=3
keep=""
# shellcheck source=scripts/bench-common.sh
. "$(dirname "$0")/bench-common.sh"
while [[ $# -gt 0 ]]; do
  if bench_option "$@"; then shift 2; continue; fi
  case "$1" in
    --requests) requests="$2"; shift 2 ;;
    --prompt-words) words="$2"; shift 2 ;;
    --top) top="$2"; shift 2 ;;
    *) echo "bench-scoring: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for var in requests words top reps; do
  if ! [[ "${!var}" =~ ^[0-9]+$ ]]; then
    echo "bench-scoring: --${var} must be a non-negative integer, got ${!var}" >&2
    exit 2
  fi
done
bench_absolute_paths model bin keep
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-contention.sh
. scripts/bench-contention.sh
run_begin=$(contention_sample)
bench_check_inputs bench-scoring
bench_work_dir
read -r -a extra_flags <<<"${PAGEDGEN_FLAGS:-}"

# The three workloads: the same prompts, only the scoring fields differ.
python3 - "$tmp" "$requests" "$words" "$top" <<'PY'
import json, random, sys
tmp, requests, words, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
vocab = ("the of and to in a is that for it as was with be by on not he this are or his from at which but "
         "have an they you were her she there been one all we their has would when if so no will more can "
         "river market window garden letter history engine winter music paper forest signal harbor story "
         "question number morning distance kitchen mountain silver station doctor theory answer").split()
rng = random.Random(7)
prompts = [f"Document {i}: " + " ".join(rng.choice(vocab) for _ in range(words)) for i in range(requests)]
kinds = {"plain": {"max_tokens": 1},
         "scored": {"max_tokens": 1, "prompt_logprobs": top},
         "score-only": {"max_tokens": 0, "prompt_logprobs": top}}
for kind, fields in kinds.items():
    with open(f"{tmp}/{kind}.in.jsonl", "w") as f:
        for i, p in enumerate(prompts):
            f.write(json.dumps({"id": i, "prompt": p, "temperature": 0, **fields}) + "\n")
PY

# run NAME: one pagedgen generate of NAME's workload; outputs, stats and stderr under $tmp.
run() {
  local kind=$1 name=$2
  echo "running $name" >&2
  if ! "$bin" generate -q -m "$model" -i "$tmp/$kind.in.jsonl" -o "$tmp/$name.jsonl" \
      --stats "$tmp/$name.stats.json" --threads "$threads" "${extra_flags[@]}" 2>"$tmp/$name.err"; then
    echo "bench-scoring: $name failed:" >&2
    tail -n 5 "$tmp/$name.err" >&2
    exit 1
  fi
}
for ((r = 0; r < reps; r++)); do
  for kind in plain scored score-only; do run "$kind" "$kind-$r"; done
done

contention_report "the timed runs" "$run_begin"
python3 - "$tmp" "$threads" "$reps" "$model" "$bin" "$requests" "$words" "$top" <<'PY'
import json, os, statistics, sys
tmp, threads, reps, model, binary, requests, words, top = sys.argv[1:]
reps = int(reps)
KINDS = ("plain", "scored", "score-only")

def cell(kind):
    runs = []
    for r in range(reps):
        s = json.load(open(f"{tmp}/{kind}-{r}.stats.json"))
        t = s["time_seconds"]
        prompt = s["tokens"]["prompt"]
        runs.append({"prompt_tokens": prompt, "generate_s": t["generate"], "prefill_steps_s": t["prefill_steps"],
                     "rate": prompt / t["generate"], "prefill_rate": prompt / t["prefill_steps"]})
    return {"runs": runs,
            "rate": statistics.median(x["rate"] for x in runs),
            "prefill_rate": statistics.median(x["prefill_rate"] for x in runs),
            "generate_s": statistics.median(x["generate_s"] for x in runs),
            "prompt_tokens": runs[0]["prompt_tokens"]}

cells = {k: cell(k) for k in KINDS}
errors = [json.loads(l) for k in KINDS for l in open(f"{tmp}/{k}-0.jsonl") if '"error"' in l]
scored = [json.loads(l) for l in open(f"{tmp}/scored-0.jsonl")]
entries = sum(len(o.get("prompt_logprobs", [])) for o in scored)

extra = os.environ.get("PAGEDGEN_FLAGS", "").strip()
print(f"model: {model}\npagedgen: {binary} {extra}")
print(f"threads: {threads}, reps: {reps} (median kept), {requests} prompts of {words} words, "
      f"{cells['plain']['prompt_tokens']} prompt tokens, prompt_logprobs {top}\n")
header = f"{'run':<11} {'prompt tok/s':>12} {'prefill tok/s':>13} {'generate s':>10} {'vs plain':>8}  per-rep tok/s"
print(header)
print("-" * len(header))
for k in KINDS:
    c = cells[k]
    ratio = c["rate"] / cells["plain"]["rate"]
    per_rep = " ".join(f"{x['rate']:.1f}" for x in c["runs"])
    print(f"{k:<11} {c['rate']:>12.1f} {c['prefill_rate']:>13.1f} {c['generate_s']:>10.2f} {ratio:>8.1%}  {per_rep}")
print(f"\nscored run: {entries} prompt_logprobs entries written (one per prompt token); {len(errors)} error lines")
for o in errors[:3]:
    print(f"  error line {o['index']}: {o['error']}")
print(json.dumps({"bench": "scoring", "model": model, "threads": int(threads), "reps": reps,
                  "requests": int(requests), "prompt_words": int(words), "prompt_logprobs": int(top),
                  "runs": cells, "ratio_scored_plain": cells["scored"]["rate"] / cells["plain"]["rate"],
                  "ratio_score_only_plain": cells["score-only"]["rate"] / cells["plain"]["rate"]}))
if errors or entries != cells["plain"]["prompt_tokens"]:
    sys.exit(1)
PY
