#include "cuda_check.h"

#include "cublaslt_library.h"
#include "util/error.h"

namespace pagedgen::gpu {

void throw_cuda_error(cudaError_t status, const char* expression, const char* file, int line) {
  throw Error(fmt::format("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(status), cudaGetErrorString(status),
                          expression, file, line));
}

void throw_cublas_error(cublasStatus_t status, const char* expression, const char* file, int line) {
  throw Error(fmt::format("cuBLAS error {} ({}) in {} at {}:{}", cublaslt().status_name(status),
                          cublaslt().status_string(status), expression, file, line));
}

}  // namespace pagedgen::gpu
