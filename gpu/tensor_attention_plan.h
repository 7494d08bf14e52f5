// The host side of tensor-core paged attention (tensor_attention_kernel.h), no CUDA: which
// tiles a launch runs. A tile is up to kTensorTileRows (token, query head) rows, every
// query head of one KV head for tensor_tile_tokens(group) tokens, over one KV position
// range read through one sequence's block table:
//
//   prefill (plan_prefill_tiles): a sequence's new tokens in runs of tensor_tile_tokens,
//   each run over [0, its last position + 1), each row causal (positions <= its own); the
//   tile writes the output.
//
//   cascade decode (plan_cascade_tiles), one new token per sequence; its parts, in position
//   order, are the chunks of its shared-prefix groups' ranges and of its own ranges
//   (shared_prefix_groups.h), each at most chunk_tokens long:
//
//     seq 0  |  group A [0, 1024)    |  group A [1024, 2048) | own [2048, 2101) |
//     seq 1  |  group A [0, 1024)    |  group A [1024, 2048) | own [2048, 2090) |
//               part 0 (one tile for    part 1                 part 2 (a tile per
//               both tokens' rows)                             sequence)
//
//   A group's chunk is one tile per tensor_tile_tokens of its sequences, so its K/V are
//   read once per tile instead of once per sequence. A token with several parts gets that
//   many partial slots (running max, exp sum, unnormalized output) and a merge kernel
//   adds them by log-sum-exp in part order; a token with one part is written directly.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "shared_prefix_groups.h"
#include "step/step_batch.h"

namespace pagedgen::gpu {

inline constexpr int32_t kTensorTileRows = 64;

// Tokens per tile for GQA group `group` (query heads per KV head, <= kTensorTileRows).
constexpr int32_t tensor_tile_tokens(int32_t group) { return kTensorTileRows / group; }

struct TensorAttentionTile {
  int32_t seq;          // the sequence whose block table row the tile reads
  int32_t token_begin;  // its tokens: TensorAttentionPlan::tile_tokens[token_begin, token_begin + num_tokens)
  int32_t num_tokens;
  int32_t kv_begin;  // positions [kv_begin, kv_end); a row reads only those <= its token's position
  int32_t kv_end;
  int32_t part;  // which part of each of its tokens it computes
};

struct TensorAttentionPlan {
  std::vector<TensorAttentionTile> tiles;
  std::vector<int32_t> tile_tokens;    // batch token indices, by tile
  std::vector<int32_t> num_parts;      // [num_tokens] parts of each token (1: the tile writes the output)
  std::vector<int32_t> partial_index;  // [num_tokens] first partial slot of a token with > 1 part, else 0
  int32_t num_partials = 0;            // slots used
};

// Every sequence's tokens as prefill tiles (any batch; the output written directly).
TensorAttentionPlan plan_prefill_tiles(const StepBatch& batch, int32_t group);

// A decode step's tiles under `groups` (find_shared_prefix_groups of the same batch):
// parts of at most chunk_tokens positions, doubled until the partial slots fit in
// max_partials; nullopt when even parts as long as the longest range do not fit.
std::optional<TensorAttentionPlan> plan_cascade_tiles(const StepBatch& batch, const SharedPrefixPlan& groups,
                                                      int32_t group, int32_t chunk_tokens, int64_t max_partials);

// When the CUDA backend's bfloat16 and float16 decode steps run as cascade attention: a
// shared prefix is read once per tile when at least 4 sequences share at least 256
// positions. Chosen, not measured yet.
inline constexpr SharedPrefixPolicy kCascadePolicy{4, 256};

// How a bfloat16 or float16 step runs on tensor cores: a step with prefill tokens (a
// sequence with more than one new token) as prefill tiles; a decode step as cascade tiles
// when some of its sequences share a prefix that pays under `policy` and the partials
// fit; otherwise nullopt, and the step runs on the CUDA-core kernel (paged_attention_kernel.h).
std::optional<TensorAttentionPlan> plan_tensor_attention(const StepBatch& batch, int32_t group,
                                                         const SharedPrefixPolicy& policy, int32_t chunk_tokens,
                                                         int64_t max_partials);

}  // namespace pagedgen::gpu
