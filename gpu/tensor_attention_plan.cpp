#include "tensor_attention_plan.h"

#include <algorithm>

#include "util/error.h"

namespace pagedgen::gpu {

namespace {

void check_group(int32_t group) {
  PG_CHECK(group >= 1 && group <= kTensorTileRows, "a tile holds {} rows, not one token of {} query heads",
           kTensorTileRows, group);
}

// A stretch of a sequence's positions and where it comes from: a group, or its own (nullopt).
struct Segment {
  KvRange range;
  std::optional<std::size_t> group;
};

int32_t chunks_of(const KvRange& r, int32_t chunk_tokens) {
  return (r.end - r.begin + chunk_tokens - 1) / chunk_tokens;
}

// Each sequence's segments, its own ranges and its groups', in position order.
std::vector<std::vector<Segment>> sequence_segments(const StepBatch& batch, const SharedPrefixPlan& groups) {
  const auto num_seqs = static_cast<std::size_t>(batch.num_seqs);
  std::vector<std::vector<Segment>> segments(num_seqs);
  for (std::size_t s = 0; s < num_seqs; ++s) {
    PG_CHECK(batch.query_start[s + 1] - batch.query_start[s] == 1, "cascade tiles for sequence {} with {} new tokens",
             s, batch.query_start[s + 1] - batch.query_start[s]);
    for (const KvRange& r : groups.own_ranges[s]) segments[s].push_back(Segment{r, std::nullopt});
  }
  for (std::size_t g = 0; g < groups.groups.size(); ++g)
    for (int32_t s : groups.groups[g].seqs)
      segments[static_cast<std::size_t>(s)].push_back(Segment{groups.groups[g].range, g});
  for (auto& list : segments)
    std::sort(list.begin(), list.end(),
              [](const Segment& a, const Segment& b) { return a.range.begin < b.range.begin; });
  return segments;
}

// The partial slots parts of `chunk` positions take: every part of a token with more than one.
int64_t count_partials(const std::vector<std::vector<Segment>>& segments, int32_t chunk) {
  int64_t total = 0;
  for (const auto& list : segments) {
    int64_t parts = 0;
    for (const Segment& seg : list) parts += chunks_of(seg.range, chunk);
    if (parts > 1) total += parts;
  }
  return total;
}

// Parts per token at chunk_tokens, doubled until their partial slots fit in max_partials;
// nullopt when even parts as long as the longest segment do not fit.
std::optional<int32_t> fitting_chunk(const std::vector<std::vector<Segment>>& segments, int32_t chunk_tokens,
                                     int64_t max_partials) {
  int32_t longest = 1;
  for (const auto& list : segments)
    for (const Segment& seg : list) longest = std::max(longest, seg.range.end - seg.range.begin);
  int32_t chunk = chunk_tokens;
  while (count_partials(segments, chunk) > max_partials) {
    if (chunk >= longest) return std::nullopt;
    chunk = chunk > longest / 2 ? longest : chunk * 2;
  }
  return chunk;
}

// Each token's parts and partial slots into `plan`; returns the part index where each
// sequence's segment i starts.
std::vector<std::vector<int32_t>> number_parts(const StepBatch& batch,
                                               const std::vector<std::vector<Segment>>& segments, int32_t chunk,
                                               TensorAttentionPlan& plan) {
  plan.num_parts.assign(static_cast<std::size_t>(batch.num_tokens), 1);
  plan.partial_index.assign(static_cast<std::size_t>(batch.num_tokens), 0);
  std::vector<std::vector<int32_t>> first_part(segments.size());
  for (std::size_t s = 0; s < segments.size(); ++s) {
    int32_t parts = 0;
    for (const Segment& seg : segments[s]) {
      first_part[s].push_back(parts);
      parts += chunks_of(seg.range, chunk);
    }
    const auto token = static_cast<std::size_t>(batch.query_start[s]);
    plan.num_parts[token] = parts;
    if (parts > 1) {
      plan.partial_index[token] = plan.num_partials;
      plan.num_partials += parts;
    }
  }
  return first_part;
}

// The part where group `g` starts: every member has the same segments before the group
// (its trie ancestors), so the same part index.
int32_t group_first_part(std::size_t g, const std::vector<int32_t>& seqs,
                         const std::vector<std::vector<Segment>>& segments,
                         const std::vector<std::vector<int32_t>>& first_part) {
  std::optional<int32_t> part;
  for (int32_t s : seqs) {
    const auto& list = segments[static_cast<std::size_t>(s)];
    const auto at = static_cast<std::size_t>(
        std::find_if(list.begin(), list.end(), [&](const Segment& seg) { return seg.group == g; }) - list.begin());
    const int32_t p = first_part[static_cast<std::size_t>(s)][at];
    PG_CHECK(!part || *part == p, "group {} starts at part {} of sequence {}, {} of its first", g, p, s, *part);
    part = p;
  }
  return *part;
}

// Tiles of `tokens` (read through `seq`'s block table) over `range` in chunks of `chunk`
// positions, from part `part` on.
void add_chunks(TensorAttentionPlan& plan, int32_t seq, const std::vector<int32_t>& tokens, KvRange range, int32_t part,
                int32_t chunk) {
  for (int32_t b = range.begin; b < range.end; b += chunk, ++part) {
    plan.tiles.push_back(TensorAttentionTile{seq, static_cast<int32_t>(plan.tile_tokens.size()),
                                             static_cast<int32_t>(tokens.size()), b, std::min(range.end, b + chunk),
                                             part});
    plan.tile_tokens.insert(plan.tile_tokens.end(), tokens.begin(), tokens.end());
  }
}

}  // namespace

TensorAttentionPlan plan_prefill_tiles(const StepBatch& batch, int32_t group) {
  check_group(group);
  const int32_t tile_tokens = tensor_tile_tokens(group);
  TensorAttentionPlan plan;
  plan.num_parts.assign(static_cast<std::size_t>(batch.num_tokens), 1);
  plan.partial_index.assign(static_cast<std::size_t>(batch.num_tokens), 0);
  for (int32_t s = 0; s < batch.num_seqs; ++s) {
    const int32_t end = batch.query_start[static_cast<std::size_t>(s) + 1];
    for (int32_t first = batch.query_start[static_cast<std::size_t>(s)]; first < end; first += tile_tokens) {
      const int32_t n = std::min(tile_tokens, end - first);
      int32_t max_position = 0;
      for (int32_t t = first; t < first + n; ++t) {
        max_position = std::max(max_position, batch.positions[static_cast<std::size_t>(t)]);
        plan.tile_tokens.push_back(t);
      }
      plan.tiles.push_back(
          TensorAttentionTile{s, static_cast<int32_t>(plan.tile_tokens.size()) - n, n, 0, max_position + 1, 0});
    }
  }
  return plan;
}

std::optional<TensorAttentionPlan> plan_cascade_tiles(const StepBatch& batch, const SharedPrefixPlan& groups,
                                                      int32_t group, int32_t chunk_tokens, int64_t max_partials) {
  check_group(group);
  PG_CHECK(chunk_tokens >= 1, "cascade parts of {} tokens", chunk_tokens);
  const auto num_seqs = static_cast<std::size_t>(batch.num_seqs);
  PG_CHECK(groups.own_ranges.size() == num_seqs, "shared-prefix plan of {} sequences for a batch of {}",
           groups.own_ranges.size(), num_seqs);
  const std::vector<std::vector<Segment>> segments = sequence_segments(batch, groups);
  const std::optional<int32_t> chunk = fitting_chunk(segments, chunk_tokens, max_partials);
  if (!chunk) return std::nullopt;

  TensorAttentionPlan plan;
  const std::vector<std::vector<int32_t>> first_part = number_parts(batch, segments, *chunk, plan);
  // Group chunks: a tile per tensor_tile_tokens of the group's sequences.
  const auto tile_tokens = static_cast<std::size_t>(tensor_tile_tokens(group));
  for (std::size_t g = 0; g < groups.groups.size(); ++g) {
    const SharedPrefixGroup& grp = groups.groups[g];
    const int32_t part = group_first_part(g, grp.seqs, segments, first_part);
    for (std::size_t first = 0; first < grp.seqs.size(); first += tile_tokens) {
      std::vector<int32_t> tokens;
      for (std::size_t i = first; i < std::min(grp.seqs.size(), first + tile_tokens); ++i)
        tokens.push_back(batch.query_start[static_cast<std::size_t>(grp.seqs[i])]);
      add_chunks(plan, grp.seqs[first], tokens, grp.range, part, *chunk);
    }
  }
  for (std::size_t s = 0; s < num_seqs; ++s)
    for (std::size_t i = 0; i < segments[s].size(); ++i)
      if (!segments[s][i].group)
        add_chunks(plan, static_cast<int32_t>(s), {batch.query_start[s]}, segments[s][i].range, first_part[s][i],
                   *chunk);
  return plan;
}

std::optional<TensorAttentionPlan> plan_tensor_attention(const StepBatch& batch, int32_t group,
                                                         const SharedPrefixPolicy& policy, int32_t chunk_tokens,
                                                         int64_t max_partials) {
  if (batch.num_tokens > batch.num_seqs) return plan_prefill_tiles(batch, group);
  const SharedPrefixPlan shared = find_shared_prefix_groups(batch, policy);
  if (shared.empty()) return std::nullopt;
  return plan_cascade_tiles(batch, shared, group, chunk_tokens, max_partials);
}

}  // namespace pagedgen::gpu
