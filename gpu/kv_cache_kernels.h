// The kernels that write the paged KV cache: new K/V through the slot mapping, and whole
// block copies for copy-on-write. Addresses come from kv_layout.h, as on the CPU.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/paged_attention_args.h"
#include "step/step_batch.h"

namespace pagedgen::gpu {

// k_pool[layout.offset(block, h, slot, d)] = Kv(k[t][h][d]) (v alike); a token whose slot
// is negative (padding) is skipped. CPU: cpu::write_kv_cache (same argument struct, float
// pools; the CPU has no padding).
template <typename Kv>
void launch_write_kv_cache(const KvWriteArgsOf<Kv>& args, cudaStream_t stream);

// Every pool of the KV cache in one allocation: pool i (layer i / 2, K when i is even, V
// when odd) starts at pools + i * pool_bytes; a block is block_bytes at block_id * block_bytes.
struct BlockCopyArgs {
  const BlockCopy* copies;  // [num_copies], on the device
  int32_t num_copies;
  std::byte* pools;
  int64_t pool_bytes;
  int32_t num_pools;    // 2 * num_layers
  int64_t block_bytes;  // a multiple of 4
};

// Copies every listed block in every pool. The copies of one launch run in parallel, so
// the caller splits a list where a copy reads a block an earlier copy writes.
// CPU: CpuBackend::copy_blocks.
void launch_copy_blocks(const BlockCopyArgs& args, cudaStream_t stream);

}  // namespace pagedgen::gpu
