// cuBLASLt, loaded by name when the CUDA backend plans its first GEMM instead of linked: a
// run on the CPU never maps the library (libcublasLt and libcublas take ~575 MB of address
// space, which `ulimit -v` counts, against ~160 MB for the rest of the binary), and the
// binary starts where CUDA's math libraries are not installed. The library is found the
// dynamic loader's way: LD_LIBRARY_PATH (the GPU bundle's env.sh sets it), then the system's.
#pragma once

#include <cublasLt.h>

#include <string>

namespace pagedgen::gpu {

// The cuBLASLt functions the backend calls, resolved from libcublasLt.so.<CUBLAS_VER_MAJOR>.
struct CublasLt {
  decltype(&::cublasLtCreate) create;
  decltype(&::cublasLtDestroy) destroy;
  decltype(&::cublasLtGetStatusName) status_name;
  decltype(&::cublasLtGetStatusString) status_string;
  decltype(&::cublasLtMatmul) matmul;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic;
  decltype(&::cublasLtMatmulDescCreate) desc_create;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set_attribute;
  decltype(&::cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&::cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy;
};

// The library's name as the loader is asked for it ("libcublasLt.so.13").
const std::string& cublaslt_library_name();

// The functions, the library loaded on the first call (once, thread-safe). Throws Error
// naming the library, the loader's message and what to do when it or a function is missing.
const CublasLt& cublaslt();

// Whether the library is loaded in this process (for tests: a CPU run never loads it).
bool cublaslt_loaded();

}  // namespace pagedgen::gpu
