#!/usr/bin/env bash
# Installs what pagedgen needs to build and test, from Debian packages. Idempotent: does
# nothing when everything is already there. The CUDA toolkit is optional and not
# installed here: when nvcc is found, the gpu/ target is built too. clang and its runtime
# libraries (libFuzzer, sanitizers) build the fuzz targets (scripts/fuzz.sh); python3-jsonschema
# is the independent validator of tests/test_e2e_structured_outputs, python3-jinja2 the oracle of
# tests/test_chat_template_oracle; slurm-wlm and munge run the
# single-node Slurm cluster of the slurm_recipe test (scripts/test-slurm.sh).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config python3 python3-pip
  libcli11-dev libfmt-dev libsimdjson-dev libsentencepiece-dev doctest-dev
  libopenblas-dev libpcre2-dev
  clang libclang-rt-dev
  python3-jsonschema python3-jinja2
  slurm-wlm munge
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
