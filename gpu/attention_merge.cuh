// The merge of partial attention results by log-sum-exp, shared by the partition combine of
// paged_attention_kernel.cu and the part merge of tensor_attention_kernel.cu. Part i holds
// m_i (the max score it saw), l_i (its sum of exp(s - m_i)) and o_i (its sum of
// exp(s - m_i) v); the output is
//
//   out = sum_i exp(m_i - M) o_i / sum_i exp(m_i - M) l_i,   M = max_i m_i,
//
// each sum taken over i in order, so one (token, head) always gives the same bits. For .cu
// files only.
#pragma once

#include <cstdint>

#include "dtype_traits.cuh"

namespace pagedgen::gpu {

// Part i of the row is element first + i * stride of partial_max / partial_sum and row
// (first + i * stride) of partial_out; the thread block's threads split the dimensions.
template <typename Out, int kHeadDim>
__device__ __forceinline__ void merge_attention_parts(const float* partial_out, const float* partial_max,
                                                      const float* partial_sum, int64_t first, int32_t parts,
                                                      int64_t stride, Out* out /* [kHeadDim] */) {
  float max_all = -INFINITY;
  for (int32_t p = 0; p < parts; ++p) max_all = fmaxf(max_all, partial_max[first + p * stride]);
  float sum = 0.0f;
  for (int32_t p = 0; p < parts; ++p) {
    const int64_t i = first + p * stride;
    sum = fmaf(expf(partial_max[i] - max_all), partial_sum[i], sum);
  }
  const float inv_sum = 1.0f / sum;
  for (int d = threadIdx.x; d < kHeadDim; d += blockDim.x) {
    float o = 0.0f;
    for (int32_t p = 0; p < parts; ++p) {
      const int64_t i = first + p * stride;
      o = fmaf(expf(partial_max[i] - max_all), partial_out[i * kHeadDim + d], o);
    }
    out[d] = from_float<Out>(o * inv_sum);
  }
}

}  // namespace pagedgen::gpu
