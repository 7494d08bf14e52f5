#!/usr/bin/env bash
# Crash-safety check (not a ctest: it takes minutes; tests/test_e2e_kill_resume is the
# short one): for greedy and for seeded sampling, kills `generate` with SIGKILL at several
# random points, resumes each time, also stops one run with SIGTERM (exit code 4), and
# requires the final file to equal an uninterrupted run byte for byte, with every input
# line answered once, in order. Each resume computes only the requests that neither the
# output nor its journal (OUT.journal) holds; the last one's stats say how many.
# Needs jq. Usage: scripts/kill-resume.sh [NUM_KILLS (default 5)] [extra generate flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
num_kills="${1:-5}"
shift || true
bin="${PAGEDGEN:-build/app/pagedgen}"
[ -x "$bin" ] || scripts/build.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 40 lines: plain and chat prompts, n > 1, an explicit seed, a bad line, blank lines.
for i in $(seq 0 39); do
  case $((i % 8)) in
    0) echo "{\"id\": \"p$i\", \"prompt\": \"Fact number $i about the Moon:\"}" ;;
    1) echo "{\"id\": \"c$i\", \"messages\": [{\"role\": \"user\", \"content\": \"Give me word number $i.\"}]}" ;;
    2) echo "{\"id\": \"n$i\", \"prompt\": \"A list of colors:\", \"n\": 2}" ;;
    3) echo "{\"id\": \"s$i\", \"prompt\": \"Once upon a time\", \"seed\": $i}" ;;
    4) echo "" ;;
    5) echo "{\"id\": \"bad$i\", \"prompt\": $i}" ;;
    *) echo "{\"id\": \"q$i\", \"prompt\": \"Question $i: what is $i plus $i?\"}" ;;
  esac
done > "$tmp/in.jsonl"
num_answered=$(grep -c . "$tmp/in.jsonl")

flags=(-i "$tmp/in.jsonl" --max-tokens 12 --seed 17 --plan-window 6 -q "$@")

num_lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
# Requests finished: the output's complete lines and the journal's finished-line entries.
num_finished() {
  local journaled=0
  [ -f "$1.journal" ] && journaled=$(grep -ac '^[0-9a-f]\{16\} l ' "$1.journal" || true)
  echo $(( $(num_lines "$1") + journaled ))
}
start_generate() {
  "$bin" generate "${flags[@]}" "${mode_flags[@]}" -o "$out" --resume &
  pid=$!
}
# Waits until the running generate has finished 1 to 6 more requests (a random number), then
# a random part of a second more: a random point in the middle of decoding, not of loading.
wait_for_progress() {
  local target=$(( $(num_finished "$out") + 1 + RANDOM % 6 ))
  while kill -0 "$pid" 2>/dev/null && [ "$(num_finished "$out")" -lt "$target" ]; do sleep 0.1; done
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", r / 32768 }')"
}
for mode in greedy seeded; do
  mode_flags=(--temperature 0)
  [ "$mode" = seeded ] && mode_flags=(--temperature 0.8 --top-p 0.95)
  "$bin" generate "${flags[@]}" "${mode_flags[@]}" -o "$tmp/$mode.ref.jsonl" || [ $? -eq 1 ]
  out="$tmp/$mode.jsonl"
  for kill in $(seq 1 "$num_kills"); do
    start_generate
    wait_for_progress
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "$mode: SIGKILL $kill: $(num_lines "$out") complete lines, $(num_finished "$out") requests finished, last byte: $(tail -c 1 "$out" 2>/dev/null | od -An -c | tr -d " ")"
  done
  start_generate
  wait_for_progress
  kill -TERM "$pid" 2>/dev/null || true
  code=0
  wait "$pid" || code=$?
  echo "$mode: SIGTERM: exit code $code (4 = stopped, 0/1 = had finished), $(num_lines "$out") lines"
  [ "$code" -eq 4 ] || [ "$code" -le 1 ]
  "$bin" generate "${flags[@]}" "${mode_flags[@]}" -o "$out" --resume --stats "$tmp/$mode.stats.json" || [ $? -eq 1 ]
  echo "$mode: the last resume computed $(jq .coverage.requests_this_run "$tmp/$mode.stats.json") requests; $(jq .coverage.requests_earlier "$tmp/$mode.stats.json") were answered before it"
  indices=$(jq -r .index "$out")
  [ "$(echo "$indices" | wc -l)" -eq "$num_answered" ] || { echo "$mode: FAIL: $(echo "$indices" | wc -l) lines, want $num_answered"; exit 1; }
  [ "$(echo "$indices" | sort -n | uniq | tr '\n' ' ')" = "$(echo "$indices" | tr '\n' ' ')" ] ||
    { echo "$mode: FAIL: an index is repeated or out of order"; exit 1; }
  if cmp "$tmp/$mode.ref.jsonl" "$out"; then
    echo "$mode: OK: $num_answered lines, byte-identical to the uninterrupted run ($(wc -c < "$out") bytes)"
  else
    echo "$mode: FAIL: the resumed output differs from the uninterrupted run"
    exit 1
  fi
done
