// Paged attention on the device, one kernel for decode, prefill and chunked prefill.
//
// Work is cut in positions, never in blocks: a query at position p reads positions 0..p in
// partitions of kAttentionPartitionTokens positions. One thread block takes one work item
// (up to kAttentionMaxRows (query, head) rows of one sequence and one KV head) and one
// partition:
//
//   positions   0 ........ 255 | 256 ........ 511 | 512 .. p
//               partition 0    | partition 1      | partition 2     <- one block each
//                  (m0, l0, o0)     (m1, l1, o1)     (m2, l2, o2)   running max, exp sum, sum w*v
//   out = sum_i exp(m_i - M) o_i / sum_i exp(m_i - M) l_i,   M = max_i m_i   (combine, i in order)
//
// With a sliding window W the query reads positions max(0, p-W+1)..p only, so its
// partitions are [attention_first_partition(p, W), attention_partitions(p)); the ones
// before are neither launched nor read (their blocks may be given back already):
//
//   positions   0 ... 255 | 256 ... 511 | 512 ... 767 | 768 .. 900     p = 900, W = 300
//               not read  | not read    | partition 2 | partition 3    window starts at 601
//
// Scores are s = scale * q.k, and with a soft-cap c > 0 (Gemma 2) s = c * tanh(s / c),
// before the max; positions outside a query's window score -inf.
// A query with one partition writes o / l directly (the same bits the combine would give).
// Inside a partition each score and each output element is reduced in an order fixed by
// the head dimension and the element type alone, so a token's result does not depend on
// the block size, the block ids, the batch, or whether it is decoded or prefilled.
// CPU reference: cpu::paged_attention (same PagedAttentionArgs; tolerance in the tests).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/paged_attention_args.h"
#include "util/host_device.h"

namespace pagedgen::gpu {

inline constexpr int32_t kAttentionPartitionTokens = 256;
inline constexpr int32_t kAttentionMaxRows = 8;  // (query, head) rows per thread block

// One past the last partition a query at `position` reads.
PG_HOST_DEVICE constexpr int32_t attention_partitions(int32_t position) {
  return position / kAttentionPartitionTokens + 1;
}

// The first position a query at `position` reads with a sliding window of `window`
// positions (0: no window), as cpu::paged_attention has it.
PG_HOST_DEVICE constexpr int32_t attention_window_start(int32_t position, int32_t window) {
  return window > 0 && position >= window ? position - window + 1 : 0;
}

// The first partition a query at `position` reads: it reads
// [attention_first_partition, attention_partitions).
PG_HOST_DEVICE constexpr int32_t attention_first_partition(int32_t position, int32_t window) {
  return attention_window_start(position, window) / kAttentionPartitionTokens;
}

// Query tokens of one sequence per work item: every query head of a KV head is a row.
constexpr int32_t attention_queries_per_item(int32_t group) {
  return group >= kAttentionMaxRows ? 1 : kAttentionMaxRows / group;
}

// Up to attention_queries_per_item consecutive tokens of one sequence, one partition of
// those that one of them reads.
struct AttentionWorkItem {
  int32_t seq;
  int32_t first_token;
  int32_t num_queries;
  int32_t partition;
};

// What one launch works on, beyond PagedAttentionArgsOf (device pointers).
struct AttentionWork {
  const AttentionWorkItem* items;  // [num_items]
  int32_t num_items;
  int32_t token_begin;  // the launch's tokens: [token_begin, token_end)
  int32_t token_end;
  const int32_t* partial_index;  // [batch tokens] partial of the first partition of a token with > 1
  float* partial_out;            // [partials][num_heads][head_dim]
  float* partial_max;            // [partials][num_heads]
  float* partial_sum;            // [partials][num_heads]
};

// Head dimensions the kernel is compiled for.
constexpr bool attention_supports_head_dim(int64_t head_dim) {
  return head_dim == 64 || head_dim == 96 || head_dim == 128 || head_dim == 256;
}

// Runs the work items, then combines the partitions of the launch's tokens that read more
// than one. Needs attention_supports_head_dim and num_heads / num_kv_heads <= kAttentionMaxRows;
// args.window and args.softcap as the plan and the model have them (0: none).
template <typename Kv, typename Out>
void launch_paged_attention(const PagedAttentionArgsOf<Kv, Out>& args, const AttentionWork& work, cudaStream_t stream);

}  // namespace pagedgen::gpu
