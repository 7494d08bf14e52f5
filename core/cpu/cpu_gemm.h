// The CPU backend's batch-invariant matrix multiply. Every output element is the dot
// product of an x row and a w row in the fixed order of fixed_order_dot.h, whatever the
// number of rows, the row's place in the batch, the blocking or the thread count, so a
// token's activations are bitwise the same alone or batched (OpenBLAS sgemm is not).
#pragma once

#include <cstddef>

#include "backend/cpu_thread_pool.h"
#include "util/half.h"

namespace pagedgen::cpu {

// y (rows, out_features) = x (rows, in_features) @ w (out_features, in_features)^T
// Row-major, dense. Parallel over fixed chunks of out_features.
void gemm(const float* x, const float* w, float* y, std::size_t rows, std::size_t in_features, std::size_t out_features,
          CpuThreadPool& pool);
// The same with w stored as float16 or bfloat16 (the fast path keeps such matrices as they
// are): w's values are converted exactly as they are read, so y is the same bits as with
// their float32 values.
void gemm(const float* x, const Float16* w, float* y, std::size_t rows, std::size_t in_features,
          std::size_t out_features, CpuThreadPool& pool);
void gemm(const float* x, const BFloat16* w, float* y, std::size_t rows, std::size_t in_features,
          std::size_t out_features, CpuThreadPool& pool);

// The same product one element at a time with dot_fixed_order_scalar: slow, for tests.
void gemm_reference_order(const float* x, const float* w, float* y, std::size_t rows, std::size_t in_features,
                          std::size_t out_features);

}  // namespace pagedgen::cpu
