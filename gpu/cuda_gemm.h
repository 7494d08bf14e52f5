// The GEMMs of the CUDA backend through cuBLAS: y (m, n) float32 = x (m, k) @ w (n, k)^T,
// x and w in the device dtype, accumulated in float32 (bf16/fp16 on tensor cores; float32
// inputs with CUBLAS_COMPUTE_32F_PEDANTIC, so never TF32).
//
// Batch invariance: cuBLAS picks its kernel from the shape, so a row of y may round
// differently for another m. The CPU backend's GEMM is invariant by construction; on the
// GPU a token's results are identical across block sizes and block ids (attention reads
// positions, never blocks) and across runs of the same schedule, but not across schedules
// whose GEMM shapes differ. See the README's GPU section.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "device_buffer.h"
#include "device_dtype.h"

namespace pagedgen::gpu {

class CudaGemm {
 public:
  CudaGemm(cudaStream_t stream, DeviceDtype dtype);
  ~CudaGemm();
  CudaGemm(const CudaGemm&) = delete;
  CudaGemm& operator=(const CudaGemm&) = delete;

  // y (m, n) = x (m, k) @ w (n, k)^T; x and w of the dtype given at construction.
  void run(const void* x, const void* w, float* y, int64_t m, int64_t k, int64_t n) const;

  std::size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  cublasHandle_t handle_ = nullptr;
  DeviceDtype dtype_;
  DeviceBuffer workspace_;
};

}  // namespace pagedgen::gpu
