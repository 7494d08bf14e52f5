#include "penalty_kernels.h"

#include "cuda_check.h"

namespace pagedgen::gpu {

namespace {

constexpr int kThreads = 256;

// Block r: penalized[r] = logits[rows[r].logits_row], then its tokens' penalized logits
// (distinct ids, so no two threads write one element).
__global__ void __launch_bounds__(kThreads) penalize_kernel(PenaltyArgs args) {
  const DevicePenaltyRow row = args.rows[blockIdx.x];
  const float* src = args.logits + static_cast<int64_t>(row.logits_row) * args.vocab;
  float* dst = args.penalized + static_cast<int64_t>(blockIdx.x) * args.vocab;
  for (int32_t i = threadIdx.x; i < args.vocab; i += kThreads) dst[i] = src[i];
  __syncthreads();
  for (int32_t t = threadIdx.x; t < row.num_tokens; t += kThreads) {
    const DeviceTokenPenalty token = args.tokens[row.tokens_begin + t];
    dst[token.id] = sampling::penalized_logit(src[token.id], token.bias, token.in_sequence != 0,
                                              token.num_times_generated, row.penalties);
  }
}

}  // namespace

void launch_penalize(const PenaltyArgs& args, cudaStream_t stream) {
  if (args.num_rows == 0) return;
  penalize_kernel<<<args.num_rows, kThreads, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedgen::gpu
