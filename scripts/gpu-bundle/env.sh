# shellcheck shell=bash
# Source this file to use the bundle: `. pagedgen-gpu/env.sh`. It puts the bundle's bin/ on
# PATH and the CUDA libraries the bundle leaves out (cuBLAS, cuBLASLt, the CUDA runtime,
# all of CUDA 13) on LD_LIBRARY_PATH, taken from, in this order:
#   $PAGEDGEN_CUDA_LIBS, a directory holding libcublas.so.13;
#   nvidia/cu13/lib of the python3 on PATH (pip's CUDA 13 wheels, e.g. under PyTorch);
#   the system's library path (a CUDA toolkit registered with ldconfig): nothing to add.
# The bundle's own libraries (bundle/lib) need nothing: the binaries find them themselves.

pagedgen_bundle_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

pagedgen_find_cuda_libs() {
  if [[ -n "${PAGEDGEN_CUDA_LIBS:-}" ]]; then
    echo "$PAGEDGEN_CUDA_LIBS"
    return 0
  fi
  command -v python3 >/dev/null 2>&1 || return 1
  python3 - <<'PY' 2>/dev/null
import os, sys
for entry in sys.path:
    lib = os.path.join(entry or ".", "nvidia", "cu13", "lib")
    if os.path.isfile(os.path.join(lib, "libcublas.so.13")):
        print(os.path.abspath(lib))
        sys.exit(0)
sys.exit(1)
PY
}

if pagedgen_cuda_libs="$(pagedgen_find_cuda_libs)"; then
  case ":${LD_LIBRARY_PATH:-}:" in
    *":$pagedgen_cuda_libs:"*) ;;
    *) export LD_LIBRARY_PATH="$pagedgen_cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
  esac
fi
case ":$PATH:" in
  *":$pagedgen_bundle_dir/bin:"*) ;;
  *) export PATH="$pagedgen_bundle_dir/bin:$PATH" ;;
esac
unset pagedgen_cuda_libs
unset -f pagedgen_find_cuda_libs
