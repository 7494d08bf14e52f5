// CPU reference of the paged-cache operations: writing new K/V through the slot mapping,
// and causal attention that reads K/V through each sequence's block table. The CUDA
// kernels take the same argument structs (paged_attention_args.h) and are checked
// against these.
#pragma once

#include "backend/cpu_thread_pool.h"
#include "backend/paged_attention_args.h"
#include "step/step_batch.h"

namespace pagedgen::cpu {

// Each function takes the KV pools in any stored form of kv_dtype.h (float, Float16,
// BFloat16); the float32 aliases KvWriteArgs and PagedAttentionArgs are the exact path's.

// Copies each new token's K and V heads to its slot in one layer's pools, rounded to the
// pools' element type.
template <typename Kv>
void write_kv_cache(const KvWriteArgsOf<Kv>& args);

// out = softmax(cap(scale * q . k_j)) . v_j over j = 0..p (or the window's positions) for
// every token and query head, cap the soft-cap or none (paged_attention_args.h). The
// arithmetic follows j (scores, max, exp sum, weighted V sum, all in increasing j), never
// the blocks, so the result is the same bits at every block size, for any block ids, and
// whatever else is in the batch. Multithreaded over (token, kv head, query heads).
template <typename Kv>
void paged_attention(const PagedAttentionArgsOf<Kv, float>& args, CpuThreadPool& pool);

// The argument structs for one layer of a StepBatch (host pointers into the batch).
template <typename Kv>
KvWriteArgsOf<Kv> kv_write_args(const StepBatch& batch, const float* k, const float* v, Kv* k_pool, Kv* v_pool,
                                KvLayout layout);
template <typename Kv>
PagedAttentionArgsOf<Kv, float> paged_attention_args(const StepBatch& batch, const float* q, int32_t num_heads,
                                                     const Kv* k_pool, const Kv* v_pool, KvLayout layout, float scale,
                                                     float* out, int32_t window = 0, float softcap = 0.0f);

}  // namespace pagedgen::cpu
