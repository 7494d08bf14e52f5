// The arguments of the paged-cache operations (KV write through the slot mapping, paged
// attention), as by-value structs of pointers, sizes and the KV layout, shared by the CPU
// reference (paged_attention.h) and the CUDA kernels, which read host or device pointers
// respectively. The element types of the KV pools (and of the attention output) are
// template parameters so the CUDA backend can keep them in bf16 or fp16; the CPU backend
// uses the float32 aliases KvWriteArgs and PagedAttentionArgs. No CUDA includes.
#pragma once

#include <cstdint>

#include "backend/kv_layout.h"

namespace pagedgen {

// k_pool[layout.offset(block, h, slot, d)] = k[t][h][d] (v alike), where
// slot_mapping[t] = block * layout.block_size + slot.
template <typename Kv>
struct KvWriteArgsOf {
  const float* k;               // (num_tokens, num_kv_heads, head_dim)
  const float* v;               // (num_tokens, num_kv_heads, head_dim)
  const int64_t* slot_mapping;  // [num_tokens]
  int32_t num_tokens;
  Kv* k_pool;  // one layer: layout.elements_per_layer()
  Kv* v_pool;  // one layer: layout.elements_per_layer()
  KvLayout layout;
};
using KvWriteArgs = KvWriteArgsOf<float>;

// Causal attention of every new token over its sequence's cached K/V, read through the
// block table. Token t of sequence s (query_start[s] <= t < query_start[s+1]) at position
// p = positions[t] attends to positions 0..p (with a sliding window W: max(0, p-W+1)..p);
// position j lives at
//
//   block_tables[s * max_blocks_per_seq + j / block_size], slot j % block_size
//
// Query head h reads KV head h / (num_heads / num_kv_heads) (GQA).
template <typename Kv, typename Out>
struct PagedAttentionArgsOf {
  const float* q;               // (num_tokens, num_heads, head_dim)
  const Kv* k_pool;             // one layer: layout.elements_per_layer()
  const Kv* v_pool;             // one layer: layout.elements_per_layer()
  Out* out;                     // (num_tokens, num_heads, head_dim)
  const int32_t* positions;     // [num_tokens]
  const int32_t* query_start;   // [num_seqs + 1]
  const int32_t* context_lens;  // [num_seqs] positions < context_lens[s] are cached
  const int32_t* block_tables;  // [num_seqs][max_blocks_per_seq]
  int32_t num_tokens;
  int32_t num_seqs;
  int32_t max_blocks_per_seq;
  int32_t num_heads;
  float scale;  // softmax scale, 1 / sqrt(head_dim) for Llama
  KvLayout layout;
  int32_t window = 0;    // > 0: the sliding window W above; 0: every position
  float softcap = 0.0f;  // > 0: scores s = scale * q . k become softcap * tanh(s / softcap); 0: none
};
using PagedAttentionArgs = PagedAttentionArgsOf<float, float>;

}  // namespace pagedgen
