#!/usr/bin/env bash
# Runs the bundle's gpu tests: every CUDA kernel against its CPU reference, and the CUDA
# backend against the CPU backend end to end, on the default model when it is installed
# ($PAGEDGEN_MODEL, or ~/.cache/pagedgen/models) and otherwise on dummy weights of its
# shape. On a machine without a GPU every GPU case skips, saying why, and the run passes.
#   pagedgen-gpu/run-tests.sh [DOCTEST OPTIONS]     e.g. -tc='float32*' or -s
# Each test's full output goes to a log file whose path is printed; exit status 0 when all
# pass, 1 when one fails, 2 when a library is missing (see env.sh).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/gpu-bundle/env.sh
. "$here/env.sh"

if command -v ldd >/dev/null 2>&1; then
  missing="$(for binary in "$here"/bin/* "$here"/tests/*; do ldd "$binary"; done |
             awk '/not found/ {print $1}' | sort -u)"
  if [[ -n "$missing" ]]; then
    echo "run-tests: libraries not found: ${missing//$'\n'/ }" >&2
    echo "run-tests: point PAGEDGEN_CUDA_LIBS at the directory holding libcublas.so.13 (for pip's CUDA 13" >&2
    echo "           wheels: .../site-packages/nvidia/cu13/lib) and run again; README.md says more." >&2
    exit 2
  fi
fi

logs="$(mktemp -d "${TMPDIR:-/tmp}/pagedgen-gpu-tests.XXXXXX")"
command -v nvidia-smi >/dev/null 2>&1 &&
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
failed=()
passed=0
for test in "$here"/tests/test_*; do
  name="$(basename "$test")"
  log="$logs/$name.log"
  start=$SECONDS
  if "$test" "$@" >"$log" 2>&1; then
    passed=$((passed + 1))
    status=passed
  else
    failed+=("$name")
    status=FAILED
  fi
  skipped="$(grep -c 'MESSAGE: skipped' "$log")"
  summary="$(grep '^\[doctest\] test cases:' "$log" | sed 's/^\[doctest\] //')"
  printf '%-28s %-6s %4d s  %s; %s cases skipped\n' "$name" "$status" $((SECONDS - start)) \
    "${summary:-no summary}" "$skipped"
  [[ "$status" == FAILED ]] && tail -n 60 "$log"
done
echo "run-tests: $passed passed, ${#failed[@]} failed${failed[*]:+ (${failed[*]})}; logs in $logs"
[[ ${#failed[@]} -eq 0 ]]
