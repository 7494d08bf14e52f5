#include "kv_cache_kernels.h"

#include "cuda_check.h"
#include "kv_write.cuh"

namespace pagedgen::gpu {

namespace {

// One block per token; threads over (kv head, dim).
template <typename Kv>
__global__ void write_kv_cache_kernel(KvWriteArgsOf<Kv> args) {
  write_kv_row(args, blockIdx.x);  // a padding row of a decode step (decode_rows.h) writes nothing
}

// Block (copy c, pool p): copies block_bytes as 32-bit words.
__global__ void copy_blocks_kernel(BlockCopyArgs args) {
  const BlockCopy copy = args.copies[blockIdx.x];
  std::byte* pool = args.pools + blockIdx.y * args.pool_bytes;
  const auto* src = reinterpret_cast<const uint32_t*>(pool + copy.src * args.block_bytes);
  auto* dst = reinterpret_cast<uint32_t*>(pool + copy.dst * args.block_bytes);
  for (int64_t i = threadIdx.x; i < args.block_bytes / 4; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

template <typename Kv>
void launch_write_kv_cache(const KvWriteArgsOf<Kv>& args, cudaStream_t stream) {
  if (args.num_tokens == 0) return;
  write_kv_cache_kernel<Kv><<<args.num_tokens, 256, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

void launch_copy_blocks(const BlockCopyArgs& args, cudaStream_t stream) {
  if (args.num_copies == 0) return;
  copy_blocks_kernel<<<dim3(static_cast<unsigned>(args.num_copies), static_cast<unsigned>(args.num_pools)), 256, 0,
                       stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
}

template void launch_write_kv_cache<float>(const KvWriteArgsOf<float>&, cudaStream_t);
template void launch_write_kv_cache<__half>(const KvWriteArgsOf<__half>&, cudaStream_t);
template void launch_write_kv_cache<__nv_bfloat16>(const KvWriteArgsOf<__nv_bfloat16>&, cudaStream_t);

}  // namespace pagedgen::gpu
