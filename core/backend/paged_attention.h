// CPU reference of the paged-cache operations: writing new K/V through the slot mapping,
// and causal attention that reads K/V through each sequence's block table. The CUDA
// kernels take the same argument structs (paged_attention_args.h) and are checked
// against these.
#pragma once

#include "backend/cpu_thread_pool.h"
#include "backend/paged_attention_args.h"
#include "step/step_batch.h"

namespace pagedgen::cpu {

// Copies each new token's K and V heads to its slot in one layer's pools.
void write_kv_cache(const KvWriteArgs& args);

// out = softmax(scale * q . k_j) . v_j over j = 0..p for every token and query head. The
// arithmetic follows j (scores, max, exp sum, weighted V sum, all in increasing j), never
// the blocks, so the result is the same bits at every block size, for any block ids, and
// whatever else is in the batch. Multithreaded over (token, kv head).
void paged_attention(const PagedAttentionArgs& args, CpuThreadPool& pool);

// The argument structs for one layer of a StepBatch (host pointers into the batch).
KvWriteArgs kv_write_args(const StepBatch& batch, const float* k, const float* v, float* k_pool, float* v_pool,
                          KvLayout layout);
PagedAttentionArgs paged_attention_args(const StepBatch& batch, const float* q, int32_t num_heads, const float* k_pool,
                                        const float* v_pool, KvLayout layout, float scale, float* out);

}  // namespace pagedgen::cpu
