#include "overlap_tokens_kernel.h"

#include "cuda_check.h"

namespace pagedgen::gpu {

namespace {

__global__ void fill_overlap_tokens_kernel(OverlapTokenArgs args) {
  const int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= args.num_overlap_tokens) return;
  const OverlapToken t = args.tokens[i];
  const int32_t token = args.previous_tokens[t.sampling_row];
  args.token_ids[t.token_index] = token >= 0 ? token : kFailedRowInputToken;
}

}  // namespace

void launch_fill_overlap_tokens(const OverlapTokenArgs& args, cudaStream_t stream) {
  if (args.num_overlap_tokens == 0) return;
  constexpr int kThreads = 256;
  fill_overlap_tokens_kernel<<<(args.num_overlap_tokens + kThreads - 1) / kThreads, kThreads, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedgen::gpu
