#!/usr/bin/env bash
# The README's Slurm recipe on a real single-node cluster (scripts/slurm-cluster.sh), adapted
# to a node without GPUs: a 4-task array of `generate --shard K/4 --resume` (--device cpu
# --threads 1, #SBATCH --requeue), one task requeued (scontrol requeue) once its journal holds
# finished lines, i.e. mid-run, then `merge` as a job that depends on the array
# (--dependency=afterok). The merged file must be a single run's lines except
# usage.cached_tokens (the README: an input split by lines shares prefixes within a shard
# only), the requeued task must have run twice, the second run resuming (its stats' coverage
# counts lines answered earlier and lines it computed).
#
#   scripts/test-slurm.sh [PAGEDGEN]     PAGEDGEN: the binary (default build/app/pagedgen)
#
# Exit 0 when all holds, 1 when not, 77 (ctest's skip) when the daemons cannot start here,
# saying why; with PAGEDGEN_REQUIRE_SLURM=1 (CI, .ci/run) that is a failure too. Needs root,
# slurm-wlm and munge (scripts/install-deps.sh) and the default model (scripts/fetch-model.sh,
# or PAGEDGEN_MODEL). About 20 s on 2 cores. The daemons are stopped on every exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pagedgen=$(realpath "${1:-$root/build/app/pagedgen}")
model=${PAGEDGEN_MODEL:-${PAGEDGEN_MODELS_DIR:-$HOME/.cache/pagedgen/models}/SmolLM2-135M-Instruct.Q4_1.gguf}
num_tasks=4
requeued_task=1
# shellcheck source=scripts/slurm-cluster.sh
. "$root/scripts/slurm-cluster.sh"

say() { echo "test-slurm: $*"; }
die() {
  echo "test-slurm: FAILED: $*" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/pagedgen-test-slurm.XXXXXX")
single_pid=""
cleanup() {
  if [ -n "$single_pid" ]; then kill "$single_pid" 2>/dev/null || true; fi
  slurm_cluster_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# write_input FILE: 12 lines, 3 per shard (split by lines: fewer windows than shards). Each
# shard's first line runs longest (64 tokens; 512 in the shard to requeue) and the other two
# generate 4, so those two finish first and wait in the journal while the first still runs:
# the moment to requeue, with about 500 decode steps (seconds) left to get there.
write_input() {
  local i max_tokens
  for i in $(seq 0 11); do
    if [ $((i % 3)) -eq 0 ]; then
      max_tokens=$([ "$i" -eq $((3 * requeued_task)) ] && echo 512 || echo 64)
      printf '{"id":"r%d","prompt":"Story %d: once upon a time","max_tokens":%d,"ignore_eos":true,"temperature":0}\n' \
        "$i" "$i" "$max_tokens"
    else
      printf '{"id":"r%d","prompt":"Question %d: what is %d plus %d?","max_tokens":4,"temperature":0}\n' "$i" "$i" "$i" "$i"
    fi
  done >"$1"
}

# write_array_job FILE: the README's array job for this node (no GPU, one CPU per task).
write_array_job() {
  cat >"$1" <<EOF
#!/bin/bash
#SBATCH --array=0-$((num_tasks - 1))
#SBATCH --requeue
#SBATCH --cpus-per-task=1
#SBATCH --open-mode=append
#SBATCH --output=task.%a.log
echo "task \$SLURM_ARRAY_TASK_ID: start, restart count \${SLURM_RESTART_COUNT:-0}"
'$pagedgen' generate -q -m '$model' --device cpu --threads 1 -i prompts.jsonl -o out.\$SLURM_ARRAY_TASK_ID.jsonl \\
  --stats stats.\$SLURM_ARRAY_TASK_ID.json --shard \$SLURM_ARRAY_TASK_ID/$num_tasks --resume
status=\$?
echo "task \$SLURM_ARRAY_TASK_ID: generate exited \$status"
exit \$status
EOF
}

# finished_in_journal FILE: how many finished lines ("<hash> l <line> ...") the journal holds.
finished_in_journal() {
  if [ -f "$1" ]; then grep -cE '^[0-9a-f]{16} l ' "$1" || true; else echo 0; fi
}

# requeue_mid_run JOB: waits (up to 120 s) for the task's journal to hold finished lines,
# then requeues the task; prints what it saw.
requeue_mid_run() {
  local task="$1_$requeued_task" journal="$work/out.$requeued_task.jsonl.journal" n=0 i
  for i in $(seq 1200); do
    n=$(finished_in_journal "$journal")
    [ "$n" -gt 0 ] && break
    if [ -f "$work/stats.$requeued_task.json" ]; then
      die "task $task finished before its journal showed a finished line (its first line must run longer)"
    fi
    sleep 0.1
  done
  [ "$n" -gt 0 ] || die "task $task's journal showed no finished line within 120 s"
  local written
  written=$(wc -l <"$work/out.$requeued_task.jsonl")
  scontrol requeue "$task"
  say "requeued task $task mid-run: its journal held $n finished line(s), its output $written line(s)"
}

# job_state JOB: the job's state (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, ...).
job_state() {
  scontrol show job -o "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true
}

# run_merge_job JOB: submits the merge depending on JOB (afterok) and waits (up to 240 s) for
# it, polling (sbatch --wait polls ever slower); a failed task cancels it
# (kill_invalid_depend), so a failure does not hang here.
run_merge_job() {
  local merge_job state="" i
  merge_job=$(sbatch --parsable --dependency="afterok:$1" --output=merge.log \
    --wrap "'$pagedgen' merge -o out.jsonl --stats stats.json out.*.jsonl --shard-stats stats.*.json")
  for i in $(seq 1200); do
    state=$(job_state "$merge_job")
    case "$state" in "" | PENDING | RUNNING | CONFIGURING | COMPLETING) sleep 0.2 ;; *) break ;; esac
  done
  if [ "$state" != COMPLETED ]; then
    cat "$work/merge.log" 2>/dev/null || true
    squeue -h -o '%i %T %r' || true
    die "the merge job $merge_job (afterok:$1) ended $state, not COMPLETED"
  fi
  say "merge job $merge_job ran once array job $1 was done (afterok) and exited 0: $(tail -n 1 "$work/merge.log")"
}

# check_requeued_task JOB: the task ran twice and the second run resumed.
check_requeued_task() {
  local log="$work/task.$requeued_task.log"
  echo "--- $log"
  cat "$log"
  echo "---"
  grep -q "stopped by SIGTERM" "$log" || die "task $requeued_task's first run was not stopped mid-run"
  grep -q "restart count 1" "$log" || die "task $requeued_task has no second run (restart count 1) in its log"
  local restarts
  restarts=$(scontrol show job "$1_$requeued_task" | grep -o 'Restarts=[0-9]*' || true)
  say "slurm counts task $1_$requeued_task's restarts: ${restarts:-none}"
  [ "$restarts" = Restarts=1 ] || die "task $1_$requeued_task should have been restarted once"
  python3 - "$work/stats.$requeued_task.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))["coverage"]
print(f"test-slurm: the resumed run: {c['requests_earlier']} line(s) answered before the requeue, "
      f"{c['requests_this_run']} computed after it, {c['requests_unfinished']} unfinished")
if not (c["requests_earlier"] > 0 and c["requests_this_run"] > 0 and c["requests_unfinished"] == 0):
    sys.exit("test-slurm: FAILED: the requeued task's second run should resume (lines from before and after)")
EOF
}

# compare MERGED SINGLE: line by line, all but usage.cached_tokens equal.
compare() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
merged, single = (open(p).read().splitlines() for p in sys.argv[1:3])
if len(merged) != len(single):
    sys.exit(f"test-slurm: FAILED: merged has {len(merged)} lines, the single run {len(single)}")
cached_differs = 0
for n, (a, b) in enumerate(zip(merged, single)):
    ja, jb = json.loads(a), json.loads(b)
    ca, cb = ja["usage"].pop("cached_tokens"), jb["usage"].pop("cached_tokens")
    cached_differs += ca != cb
    if ja != jb:
        sys.exit(f"test-slurm: FAILED: line {n} differs beyond cached_tokens:\n  merged {a}\n  single {b}")
print(f"test-slurm: comparison: the merged output's {len(merged)} lines equal the single run's "
      f"except usage.cached_tokens ({cached_differs} line(s) differ there); byte-identical: {merged == single}")
EOF
}

main() {
  [ -x "$pagedgen" ] || die "no pagedgen binary at $pagedgen (build it: scripts/build.sh pagedgen)"
  [ -f "$model" ] || die "no model at $model (scripts/fetch-model.sh fetches it)"
  cd "$work"
  write_input prompts.jsonl
  write_array_job array.sh
  if ! slurm_cluster_start "$work/cluster"; then
    if [ "${PAGEDGEN_REQUIRE_SLURM:-0}" = 1 ]; then die "the Slurm daemons did not start (see above)"; fi
    echo "SKIP: the Slurm daemons cannot start on this machine (see above); PAGEDGEN_REQUIRE_SLURM=1 makes it a failure"
    exit 77
  fi
  # The single run to compare with, beside the jobs.
  "$pagedgen" generate -q -m "$model" --device cpu --threads 1 -i prompts.jsonl -o single.jsonl &
  single_pid=$!
  local job
  job=$(sbatch --parsable --chdir="$work" array.sh)
  say "submitted array job $job: $num_tasks tasks of generate --shard K/$num_tasks --resume"
  requeue_mid_run "$job"
  run_merge_job "$job"
  wait "$single_pid" || die "the single run failed"
  single_pid=""
  check_requeued_task "$job"
  compare out.jsonl single.jsonl
  say "ok"
}

main
