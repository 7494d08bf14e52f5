// One step's arrays on the device: the StepBatch's, its attention plans' and its overlap
// tokens, packed on the host (StepArrayPack), copied in one upload (staged_upload.h) and
// handed to the kernels as typed pointers into that copy.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "device_kv_pools.h"
#include "paged_attention_kernel.h"
#include "staged_upload.h"
#include "step/overlap_token.h"
#include "step/step_batch.h"
#include "step_attention_plans.h"
#include "tensor_attention_plan.h"

namespace pagedgen::gpu {

// Where the kernels outside attention read a step's token rows.
struct RowArrays {
  int32_t* token_ids;                             // [num_rows]
  const int32_t* positions;                       // [num_rows]
  std::array<const int64_t*, kMaxKvKinds> slots;  // by layer kind: [num_rows], -1 for padding
  const int32_t* logits_rows;                     // [num_logits]
  int32_t num_rows;                               // the batch's tokens, or a decode step's bucket
  int32_t num_logits;
};

// Where attention reads the step's sequences and plans.
struct AttentionArrays {
  const int32_t* query_start;                            // [num_seqs + 1]
  const int32_t* context_lens;                           // [num_seqs]
  std::array<const int32_t*, kMaxKvKinds> block_tables;  // by layer kind: [num_seqs][max_blocks_per_seq]
  // StepAttentionPlans::cuda_core, by AttentionPlanIndex:
  std::array<const AttentionWorkItem*, 2> items;  // [the plan's items]
  std::array<const int32_t*, 2> partial_index;    // [num_tokens]
  // StepAttentionPlans::tensor (null without one):
  const TensorAttentionTile* tiles;   // [tiles]
  const int32_t* tile_tokens;         // [tokens of the tiles]
  const int32_t* num_parts;           // [num_tokens]
  const int32_t* tile_partial_index;  // [num_tokens]
};

struct StepArrays {
  RowArrays rows;  // without with_rows (StepArrayPack), unset: DecodeRows gives them
  AttentionArrays attention;
  const OverlapToken* overlap_tokens;  // [num_overlap_tokens]
  int32_t num_overlap_tokens;
};

class StepArrayPack {
 public:
  // Packs the arrays of `batch` (its token rows only `with_rows`; the slots and block tables
  // of its first num_kinds layer kinds), of `plans` and `overlap_tokens`. They must live
  // until upload().
  StepArrayPack(const StepBatch& batch, std::size_t num_kinds, bool with_rows, const StepAttentionPlans& plans,
                std::span<const OverlapToken> overlap_tokens);

  // Queues the copy on `stream` through `upload`; the arrays' device addresses.
  StepArrays upload(StagedUpload& upload, cudaStream_t stream) const;

 private:
  // Where each array sits in pack_.
  struct TokenRows {
    PackedArray<int32_t> token_ids, positions, logits_rows;
    std::array<PackedArray<int64_t>, kMaxKvKinds> slots;
  };
  struct TensorTiles {
    PackedArray<TensorAttentionTile> tiles;
    PackedArray<int32_t> tile_tokens, num_parts, partial_index;
  };

  ArrayPack pack_;
  std::size_t num_kinds_;
  int32_t num_tokens_, num_logits_;
  std::optional<TokenRows> rows_;
  PackedArray<int32_t> query_start_, context_lens_;
  std::array<PackedArray<int32_t>, kMaxKvKinds> block_tables_;
  std::array<PackedArray<AttentionWorkItem>, 2> items_;
  std::array<PackedArray<int32_t>, 2> partial_index_;
  std::optional<TensorTiles> tensor_;
  PackedArray<OverlapToken> overlap_tokens_;
  int32_t num_overlap_tokens_;
};

}  // namespace pagedgen::gpu
