// Shared-prefix groups of one step (cascade attention, host side, no CUDA): which
// sequences read the same physical KV blocks at the same leading positions, found from the
// step's block tables alone (a shared block id is the sharing; the prefix planner's groups
// are in token space and may no longer hold after eviction or copy-on-write).
//
//   block tables (block_size 4)    seq 0: [7 3 9 2 | 5]    the first new token of each
//                                  seq 1: [7 3 9 2 | 8 1]  sequence sits in the last block
//                                  seq 2: [7 3 9 4]        listed; blocks before it are
//                                  seq 3: [6 0]            cached and immutable this step
//
//   groups: {0, 1, 2} over positions [0, 12) (blocks 7 3 9), then {0, 1} over [12, 16)
//   (block 2) if that pays; seq 3 shares nothing.
//   each sequence's own part: what no group of it covers, up to its last query position:
//   seq 0 [16, ...], seq 2 [12, ...], seq 3 [0, ...]
//
// A node of the block-id trie becomes a group when it pays: at least min_seqs sequences
// and at least min_tokens positions (reading them once per group instead of once per
// sequence must outweigh the extra partial results and their merge). A node that does not
// pay is read by each of its sequences in their own part.
#pragma once

#include <cstdint>
#include <vector>

#include "step/step_batch.h"

namespace pagedgen::gpu {

struct KvRange {
  int32_t begin;  // positions [begin, end)
  int32_t end;
  bool operator==(const KvRange&) const = default;
};

struct SharedPrefixGroup {
  KvRange range;              // block-aligned
  std::vector<int32_t> seqs;  // batch sequence indices, ascending
};

struct SharedPrefixPolicy {
  int32_t min_seqs = 4;
  int32_t min_tokens = 256;
};

struct SharedPrefixPlan {
  std::vector<SharedPrefixGroup> groups;  // outer groups before the groups nested in them
  // [num_seqs] positions a sequence reads on its own, ascending and disjoint; with its
  // groups' ranges they tile [0, last query position + 1) exactly.
  std::vector<std::vector<KvRange>> own_ranges;
  bool empty() const { return groups.empty(); }
};

// The groups of `batch` under `policy`. A sequence's blocks count up to (not including) the
// block of its first new token.
SharedPrefixPlan find_shared_prefix_groups(const StepBatch& batch, const SharedPrefixPolicy& policy);

}  // namespace pagedgen::gpu
