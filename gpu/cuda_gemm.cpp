#include "cuda_gemm.h"

#include "cuda_check.h"

namespace pagedgen::gpu {

namespace {

// cuBLAS's workspace, owned here so that the memory report counts it.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

cudaDataType_t cuda_data_type(DeviceDtype dtype) {
  switch (dtype) {
    case DeviceDtype::F16:
      return CUDA_R_16F;
    case DeviceDtype::BF16:
      return CUDA_R_16BF;
    case DeviceDtype::F32:
      break;
  }
  return CUDA_R_32F;
}

}  // namespace

CudaGemm::CudaGemm(cudaStream_t stream, DeviceDtype dtype) : dtype_(dtype), workspace_(kWorkspaceBytes) {
  CUBLAS_CHECK(cublasCreate(&handle_));
  CUBLAS_CHECK(cublasSetStream(handle_, stream));
  CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()));
}

CudaGemm::~CudaGemm() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

void CudaGemm::run(const void* x, const void* w, float* y, int64_t m, int64_t k, int64_t n) const {
  if (m == 0) return;
  // Row-major y = x w^T is column-major y^T (n, m) = w (n, k) . x^T (k, m): cuBLAS sees w
  // as a (k, n) column-major matrix to transpose and x as (k, m) as it is.
  const float alpha = 1.0f;
  const float beta = 0.0f;
  const cudaDataType_t type = cuda_data_type(dtype_);
  const cublasComputeType_t compute =
      dtype_ == DeviceDtype::F32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                            static_cast<int>(k), &alpha, w, type, static_cast<int>(k), x, type, static_cast<int>(k),
                            &beta, y, CUDA_R_32F, static_cast<int>(n), compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace pagedgen::gpu
