#include "shared_prefix_groups.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "util/error.h"

namespace pagedgen::gpu {

SharedPrefixPlan find_shared_prefix_groups(const StepBatch& batch, const SharedPrefixPolicy& policy) {
  PG_CHECK(policy.min_seqs >= 2 && policy.min_tokens >= 1, "a shared-prefix group needs 2 sequences and 1 token");
  const auto num_seqs = static_cast<std::size_t>(batch.num_seqs);
  const int32_t bs = batch.block_size;
  auto block = [&](int32_t s, int32_t b) {
    return batch.block_tables[static_cast<std::size_t>(s) * static_cast<std::size_t>(batch.max_blocks_per_seq) +
                              static_cast<std::size_t>(b)];
  };
  // Cached blocks of sequence s: those before the block of its first new token.
  std::vector<int32_t> cached_blocks(num_seqs);
  for (std::size_t s = 0; s < num_seqs; ++s)
    cached_blocks[s] = std::min(batch.positions[static_cast<std::size_t>(batch.query_start[s])] / bs,
                                batch.max_blocks_per_seq);

  SharedPrefixPlan plan;
  // Trie nodes depth-first: `seqs` (ascending, >= 2) agree on blocks [0, depth); split them
  // by their block at `depth`, each part of 2 or more extended while it stays together.
  std::function<void(const std::vector<int32_t>&, int32_t)> split = [&](const std::vector<int32_t>& seqs,
                                                                       int32_t depth) {
    std::vector<std::pair<int32_t, std::vector<int32_t>>> parts;  // (block id, seqs), by first appearance
    for (int32_t s : seqs) {
      if (cached_blocks[static_cast<std::size_t>(s)] <= depth) continue;
      const int32_t id = block(s, depth);
      auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == id; });
      if (it == parts.end()) parts.push_back({id, {s}});
      else it->second.push_back(s);
    }
    for (const auto& [id, part] : parts) {
      if (part.size() < 2) continue;
      int32_t end = depth + 1;
      const auto together = [&](int32_t b) {
        return std::all_of(part.begin(), part.end(), [&](int32_t s) {
          return cached_blocks[static_cast<std::size_t>(s)] > b && block(s, b) == block(part.front(), b);
        });
      };
      while (together(end)) ++end;
      if (std::ssize(part) >= policy.min_seqs && (end - depth) * bs >= policy.min_tokens)
        plan.groups.push_back(SharedPrefixGroup{KvRange{depth * bs, end * bs}, part});
      split(part, end);
    }
  };
  std::vector<int32_t> all(num_seqs);
  for (std::size_t s = 0; s < num_seqs; ++s) all[s] = static_cast<int32_t>(s);
  if (num_seqs >= 2) split(all, 0);

  // Own ranges: the complement of the sequence's groups in [0, last query position + 1).
  std::vector<std::vector<KvRange>> covered(num_seqs);
  for (const SharedPrefixGroup& g : plan.groups)
    for (int32_t s : g.seqs) covered[static_cast<std::size_t>(s)].push_back(g.range);
  plan.own_ranges.resize(num_seqs);
  for (std::size_t s = 0; s < num_seqs; ++s) {
    std::vector<KvRange>& ranges = covered[s];
    std::sort(ranges.begin(), ranges.end(), [](const KvRange& a, const KvRange& b) { return a.begin < b.begin; });
    const int32_t end = batch.positions[static_cast<std::size_t>(batch.query_start[s + 1]) - 1] + 1;
    int32_t at = 0;
    for (const KvRange& r : ranges) {
      if (r.begin > at) plan.own_ranges[s].push_back(KvRange{at, r.begin});
      at = r.end;
    }
    PG_CHECK(at < end, "sequence {}'s shared blocks reach its new tokens", s);
    plan.own_ranges[s].push_back(KvRange{at, end});
  }
  return plan;
}

}  // namespace pagedgen::gpu
