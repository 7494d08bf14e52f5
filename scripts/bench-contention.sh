# shellcheck shell=bash
# Sourced by the bench scripts, not run: how much CPU other processes used while a benchmark
# ran. The load average lags by minutes and counts the benchmark itself, so this takes the
# machine's busy CPU time from /proc/stat and subtracts what this script and the children it
# has waited for used (/proc/$$/stat: utime, stime, cutime, cstime). What is left is other
# processes' work: a build, a test run, a helper, a spinning peer. On 2 cores a tenth of a
# core taken by something else already skews a ratio (a llama.cpp run whose threads spin
# collapses 10x beside a busy loop).

# shellcheck disable=SC2034 # read by the scripts that source this one
contention_limit_cores=0.10

# contention_sample: "busy_ticks own_ticks wall_seconds" now.
contention_sample() {
  local busy own
  busy=$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)
  own=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$$/stat")
  echo "$busy $own $(date +%s.%N)"
}

# contention_cores BEGIN_SAMPLE END_SAMPLE: other processes' CPU between the two samples, in
# cores (CPU seconds per second of wall time), to two decimals.
contention_cores() {
  local ticks
  ticks=$(getconf CLK_TCK)
  awk -v t="$ticks" -v a="$1" -v b="$2" 'BEGIN {
    split(a, x, " "); split(b, y, " ");
    other = ((y[1] - x[1]) - (y[2] - x[2])) / t; wall = y[3] - x[3];
    if (other < 0) other = 0;
    printf "%.2f", (wall > 0 ? other / wall : 0) }'
}

# contention_report WHAT BEGIN_SAMPLE: prints "other processes: X cores during WHAT" and,
# above the limit, a warning on stderr that the figures are not to be trusted. Returns 0.
contention_report() {
  local cores
  cores=$(contention_cores "$2" "$(contention_sample)")
  echo "other processes: $cores cores on average during $1 (limit $contention_limit_cores)"
  if awk -v c="$cores" -v l="$contention_limit_cores" 'BEGIN {exit !(c > l)}'; then
    {
      echo "WARNING: other processes used $cores cores on average during $1, above $contention_limit_cores:"
      echo "WARNING: the machine was not quiet, so these timings and ratios are not to be trusted."
      echo "WARNING: run the benchmark alone (no build, test, helper or other benchmark beside it)."
    } >&2
  fi
}
