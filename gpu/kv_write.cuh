// One token's K and V rows into the paged pools through its slot (padding rows, slot < 0,
// write nothing): the body of launch_write_kv_cache, shared with the RoPE kernel that
// writes the cache as it goes (llama_kernels.h). For .cu files only.
#pragma once

#include <cstdint>

#include "backend/paged_attention_args.h"
#include "dtype_traits.cuh"

namespace pagedgen::gpu {

// The thread block's threads split (kv head, dim) of token t.
template <typename Kv>
__device__ __forceinline__ void write_kv_row(const KvWriteArgsOf<Kv>& args, int64_t t) {
  if (args.slot_mapping[t] < 0) return;
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

}  // namespace pagedgen::gpu
