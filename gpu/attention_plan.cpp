#include "attention_plan.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen::gpu {

namespace {

// The partitions a token reads: [first, end).
struct PartitionRange {
  int32_t first;
  int32_t end;
  // Partial slots the token needs: none when it writes its output directly.
  int32_t num_partials() const { return end - first > 1 ? end - first : 0; }
};

}  // namespace

AttentionPlan plan_attention(const StepBatch& batch, int32_t group, int64_t max_partials, int32_t window) {
  PG_CHECK(window >= 0, "attention window {} is negative (0 means none)", window);
  AttentionPlan plan;
  plan.partial_index.assign(static_cast<std::size_t>(batch.num_tokens), 0);
  const int32_t tile_size = attention_queries_per_item(group);
  AttentionLaunch launch{0, 0, 0, 0, 0};
  auto partitions_of = [&](int32_t token) {
    const int32_t position = batch.positions[static_cast<std::size_t>(token)];
    return PartitionRange{attention_first_partition(position, window), attention_partitions(position)};
  };
  for (int32_t s = 0; s < batch.num_seqs; ++s) {
    const int32_t end = batch.query_start[static_cast<std::size_t>(s) + 1];
    for (int32_t first = batch.query_start[static_cast<std::size_t>(s)]; first < end; first += tile_size) {
      const int32_t num_queries = std::min(tile_size, end - first);
      int32_t tile_partials = 0;
      PartitionRange tile = partitions_of(first);
      for (int32_t t = first; t < first + num_queries; ++t) {
        const PartitionRange range = partitions_of(t);
        tile_partials += range.num_partials();
        tile = PartitionRange{std::min(tile.first, range.first), std::max(tile.end, range.end)};
      }
      PG_CHECK(tile_partials <= max_partials, "one attention tile needs {} partial slots, the workspace holds {}",
               tile_partials, max_partials);
      if (launch.num_partials + tile_partials > max_partials) {
        launch.item_end = static_cast<int32_t>(plan.items.size());
        launch.token_end = first;
        plan.launches.push_back(launch);
        launch = AttentionLaunch{launch.item_end, launch.item_end, first, first, 0};
      }
      for (int32_t t = first; t < first + num_queries; ++t) {
        const int32_t partials = partitions_of(t).num_partials();
        if (partials > 0) plan.partial_index[static_cast<std::size_t>(t)] = launch.num_partials;
        launch.num_partials += partials;
      }
      for (int32_t p = tile.first; p < tile.end; ++p) plan.items.push_back(AttentionWorkItem{s, first, num_queries, p});
    }
  }
  launch.item_end = static_cast<int32_t>(plan.items.size());
  launch.token_end = batch.num_tokens;
  if (launch.item_end > launch.item_begin) plan.launches.push_back(launch);
  return plan;
}

}  // namespace pagedgen::gpu
