#!/usr/bin/env bash
# Builds the relocatable GPU bundle on a machine with nvcc, the build dependencies
# (scripts/install-deps.sh) and the default model (scripts/fetch-model.sh) but no GPU:
# pagedgen, bench_gpu, bench_kernels, bench_load and the gpu-labelled tests, for sm_90
# (H100, H200) plus compute_90 PTX and x86-64-v3 CPUs, with their data, the check's data
# made here (scripts/make-gpu-check-data.sh: the default model's vocabulary, the CPU's
# float32 reference outputs, the 8B workload), the check (scripts/gpu-bundle/check.sh) and
# the shared libraries a GPU node without build packages lacks, as one .tar.gz of at most
# 40 MB. The node needs glibc, an NVIDIA driver for CUDA 13, and cuBLAS/cuBLASLt/cudart 13
# (pip's nvidia/cu13/lib will do); scripts/gpu-bundle/README.md, shipped inside, says how to run it.
#   scripts/make-gpu-bundle.sh [OUT.tar.gz]      default: build-bundle/pagedgen-gpu.tar.gz
# Environment: PAGEDGEN_BUNDLE_BUILD (build directory, default build-bundle),
# PAGEDGEN_BUNDLE_ARCHS (CMAKE_CUDA_ARCHITECTURES, default 90), JOBS (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${PAGEDGEN_BUNDLE_BUILD:-build-bundle}"
archs="${PAGEDGEN_BUNDLE_ARCHS:-90}"
out="${1:-$build/pagedgen-gpu.tar.gz}"
jobs="${JOBS:-$(nproc)}"
max_bytes=$((40 * 1000 * 1000))

nvcc="$(command -v nvcc || true)"
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ -z "$nvcc" ]]; then
  echo "make-gpu-bundle: nvcc not found; install the CUDA toolkit or put its bin/ on PATH" >&2
  exit 2
fi
cuda_root="$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)"
gpu_tests=()
for source in tests/test_gpu_*.cpp; do gpu_tests+=("$(basename "$source" .cpp)"); done

echo "== configure $build (Release, CUDA $archs, -march=x86-64-v3, relocatable)"
mkdir -p "$build"
# shellcheck disable=SC2016 # $ORIGIN is for the dynamic loader, not the shell.
# RPATH (not RUNPATH: it also serves the bundled libraries' own dependencies, such as
# OpenBLAS's libgfortran) is $ORIGIN/../lib and nothing else: no toolkit or build paths.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DPAGEDGEN_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$archs" \
  -DPAGEDGEN_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 -DPAGEDGEN_RELOCATABLE=ON \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
grep -q "building the CUDA backend" "$build/configure.log" ||
  { echo "make-gpu-bundle: CMake did not configure the CUDA backend" >&2; cat "$build/configure.log"; exit 1; }

echo "== build pagedgen bench_gpu bench_kernels bench_load ${gpu_tests[*]}"
ninja -C "$build" -j"$jobs" pagedgen bench_gpu bench_kernels bench_load "${gpu_tests[@]}"

echo "== stage"
stage="$build/stage"
root="$stage/pagedgen-gpu"
rm -rf "$stage"
mkdir -p "$root/bin" "$root/tests" "$root/lib" "$root/share/pagedgen/tests/data" "$root/share/pagedgen/scripts"
install -m 755 "$build/app/pagedgen" "$build/app/bench_load" "$build/gpu/bench_gpu" "$build/gpu/bench_kernels" "$root/bin/"
for test in "${gpu_tests[@]}"; do install -m 755 "$build/tests/$test" "$root/tests/"; done
strip --strip-all "$root"/bin/* "$root"/tests/*
# The tests' data: samples/ (inputs, the dummy models' configs), the reference prompts, the
# chat templates and the tiny per-architecture model files of tests/data/arch-reference
# (1.7 MB; tests/test_paths.cpp finds them in share/pagedgen).
cp -r samples "$root/share/pagedgen/"
cp -r tests/data/reference tests/data/chat_templates tests/data/arch-reference "$root/share/pagedgen/tests/data/"
install -m 644 scripts/gpu-bundle/README.md scripts/gpu-bundle/env.sh "$root/"
install -m 755 scripts/gpu-bundle/check.sh "$root/"
install -m 755 scripts/make-load-model.py "$root/share/pagedgen/scripts/"
echo "== the check's data (the CPU's float32 reference outputs: a few minutes)"
scripts/make-gpu-check-data.sh "$build/app/pagedgen" "$root/share/pagedgen/gpu-check"

# Every library the binaries load (ldd follows dependencies), except the C runtime, the
# driver and CUDA's own libraries (libcublas* covers libcublasLt), which the node brings
# (README.md).
left_to_node() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libutil.so.* | libresolv.so.* | libcuda.so.* | libnvidia-*.so.* | libcublas*.so.* | libcudart*.so.*)
      return 0 ;;
  esac
  case "$(readlink -f "$2")" in "$cuda_root"/*) return 0 ;; esac
  return 1
}
libraries="$root/LIBRARIES.txt"
echo "# Bundled in lib/ (name, Debian package and version; lib/licenses has their copyright files):" >"$libraries"
left_out=()
while read -r name path; do
  if left_to_node "$name" "$path"; then
    left_out+=("$name")
    continue
  fi
  cp -L "$path" "$root/lib/$name"
  chmod 644 "$root/lib/$name"
  package="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)"
  package="${package%%:*}"
  version="$( [[ -n "$package" ]] && dpkg-query -W -f='${Version}' "$package" 2>/dev/null || echo "?")"
  echo "$name ${package:-?} $version" >>"$libraries"
  if [[ -n "$package" && -f "/usr/share/doc/$package/copyright" ]]; then
    mkdir -p "$root/lib/licenses"
    install -m 644 "/usr/share/doc/$package/copyright" "$root/lib/licenses/$package.copyright"
  fi
done < <(for binary in "$root"/bin/* "$root"/tests/*; do ldd "$binary"; done |
           awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
echo "# Left to the node: ${left_out[*]}" >>"$libraries"
# The newest glibc symbol version anything in the bundle asks for.
glibc="$(objdump -T "$root"/bin/* "$root"/tests/* "$root"/lib/*.so.* 2>/dev/null |
         grep -o 'GLIBC_[0-9.]*' | sort -u -V | tail -n 1)"
{
  echo "pagedgen $(git describe --always --dirty 2>/dev/null || echo unknown), built $(date -u +%Y-%m-%dT%H:%MZ)"
  cuda_version="$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "CUDA $cuda_version, architectures $archs; CPU x86-64-v3; needs ${glibc/_/ >= }"
} >"$root/BUILD-INFO.txt"
sed 's/^/   /' "$libraries"
sed 's/^/   /' "$root/BUILD-INFO.txt"

# No path of this machine's trees may be compiled into what the node runs.
if grep -l -F "$(pwd)" "$root"/bin/* "$root"/tests/* >/dev/null 2>&1; then
  echo "make-gpu-bundle: these binaries still hold '$(pwd)':" >&2
  grep -l -F "$(pwd)" "$root"/bin/* "$root"/tests/* >&2
  exit 1
fi

echo "== archive $out"
mkdir -p "$(dirname "$out")"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$out" pagedgen-gpu
bytes="$(stat -c %s "$out")"
echo "   $out: $bytes bytes ($((bytes / 1000000)) MB), limit $max_bytes"
if ((bytes > max_bytes)); then
  echo "make-gpu-bundle: the archive is over 40 MB" >&2
  exit 1
fi
echo "   made in $SECONDS s"
