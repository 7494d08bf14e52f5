// Paged attention on tensor cores for bfloat16 and float16 KV pools (mma.sync m16n8k16,
// sm_80 and later), FlashAttention-2 style: one thread block per (tile, KV head) of
// tensor_attention_plan.h, 4 warps of 16 (token, query head) rows each; every query head
// of the KV head is a row, so a K/V tile is read once for all of them (GQA).
//
//   for each KV tile of kv_tile positions in [kv_begin, kv_end), gathered through the block
//   table into shared memory (positions past kv_end as zeros):
//     S = Q K^T               (16 x kv_tile per warp, float32 accumulators)
//     S = scale * S, -inf where the position is past the row's token (causal)
//     m' = max(m, rowmax S);  P = exp(S - m');  l = l exp(m - m') + rowsum P
//     O  = O exp(m - m') + P V   (P rounded to the KV type, as FlashAttention does)
//   out = O / l, or (m, l, O) into the token's partial slot of this part, merged by
//   launch_tensor_attention afterwards (attention_merge.cuh).
//
// A row's arithmetic depends only on its position, the tile's KV range and the head
// dimension, never on the block size, the block ids or the other rows of its tile. It is
// not the float32 kernel's order: float32 stays on paged_attention_kernel.h (the exact
// path), and a bfloat16 result may change with the kernel that computes it (README, GPU).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/paged_attention_args.h"
#include "tensor_attention_plan.h"

namespace pagedgen::gpu {

struct TensorAttentionWork {
  const TensorAttentionTile* tiles;  // [num_tiles]
  int32_t num_tiles;
  const int32_t* tile_tokens;    // TensorAttentionPlan::tile_tokens
  const int32_t* num_parts;      // [num_tokens]
  const int32_t* partial_index;  // [num_tokens]
  int32_t num_partials;          // 0: no token has more than one part, no merge
  float* partial_out;            // [num_partials][num_heads][head_dim]
  float* partial_max;            // [num_partials][num_heads]
  float* partial_sum;            // [num_partials][num_heads]
};

// Head dimensions the kernel is compiled for (a subset of the CUDA-core kernel's: the
// others run there).
constexpr bool tensor_attention_supports_head_dim(int64_t head_dim) {
  return head_dim == 64 || head_dim == 128 || head_dim == 256;
}

// Runs the tiles, then merges the parts of every token that has more than one. Needs
// tensor_attention_supports_head_dim and num_heads / num_kv_heads <= kTensorTileRows; no
// sliding window or soft-cap (those layers run on the CUDA-core kernel).
template <typename Kv>
void launch_tensor_attention(const PagedAttentionArgsOf<Kv, Kv>& args, const TensorAttentionWork& work,
                             cudaStream_t stream);

}  // namespace pagedgen::gpu
