// CPU reference of the paged-cache operations: writing new K/V through the slot mapping,
// and causal attention that reads K/V through each sequence's block table. The CUDA
// kernels take the same arguments and are checked against these.
#pragma once

#include <cstddef>

#include "backend/cpu_thread_pool.h"
#include "backend/kv_layout.h"
#include "engine/step_batch.h"

namespace pagedgen::cpu {

// k_pool[layout.offset(block, h, slot, d)] = k[t][h][d] (and v alike) for each token t of
// the batch, where slot_mapping[t] = block * block_size + slot.
//   k, v: (num_tokens, num_kv_heads, head_dim);  k_pool, v_pool: one layer, see kv_layout.h
void write_kv_cache(const StepBatch& batch, const float* k, const float* v, KvLayout layout, float* k_pool,
                    float* v_pool);

// out (num_tokens, num_heads, head_dim): for token t of sequence s at position p and query
// head h, softmax over j = 0..p of scale * q.k_j, times v_j, with K/V of head
// h / (num_heads / num_kv_heads) read at position j through block_tables[s]:
//
//   position j  ->  block_tables[s][j / block_size], slot j % block_size
//
// The arithmetic follows j (scores, running max, exp sum, weighted V sum, all in
// increasing j), never the blocks, so the result is the same bits at every block size,
// for any block ids, and whatever else is in the batch. Multithreaded over (token, kv head).
//   q: (num_tokens, num_heads, head_dim)
void paged_attention(const StepBatch& batch, const float* q, std::size_t num_heads, const float* k_pool,
                     const float* v_pool, KvLayout layout, float scale, float* out, CpuThreadPool& pool);

}  // namespace pagedgen::cpu
