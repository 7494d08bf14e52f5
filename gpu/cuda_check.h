// CUDA_CHECK and CUBLAS_CHECK: every CUDA runtime and cuBLAS call, and every kernel launch
// (CUDA_CHECK(cudaGetLastError())), goes through one of them; a failure throws Error with
// the expression, the file and line, and CUDA's own description. Safe for nvcc (no fmt).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace pagedgen::gpu {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* expression, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* expression, const char* file, int line);

}  // namespace pagedgen::gpu

#define CUDA_CHECK(expr)                                                                                     \
  do {                                                                                                       \
    const cudaError_t pg_status_ = (expr);                                                                   \
    if (pg_status_ != cudaSuccess) ::pagedgen::gpu::throw_cuda_error(pg_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(expr)                                                        \
  do {                                                                            \
    const cublasStatus_t pg_status_ = (expr);                                     \
    if (pg_status_ != CUBLAS_STATUS_SUCCESS)                                      \
      ::pagedgen::gpu::throw_cublas_error(pg_status_, #expr, __FILE__, __LINE__); \
  } while (0)
