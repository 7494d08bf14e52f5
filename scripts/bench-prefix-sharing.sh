#!/usr/bin/env bash
# Benchmark (not a test): the shared-prefix sample with and without prefix sharing, same
# model, same flags. Prints one table and a JSON line; the run without sharing is the
# baseline. Usage: scripts/bench-prefix-sharing.sh [INPUT.jsonl] [extra generate flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-contention.sh
. scripts/bench-contention.sh
run_begin=$(contention_sample)
input="${1:-samples/shared_prefix.jsonl}"
shift || true
bin=build/app/pagedgen
[ -x "$bin" ] || scripts/build.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for mode in shared unshared; do
  flags=()
  [ "$mode" = unshared ] && flags+=(--no-prefix-sharing)
  start=$(date +%s.%N)
  "$bin" generate -q -i "$input" -o "$tmp/$mode.jsonl" --stats "$tmp/$mode.json" "${flags[@]}" "$@"
  end=$(date +%s.%N)
  echo "$start $end" > "$tmp/$mode.time"
done

contention_report "the timed runs" "$run_begin"
python3 - "$tmp" "$input" <<'PY'
import json, sys
tmp, input_path = sys.argv[1:]
rows = {}
for mode in ("shared", "unshared"):
    s = json.load(open(f"{tmp}/{mode}.json"))
    start, end = map(float, open(f"{tmp}/{mode}.time").read().split())
    rows[mode] = {
        "wall_s": end - start,
        "generate_s": s["time_seconds"]["generate"],
        "prompt_tokens": s["tokens"]["prompt"],
        "prompt_distinct": s["tokens"]["distinct_prompt"],
        "prompt_computed": s["tokens"]["prompt_computed"],
        "generated": s["tokens"]["generated"],
        "gen_tok_s": s["throughput"]["generated_tokens_per_second"],
        "peak_blocks": s["blocks"]["peak_used"],
        "utilization": s["slots"]["utilization"],
        "seq_utilization": s["slots"]["sequence_utilization"],
    }
def texts(mode):  # every output line without its usage (cached_tokens differs by design)
    return [{k: v for k, v in json.loads(l).items() if k != "usage"} for l in open(f"{tmp}/{mode}.jsonl")]
same = texts("shared") == texts("unshared")
print(f"input: {input_path}")
print(f"{'mode':<10} {'wall s':>8} {'generate s':>11} {'prompt tok':>11} {'distinct':>9} {'computed':>9} {'generated':>10} {'gen tok/s':>10} {'peak blocks':>12} {'util':>6} {'seq util':>8}")
for mode, r in rows.items():
    print(f"{mode:<10} {r['wall_s']:>8.1f} {r['generate_s']:>11.1f} {r['prompt_tokens']:>11} {r['prompt_distinct']:>9} {r['prompt_computed']:>9} "
          f"{r['generated']:>10} {r['gen_tok_s']:>10.1f} {r['peak_blocks']:>12} {r['utilization']:>6.3f} {r['seq_utilization']:>8.3f}")
speedup = rows["unshared"]["generate_s"] / rows["shared"]["generate_s"]
print(f"speedup of sharing over the baseline (generate time): {speedup:.2f}x; outputs identical: {'yes' if same else 'NO'}")
print(json.dumps({"bench": "prefix_sharing", "input": input_path, "rows": rows, "speedup": speedup, "identical_outputs": same}))
PY
