// Shared-prefix group detection (gpu/shared_prefix_groups.h) on hand-worked block tables:
// no sharing, one group, nested groups, a shared node too short to pay with a longer one
// below it, the cap at each sequence's first new token, and the policy's thresholds.
#include <doctest/doctest.h>

#include "shared_prefix_groups.h"

using namespace pagedgen;
using gpu::KvRange;

namespace {

// One new token per sequence at `positions[s]`, block tables padded with 0.
StepBatch decode_batch(int32_t block_size, const std::vector<std::vector<int32_t>>& tables,
                       const std::vector<int32_t>& positions) {
  StepBatch b;
  b.num_seqs = static_cast<int32_t>(tables.size());
  b.num_tokens = b.num_seqs;
  b.block_size = block_size;
  for (const auto& t : tables) b.max_blocks_per_seq = std::max(b.max_blocks_per_seq, static_cast<int32_t>(t.size()));
  b.query_start.push_back(0);
  for (std::size_t s = 0; s < tables.size(); ++s) {
    std::vector<int32_t> row = tables[s];
    row.resize(static_cast<std::size_t>(b.max_blocks_per_seq), 0);
    b.block_tables.insert(b.block_tables.end(), row.begin(), row.end());
    b.positions.push_back(positions[s]);
    b.query_start.push_back(static_cast<int32_t>(s) + 1);
    b.context_lens.push_back(positions[s] + 1);
  }
  return b;
}

using Ranges = std::vector<KvRange>;

}  // namespace

TEST_CASE("no two sequences share a block: no group, each reads [0, position + 1) alone") {
  const StepBatch b = decode_batch(4, {{1, 2}, {3, 4}, {5, 6}}, {5, 7, 4});
  const gpu::SharedPrefixPlan plan = gpu::find_shared_prefix_groups(b, {2, 1});
  CHECK(plan.empty());
  CHECK(plan.own_ranges == std::vector<Ranges>{{{0, 6}}, {{0, 8}}, {{0, 5}}});
}

TEST_CASE("one group: three sequences over three common blocks, a fourth apart") {
  const StepBatch b = decode_batch(4, {{7, 3, 9, 1}, {7, 3, 9, 2}, {7, 3, 9, 5}, {6, 0}}, {14, 13, 12, 5});
  const gpu::SharedPrefixPlan plan = gpu::find_shared_prefix_groups(b, {2, 8});
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].range == KvRange{0, 12});
  CHECK(plan.groups[0].seqs == std::vector<int32_t>{0, 1, 2});
  CHECK(plan.own_ranges == std::vector<Ranges>{{{12, 15}}, {{12, 14}}, {{12, 13}}, {{0, 6}}});
}

TEST_CASE("nested groups: an outer group of three, two of them sharing one block more") {
  // The example of shared_prefix_groups.h: seq 0 [7 3 9 2 | 5], seq 1 [7 3 9 2 8 | 1],
  // seq 2 [7 3 9 4 | 0], seq 3 [6 | 0].
  const StepBatch b = decode_batch(4, {{7, 3, 9, 2, 5}, {7, 3, 9, 2, 8, 1}, {7, 3, 9, 4, 0}, {6, 0}}, {16, 21, 17, 5});
  const gpu::SharedPrefixPlan both = gpu::find_shared_prefix_groups(b, {2, 4});
  REQUIRE(both.groups.size() == 2);
  CHECK(both.groups[0].range == KvRange{0, 12});
  CHECK(both.groups[0].seqs == std::vector<int32_t>{0, 1, 2});
  CHECK(both.groups[1].range == KvRange{12, 16});
  CHECK(both.groups[1].seqs == std::vector<int32_t>{0, 1});
  CHECK(both.own_ranges == std::vector<Ranges>{{{16, 17}}, {{16, 22}}, {{12, 18}}, {{0, 6}}});
  // 8 tokens at least: block 2 (4 tokens, two sequences) does not pay; they read it alone.
  const gpu::SharedPrefixPlan outer = gpu::find_shared_prefix_groups(b, {2, 8});
  REQUIRE(outer.groups.size() == 1);
  CHECK(outer.groups[0].range == KvRange{0, 12});
  CHECK(outer.own_ranges == std::vector<Ranges>{{{12, 17}}, {{12, 22}}, {{12, 18}}, {{0, 6}}});
  // 4 sequences at least: nothing pays.
  const gpu::SharedPrefixPlan none = gpu::find_shared_prefix_groups(b, {4, 4});
  CHECK(none.empty());
  CHECK(none.own_ranges == std::vector<Ranges>{{{0, 17}}, {{0, 22}}, {{0, 18}}, {{0, 6}}});
}

TEST_CASE("a short node shared by all that does not pay, a long one below it that does: two own ranges") {
  // All four share block 1 (4 tokens < 8); seqs 0 and 1 then share 3 blocks more (12 tokens).
  const StepBatch b = decode_batch(4, {{1, 2, 3, 4, 9}, {1, 2, 3, 4, 8}, {1, 5, 0}, {1, 6, 0}}, {17, 16, 9, 10});
  const gpu::SharedPrefixPlan plan = gpu::find_shared_prefix_groups(b, {2, 8});
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].range == KvRange{4, 16});
  CHECK(plan.groups[0].seqs == std::vector<int32_t>{0, 1});
  CHECK(plan.own_ranges == std::vector<Ranges>{{{0, 4}, {16, 18}}, {{0, 4}, {16, 17}}, {{0, 10}}, {{0, 11}}});
}

TEST_CASE("shared blocks count only up to the block of each sequence's first new token") {
  // Identical tables; positions 8 and 11 sit in block index 2, so blocks 0-1 are shared.
  const gpu::SharedPrefixPlan plan =
      gpu::find_shared_prefix_groups(decode_batch(4, {{1, 2, 3}, {1, 2, 3}}, {8, 11}), {2, 1});
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].range == KvRange{0, 8});
  CHECK(plan.own_ranges == std::vector<Ranges>{{{8, 9}}, {{8, 12}}});
  // Position 4 (block index 1): one cached block in common.
  const gpu::SharedPrefixPlan shorter =
      gpu::find_shared_prefix_groups(decode_batch(4, {{1, 2, 3}, {1, 2, 3}}, {8, 4}), {2, 1});
  REQUIRE(shorter.groups.size() == 1);
  CHECK(shorter.groups[0].range == KvRange{0, 4});
  CHECK(shorter.own_ranges == std::vector<Ranges>{{{4, 9}}, {{4, 5}}});
  // A prefill chunk: the first new token decides (positions 4..7 of sequence 1).
  StepBatch chunk = decode_batch(4, {{1, 2, 3}, {1, 2, 3}}, {8, 4});
  chunk.num_tokens = 5;
  chunk.positions = {8, 4, 5, 6, 7};
  chunk.query_start = {0, 1, 5};
  const gpu::SharedPrefixPlan chunked = gpu::find_shared_prefix_groups(chunk, {2, 1});
  REQUIRE(chunked.groups.size() == 1);
  CHECK(chunked.groups[0].range == KvRange{0, 4});
  CHECK(chunked.own_ranges == std::vector<Ranges>{{{4, 9}}, {{4, 8}}});
}
