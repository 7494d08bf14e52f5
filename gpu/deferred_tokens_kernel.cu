#include "deferred_tokens_kernel.h"

#include "cuda_check.h"

namespace pagedgen::gpu {

namespace {

__global__ void fill_deferred_tokens_kernel(DeferredTokenArgs args) {
  const int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= args.num_deferred) return;
  const DeferredToken d = args.deferred[i];
  const int32_t token = args.previous_tokens[d.sampling_row];
  args.token_ids[d.token_index] = token >= 0 ? token : kFailedRowInputToken;
}

}  // namespace

void launch_fill_deferred_tokens(const DeferredTokenArgs& args, cudaStream_t stream) {
  if (args.num_deferred == 0) return;
  constexpr int kThreads = 256;
  fill_deferred_tokens_kernel<<<(args.num_deferred + kThreads - 1) / kThreads, kThreads, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace pagedgen::gpu
