#include "shared_prefix_groups.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace pagedgen::gpu {

namespace {

// The step's cached block ids as a trie, one level per block: a node two or more
// sequences reach together is a candidate group.
class BlockTrie {
 public:
  BlockTrie(const StepBatch& batch, const SharedPrefixPolicy& policy) : batch_(batch), policy_(policy) {
    // Cached blocks of sequence s: those before the block of its first new token.
    cached_blocks_.resize(static_cast<std::size_t>(batch.num_seqs));
    for (std::size_t s = 0; s < cached_blocks_.size(); ++s)
      cached_blocks_[s] = std::min(batch.positions[static_cast<std::size_t>(batch.query_start[s])] / batch.block_size,
                                   batch.max_blocks_per_seq);
  }

  // Trie nodes depth-first: `seqs` (ascending, >= 2) agree on blocks [0, depth); split them
  // by their block at `depth`, each part of 2 or more extended while it stays together,
  // and appended to `groups` when it pays.
  void split(const std::vector<int32_t>& seqs, int32_t depth, std::vector<SharedPrefixGroup>& groups) const {
    const int32_t bs = batch_.block_size;
    for (const auto& [id, part] : parts_at(seqs, depth)) {
      if (part.size() < 2) continue;
      int32_t end = depth + 1;
      while (together(part, end)) ++end;
      if (std::ssize(part) >= policy_.min_seqs && (end - depth) * bs >= policy_.min_tokens)
        groups.push_back(SharedPrefixGroup{KvRange{depth * bs, end * bs}, part});
      split(part, end, groups);
    }
  }

 private:
  int32_t block(int32_t s, int32_t b) const {
    return batch_.block_tables[static_cast<std::size_t>(s) * static_cast<std::size_t>(batch_.max_blocks_per_seq) +
                               static_cast<std::size_t>(b)];
  }

  // `seqs` with a cached block at `depth`, split by its id: (block id, seqs), by first appearance.
  std::vector<std::pair<int32_t, std::vector<int32_t>>> parts_at(const std::vector<int32_t>& seqs,
                                                                 int32_t depth) const {
    std::vector<std::pair<int32_t, std::vector<int32_t>>> parts;
    for (int32_t s : seqs) {
      if (cached_blocks_[static_cast<std::size_t>(s)] <= depth) continue;
      const int32_t id = block(s, depth);
      auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == id; });
      if (it == parts.end())
        parts.push_back({id, {s}});
      else
        it->second.push_back(s);
    }
    return parts;
  }

  // Whether every sequence of `part` has cached block `b`, and the same one.
  bool together(const std::vector<int32_t>& part, int32_t b) const {
    return std::all_of(part.begin(), part.end(), [&](int32_t s) {
      return cached_blocks_[static_cast<std::size_t>(s)] > b && block(s, b) == block(part.front(), b);
    });
  }

  const StepBatch& batch_;
  const SharedPrefixPolicy& policy_;
  std::vector<int32_t> cached_blocks_;  // [num_seqs]
};

// Own ranges: the complement of each sequence's groups in [0, last query position + 1).
std::vector<std::vector<KvRange>> own_ranges(const StepBatch& batch, const std::vector<SharedPrefixGroup>& groups) {
  const auto num_seqs = static_cast<std::size_t>(batch.num_seqs);
  std::vector<std::vector<KvRange>> covered(num_seqs);
  for (const SharedPrefixGroup& g : groups)
    for (int32_t s : g.seqs) covered[static_cast<std::size_t>(s)].push_back(g.range);
  std::vector<std::vector<KvRange>> own(num_seqs);
  for (std::size_t s = 0; s < num_seqs; ++s) {
    std::vector<KvRange>& ranges = covered[s];
    std::sort(ranges.begin(), ranges.end(), [](const KvRange& a, const KvRange& b) { return a.begin < b.begin; });
    const int32_t end = batch.positions[static_cast<std::size_t>(batch.query_start[s + 1]) - 1] + 1;
    int32_t at = 0;
    for (const KvRange& r : ranges) {
      if (r.begin > at) own[s].push_back(KvRange{at, r.begin});
      at = r.end;
    }
    PG_CHECK(at < end, "sequence {}'s shared blocks reach its new tokens", s);
    own[s].push_back(KvRange{at, end});
  }
  return own;
}

}  // namespace

SharedPrefixPlan find_shared_prefix_groups(const StepBatch& batch, const SharedPrefixPolicy& policy) {
  PG_CHECK(policy.min_seqs >= 2 && policy.min_tokens >= 1, "a shared-prefix group needs 2 sequences and 1 token");
  const auto num_seqs = static_cast<std::size_t>(batch.num_seqs);
  SharedPrefixPlan plan;
  std::vector<int32_t> all(num_seqs);
  for (std::size_t s = 0; s < num_seqs; ++s) all[s] = static_cast<int32_t>(s);
  if (num_seqs >= 2) BlockTrie(batch, policy).split(all, 0, plan.groups);
  plan.own_ranges = own_ranges(batch, plan.groups);
  return plan;
}

}  // namespace pagedgen::gpu
