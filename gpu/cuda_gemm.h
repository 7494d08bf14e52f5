// The GEMMs of the CUDA backend through cublasLt: y (m, n) float32 = x (m, k) @ w (n, k)^T,
// x and w in the device dtype, accumulated in float32 (bf16/fp16 on tensor cores; float32
// inputs with CUBLAS_COMPUTE_32F_PEDANTIC and no algorithm that rounds them to TF32/16 bits:
// a shape with no such algorithm throws, naming it, rather than round).
// Each shape's algorithm is cublasLt's heuristic pick for it, within the 32 MiB workspace
// owned here: asked on the shape's first call, cached, and only cublasLtMatmul runs after.
// run() never allocates device memory or synchronises, so it may be captured into a CUDA
// graph (decode_graphs.h), a shape's first call included (its heuristic query is host-side).
//
// Batch invariance: the algorithm comes from the shape alone (the heuristic's answer for
// (m, k, n) and the dtype on this device), so a row of y may round differently for another
// m. The CPU backend's GEMM is invariant by construction; on the GPU a token's results are
// identical across block sizes and block ids (attention reads positions, never blocks) and
// across runs of the same schedule, but not across schedules whose GEMM shapes differ. See
// the README's GPU section.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "device_buffer.h"
#include "device_dtype.h"

namespace pagedgen::gpu {

class CudaGemm {
 public:
  CudaGemm(cudaStream_t stream, DeviceDtype dtype);
  ~CudaGemm();
  CudaGemm(const CudaGemm&) = delete;
  CudaGemm& operator=(const CudaGemm&) = delete;

  // y (m, n) = x (m, k) @ w (n, k)^T; x and w of the dtype given at construction; x, w and
  // y 256-byte aligned (as cudaMalloc and the device weight layout give them), which the
  // cached algorithms assume.
  void run(const void* x, const void* w, float* y, int64_t m, int64_t k, int64_t n);

  std::size_t workspace_bytes() const { return workspace_.bytes(); }
  std::size_t num_cached_shapes() const { return plans_.size(); }

 private:
  struct Shape {
    int64_t m, k, n;
    auto operator<=>(const Shape&) const = default;
  };
  struct Plan;  // a shape's descriptors and algorithm

  const Plan& plan(const Shape& shape);
  // The heuristic's first algorithm for a plan's descriptors under `preference`; `status`
  // is the query's.
  std::optional<cublasLtMatmulAlgo_t> heuristic_algorithm(const Plan& p, cublasLtMatmulPreference_t preference,
                                                          cublasStatus_t& status) const;
  std::string no_algorithm_message(const Shape& shape, const Plan& p, cublasStatus_t status) const;

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cudaStream_t stream_;
  DeviceDtype dtype_;
  DeviceBuffer workspace_;
  std::map<Shape, std::unique_ptr<Plan>> plans_;
};

}  // namespace pagedgen::gpu
