#!/usr/bin/env bash
# Benchmark (not a test): loading a model's weights, against the size of its file. Writes a
# random-weight HF directory of a Llama shape with bf16 safetensors (the format an 8B model
# comes in), loads it with scripts/bench_load.cpp on the CPU backend (--cpu-math fast keeps
# the bf16 matrices as stored; exact, when memory allows, converts all to float32) and on
# the CUDA backend when a GPU and a CUDA build are there (otherwise the row says unmeasured),
# and prints a table and a JSON line: load seconds, peak anonymous host memory (RssAnon,
# sampled every millisecond: not the mapped file's pages) and peak RssFile. The model
# directory is removed at the end.
#
# Usage: scripts/bench-load.sh [--shape 8b|1b|135m] [--dir DIR] [--exact] [--cold] [--build DIR] [--build-cuda DIR]
#   --shape       Llama-3-8B (default; a 16 GB file), Llama-3.2-1B (2.5 GB) or SmolLM2-135M (270 MB)
#   --dir         where to make the model's (temporary) directory (default /tmp)
#   --exact       also load with --cpu-math exact (float32: twice the file's bytes of RAM)
#   --cold        drop the page cache before loading (root; it is the whole machine's)
#   --build       the CPU build directory (default build), --build-cuda the CUDA one (default build-cuda)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-contention.sh
. scripts/bench-contention.sh
run_begin=$(contention_sample)
shape=8b parent=/tmp exact=0 cold=0 build=build build_cuda=build-cuda
while [[ $# -gt 0 ]]; do
  case "$1" in
    --shape) shape="$2"; shift 2 ;;
    --dir) parent="$2"; shift 2 ;;
    --exact) exact=1; shift ;;
    --cold) cold=1; shift ;;
    --build) build="$2"; shift 2 ;;
    --build-cuda) build_cuda="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench-load: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$shape" in 8b|1b|135m) ;; *) echo "bench-load: --shape must be 8b, 1b or 135m" >&2; exit 2 ;; esac
if [[ ! -f "$build/build.ninja" ]]; then
  echo "bench-load: $build is not configured; run scripts/build.sh first" >&2
  exit 1
fi
ninja -C "$build" bench_load >/dev/null
dir=$(mktemp -d "$parent/pagedgen-bench-load.XXXXXX")
results="$dir.results"
: > "$results"
trap 'rm -rf "$dir" "$results"' EXIT

python3 scripts/make-load-model.py "$shape" "$dir"

# The page cache may still hold the file just written (a warm load); --cold drops the
# whole machine's page cache first (root only), so the load reads the disk.
cache=warm
if [[ $cold == 1 ]]; then
  sync
  if echo 1 2>/dev/null > /proc/sys/vm/drop_caches; then cache=cold; else echo "bench-load: cannot drop the page cache" >&2; fi
fi
file_bytes=$(stat -c %s "$dir/model.safetensors")
available=$(( $(awk '/MemAvailable/ {print $2}' /proc/meminfo) * 1024 ))

run() {  # run LABEL BENCH_LOAD ARGS...
  local label="$1"; shift
  echo "bench-load: loading ($label)" >&2
  if ! "$@" --model "$dir" >> "$results"; then
    echo "{\"bench\": \"load\", \"device\": \"$label\", \"failed\": true}" >> "$results"
  fi
}
# The fast path keeps the bf16 matrices as stored: about the file's bytes of RAM.
if (( file_bytes + (1 << 30) < available )); then
  run "cpu fast" "$build/app/bench_load" --device cpu --cpu-math fast
else
  echo "{\"bench\": \"load\", \"device\": \"cpu\", \"mode\": \"cpu-math fast\", \"skipped\": \"needs $((file_bytes >> 30)) GiB, $((available >> 30)) GiB available\"}" >> "$results"
fi
if [[ $exact == 1 ]]; then
  if (( file_bytes * 2 + (1 << 30) < available )); then
    run "cpu exact" "$build/app/bench_load" --device cpu --cpu-math exact
  else
    echo "{\"bench\": \"load\", \"device\": \"cpu\", \"mode\": \"cpu-math exact\", \"skipped\": \"needs $((file_bytes * 2 >> 30)) GiB, $((available >> 30)) GiB available\"}" >> "$results"
  fi
fi
if [[ -x "$build_cuda/app/bench_load" ]] && nvidia-smi -L >/dev/null 2>&1; then
  run "cuda" "$build_cuda/app/bench_load" --device cuda --dtype bfloat16
else
  echo "{\"bench\": \"load\", \"device\": \"cuda\", \"mode\": \"dtype bfloat16\", \"skipped\": \"unmeasured: no GPU or no CUDA build ($build_cuda) here\"}" >> "$results"
fi

contention_report "the timed runs" "$run_begin"
python3 - "$shape" "$file_bytes" "$results" "$cache" <<'PY'
import json, sys
shape, file_bytes, path, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [json.loads(line) for line in open(path) if line.strip()]
gib = lambda b: f"{b / 2**30:.2f} GiB"
print(f"load of a {shape} Llama shape, bf16 safetensors, file {gib(file_bytes)}, page cache {cache}")
print(f"{'device':<6} {'mode':<16} {'load s':>8} {'peak RssAnon':>14} {'anon/file':>9} {'peak RssFile':>14}")
for r in rows:
    if "load_s" in r:
        print(f"{r['device']:<6} {r['mode']:<16} {r['load_s']:>8.2f} {gib(r['peak_rss_anon_bytes']):>14} "
              f"{r['peak_rss_anon_bytes'] / file_bytes:>9.3f} {gib(r['peak_rss_file_bytes']):>14}")
    else:
        print(f"{r['device']:<6} {r.get('mode', ''):<16} {r.get('skipped', 'failed')}")
print(json.dumps({"bench": "load", "shape": shape, "file_bytes": file_bytes, "page_cache": cache, "rows": rows}))
PY
