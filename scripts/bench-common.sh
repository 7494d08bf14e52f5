# shellcheck shell=bash
# Sourced by the bench scripts that run `pagedgen generate` on the default model, not run:
# the options they share and the steps each takes before its runs (on the variables
# threads, model, bin, reps and keep).

# bench_option ARGS...: when $1 is an option every bench script takes (-t/--threads THREADS,
# -m/--model MODEL, --pagedgen BIN, --reps N, --keep DIR), sets its variable from $2 and
# returns 0 (the caller shifts 2); -h/--help prints the script's header and exits; else 1.
# shellcheck disable=SC2034 # the variables are the sourcing script's
bench_option() {
  case "$1" in
    -t|--threads) threads="$2" ;;
    -m|--model) model="$2" ;;
    --pagedgen) bin="$2" ;;
    --reps) reps="$2" ;;
    --keep) keep="$2" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) return 1 ;;
  esac
}

# bench_absolute_paths VAR...: each named variable that holds a path, made absolute: paths
# are given relative to the caller's directory, and the scripts move to the repository root.
bench_absolute_paths() {
  local name
  for name in "$@"; do
    if [[ -n "${!name}" ]]; then printf -v "$name" '%s' "$(realpath -m -- "${!name}")"; fi
  done
}

# bench_check_inputs SCRIPT: bin (default build/app/pagedgen) and model (default: the
# default model) exist, else a message naming SCRIPT and exit 2.
bench_check_inputs() {
  bin="${bin:-build/app/pagedgen}"
  if [[ ! -x "$bin" ]]; then
    echo "$1: $bin not found; build first (scripts/build.sh) or pass --pagedgen" >&2
    exit 2
  fi
  if [[ -z "$model" ]]; then
    model="${PAGEDGEN_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pagedgen/models}/SmolLM2-135M-Instruct.Q4_1.gguf"
  fi
  if [[ ! -f "$model" ]]; then
    echo "$1: model $model not found (scripts/fetch-model.sh, or -m)" >&2
    exit 2
  fi
}

# bench_work_dir: tmp is $keep (created) when given, else a temp dir removed at exit.
bench_work_dir() {
  if [[ -n "$keep" ]]; then
    tmp="$keep"
    mkdir -p "$tmp"
  else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
  fi
}
