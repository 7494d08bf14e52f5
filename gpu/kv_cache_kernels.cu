#include "kv_cache_kernels.h"

#include "cuda_check.h"
#include "dtype_traits.cuh"

namespace pagedgen::gpu {

namespace {

// One block per token; threads over (kv head, dim).
template <typename Kv>
__global__ void write_kv_cache_kernel(KvWriteArgsOf<Kv> args) {
  const int64_t t = blockIdx.x;
  if (args.slot_mapping[t] < 0) return;  // a padding row of a decode step (cuda_backend.cpp) writes nothing
  const KvLayout layout = args.layout;
  const KvSlot slot = split_slot(args.slot_mapping[t], layout.block_size);
  const int64_t width = layout.num_kv_heads * layout.head_dim;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    const int64_t h = i / layout.head_dim;
    const int64_t d = i % layout.head_dim;
    const int64_t dst = layout.offset(slot.block_id, h, slot.slot_in_block, d);
    args.k_pool[dst] = from_float<Kv>(args.k[t * width + i]);
    args.v_pool[dst] = from_float<Kv>(args.v[t * width + i]);
  }
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
