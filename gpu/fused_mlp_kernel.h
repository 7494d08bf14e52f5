// The MLP's gate/up projection and gated activation in one kernel, for steps of few token
// rows in bfloat16 or float16 (when: fused_mlp_plan.h):
//
//   out[r][j] = gated(x[r] . w_gate_up[j], x[r] . w_gate_up[ffn + j])   r < num_rows, j < ffn
//
// with both dot products accumulated in float32 and one rounding to T at the end. It stands
// for CudaGemm into the float32 gate_up rows followed by launch_gated_activation, one launch
// instead of two and no gate_up traffic; its CPU reference is the gate/up GEMM followed by
// cpu::gated_activation, which it mirrors within T's rounding (the same gated() expression,
// float32 sums in another order than cuBLAS's). A row's sums are taken in an order fixed by
// `hidden` alone, so its output is the same bits whatever the other rows of the batch.
// It allocates nothing and never synchronises: decode graphs (decode_graphs.h) capture it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "model/model_config.h"

namespace pagedgen::gpu {

template <typename T>
struct FusedMlpArgs {
  const T* x;          // (num_rows, hidden) the normed MLP input, 16-byte aligned
  const T* w_gate_up;  // (2 * ffn, hidden) gate rows, then up rows, 16-byte aligned
  T* out;              // (num_rows, ffn) act(gate) * up, the w_down GEMM input
  int32_t num_rows;    // 1 to kFusedMlpKernelMaxRows (the backend: at most kFusedMlpMaxRows)
  int32_t hidden;      // a multiple of kFusedMlpVectorElements
  int32_t ffn;
  MlpActivation activation = MlpActivation::kSilu;
};

// T is __half or __nv_bfloat16. Arguments outside fused_mlp_supports, or misaligned
// pointers, throw (the backend takes the GEMM path for those).
template <typename T>
void launch_fused_mlp(const FusedMlpArgs<T>& args, cudaStream_t stream);

}  // namespace pagedgen::gpu
