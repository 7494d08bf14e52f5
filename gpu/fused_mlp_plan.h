// When the CUDA backend runs the MLP's gate/up projection and gated activation as one fused
// kernel (fused_mlp_kernel.h) instead of a cuBLAS GEMM into float32 gate/up rows followed by
// the activation kernel. No CUDA: the rule is unit-tested on any machine.
#pragma once

#include <cstdint>

#include "device_dtype.h"

namespace pagedgen::gpu {

// The most token rows the backend gives the fused kernel: the decode buckets 1, 2, 4 and 8,
// where the gate/up GEMM reads its weights once for very few rows and is bound by memory
// bandwidth. Chosen, not measured: no GPU has run the kernel yet (scripts/bench_kernels.cpp's
// mlp_gate_up rows compare it with cuBLAS + the activation at 1, 4, 8, 12 and 16 rows).
inline constexpr int32_t kFusedMlpMaxRows = 8;

// The most rows the kernel itself takes: more than the backend gives it, so that the
// benchmark can time it past kFusedMlpMaxRows, where the crossover with cuBLAS says whether
// that threshold is right.
inline constexpr int32_t kFusedMlpKernelMaxRows = 16;

// Elements of one 16-byte load of bfloat16/float16: the hidden size must be a multiple.
inline constexpr int32_t kFusedMlpVectorElements = 8;

// Whether the fused kernel takes num_rows rows of a GEMM input `hidden` wide: 1 to
// kFusedMlpKernelMaxRows rows, hidden a positive multiple of kFusedMlpVectorElements.
bool fused_mlp_supports(int32_t num_rows, int64_t hidden);

// Whether a step of num_rows token rows runs its MLP through the fused kernel: bfloat16 and
// float16 only (float32 is the exactness path and stays on cuBLAS pedantic and the separate
// activation), at most kFusedMlpMaxRows rows, and only where fused_mlp_supports.
bool use_fused_mlp(DeviceDtype dtype, int32_t num_rows, int64_t hidden);

}  // namespace pagedgen::gpu
