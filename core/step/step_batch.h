// StepBatch: everything one forward step needs, as plain flat arrays, so that the CPU and
// CUDA backends read the same thing and the engine never knows which one runs.
//
// Example: two sequences, block_size 4. Sequence 0 prefills 3 new tokens after 5 cached
// ones (context 8); sequence 1 decodes 1 token (context 6).
//   token_ids     [t0 t1 t2 | u0]          positions [5 6 7 | 5]
//   query_start   [0, 3, 4]                context_lens [8, 6]
//   slot_mapping  [block_of(pos) * block_size + pos % block_size, ...] per token
//   block_tables  row s lists sequence s's physical block ids, padded to max_blocks
//   logits_rows   [2, 3]: the last token of each sequence needs logits
//
// A model with sliding-window layers has more layer kinds (kv_kinds.h), each with its own
// block ids: slot_mapping and block_tables are kind 0's, window_kinds[k - 1] holds kind k's
// in the same shapes. Without window_kinds every layer reads kind 0's (one kind).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "step/kv_kinds.h"

namespace pagedgen {

// The slots and block tables of one window kind; entries of blocks a sequence gave back
// (below every position its queries reach) are 0 and never read.
struct KindTables {
  std::vector<int64_t> slot_mapping;  // [num_tokens] that kind's block_id * block_size + offset
  std::vector<int32_t> block_tables;  // [num_seqs][max_blocks_per_seq] that kind's physical block ids
};

struct StepBatch {
  int32_t num_seqs = 0;
  int32_t num_tokens = 0;
  int32_t block_size = 0;
  int32_t max_blocks_per_seq = 0;  // row stride of block_tables

  std::vector<int32_t> token_ids;        // [num_tokens]
  std::vector<int32_t> positions;        // [num_tokens] position of each token in its sequence
  std::vector<int64_t> slot_mapping;     // [num_tokens] make_slot(block_id, offset) (kv_slot.h): where its K/V go
  std::vector<int32_t> query_start;      // [num_seqs + 1] tokens of sequence s: [query_start[s], query_start[s+1])
  std::vector<int32_t> context_lens;     // [num_seqs] tokens visible to the sequence's last query (cached + new)
  std::vector<int32_t> block_tables;     // [num_seqs][max_blocks_per_seq] physical block ids
  std::vector<int32_t> logits_rows;      // [num_logits] token indices whose logits are returned, ascending
  std::vector<KindTables> window_kinds;  // [num_kinds - 1] kinds 1, 2, ...; empty: every layer reads kind 0's

  // Kind k's slot mapping and block tables.
  std::span<const int64_t> kind_slot_mapping(KvKindId kind) const {
    return kind == 0 ? std::span(slot_mapping)
                     : std::span(window_kinds.at(static_cast<std::size_t>(kind) - 1).slot_mapping);
  }
  std::span<const int32_t> kind_block_tables(KvKindId kind) const {
    return kind == 0 ? std::span(block_tables)
                     : std::span(window_kinds.at(static_cast<std::size_t>(kind) - 1).block_tables);
  }
};

// One copy-on-write (or partial prefix) block copy: K and V of block `src` into block `dst`
// in every layer of kind `kind` (kind 0's ids on a model of one kind).
struct BlockCopy {
  int32_t src;
  int32_t dst;
  KvKindId kind = 0;
};

}  // namespace pagedgen
