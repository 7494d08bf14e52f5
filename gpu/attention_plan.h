// The host side of paged attention on the device: which work items (tokens x partition)
// each launch runs, and where each token's partial results go. Built per step from the
// StepBatch; the partial-result workspace bounds how many tokens one launch may take.
#pragma once

#include <cstdint>
#include <vector>

#include "step/step_batch.h"
#include "paged_attention_kernel.h"

namespace pagedgen::gpu {

struct AttentionLaunch {
  int32_t item_begin;  // items [item_begin, item_end) of AttentionPlan::items
  int32_t item_end;
  int32_t token_begin;  // the tokens those items cover: [token_begin, token_end)
  int32_t token_end;
  int32_t num_partials;  // partial slots used, <= max_partials
};

struct AttentionPlan {
  std::vector<AttentionWorkItem> items;
  std::vector<int32_t> partial_index;  // [num_tokens] slot of the token's first partition, relative to its
                                       // launch; 0 for a token that reads one partition
  std::vector<AttentionLaunch> launches;
};

// Tiles each sequence's tokens into items of attention_queries_per_item(group) tokens, one
// item per partition that a query of the tile reads: [min first, max end) over its tokens
// of [attention_first_partition(p, window), attention_partitions(p)), window 0 for none.
// Launches are cut so that none needs more than max_partials partial slots (one slot per
// (token, partition read) of a token that reads more than one partition); max_partials
// must hold one tile at the longest context: attention_queries_per_item(group) *
// attention_partitions(max position). A pure function of the batch's positions and
// query_start and of the arguments, so a model computes one plan per window it has.
AttentionPlan plan_attention(const StepBatch& batch, int32_t group, int64_t max_partials, int32_t window);

}  // namespace pagedgen::gpu
