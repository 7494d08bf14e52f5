// The tile plans of tensor-core attention (gpu/tensor_attention_plan.h) on hand-worked
// batches: prefill tiles of one sequence's tokens; cascade tiles (group chunks shared by
// their sequences' rows, own chunks per sequence), part indices and partial slots; chunks
// doubled until the partials fit, and no plan when they cannot.
#include <doctest/doctest.h>

#include "tensor_attention_plan.h"

using namespace pagedgen;
using gpu::TensorAttentionTile;

namespace {

bool operator_equal(const TensorAttentionTile& a, const TensorAttentionTile& b) {
  return a.seq == b.seq && a.token_begin == b.token_begin && a.num_tokens == b.num_tokens && a.kv_begin == b.kv_begin &&
         a.kv_end == b.kv_end && a.part == b.part;
}

void check_tiles(const std::vector<TensorAttentionTile>& got, const std::vector<TensorAttentionTile>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(operator_equal(got[i], expected[i]));
  }
}

// One new token per sequence; sequences sharing `shared_blocks` leading blocks of ids
// 100.. when `shares[s]`, own blocks after them.
StepBatch shared_decode_batch(int32_t block_size, const std::vector<int32_t>& positions,
                              const std::vector<bool>& shares, int32_t shared_blocks) {
  StepBatch b;
  b.num_seqs = static_cast<int32_t>(positions.size());
  b.num_tokens = b.num_seqs;
  b.block_size = block_size;
  int32_t max_blocks = 0;
  for (int32_t p : positions) max_blocks = std::max(max_blocks, p / block_size + 1);
  b.max_blocks_per_seq = max_blocks;
  b.query_start.push_back(0);
  int32_t next_own = 1000;
  for (std::size_t s = 0; s < positions.size(); ++s) {
    for (int32_t i = 0; i < max_blocks; ++i)
      b.block_tables.push_back(shares[s] && i < shared_blocks ? 100 + i : next_own++);
    b.positions.push_back(positions[s]);
    b.query_start.push_back(static_cast<int32_t>(s) + 1);
    b.context_lens.push_back(positions[s] + 1);
  }
  return b;
}

}  // namespace

TEST_CASE("prefill tiles: runs of 64 / group tokens of one sequence, each over [0, last position + 1)") {
  // Group 4: 16 tokens per tile. Sequence 0: 20 tokens at positions 100..119; sequence 1:
  // one token at 50.
  StepBatch b;
  b.num_seqs = 2;
  b.num_tokens = 21;
  b.query_start = {0, 20, 21};
  for (int32_t p = 100; p < 120; ++p) b.positions.push_back(p);
  b.positions.push_back(50);
  const gpu::TensorAttentionPlan plan = gpu::plan_prefill_tiles(b, 4);
  check_tiles(plan.tiles, {{0, 0, 16, 0, 116, 0}, {0, 16, 4, 0, 120, 0}, {1, 20, 1, 0, 51, 0}});
  std::vector<int32_t> identity(21);
  for (int32_t i = 0; i < 21; ++i) identity[static_cast<std::size_t>(i)] = i;
  CHECK(plan.tile_tokens == identity);
  CHECK(plan.num_parts == std::vector<int32_t>(21, 1));
  CHECK(plan.num_partials == 0);
  CHECK(gpu::plan_prefill_tiles(b, 8).tiles.size() == 4);  // 8 tokens per tile: 8 + 8 + 4, then 1
}

TEST_CASE("cascade tiles: a group's chunks read once for both its sequences, own chunks per sequence") {
  // Block size 16; sequences 0 and 1 share 64 blocks ([0, 1024)); sequence 2 shares nothing.
  const StepBatch b = shared_decode_batch(16, {1100, 1040, 300}, {true, true, false}, 64);
  const gpu::SharedPrefixPlan groups = gpu::find_shared_prefix_groups(b, {2, 256});
  REQUIRE(groups.groups.size() == 1);
  REQUIRE(groups.groups[0].range == gpu::KvRange{0, 1024});
  // Chunks of 512: sequences 0 and 1 have parts [0, 512), [512, 1024), own; sequence 2 one part.
  const auto plan = gpu::plan_cascade_tiles(b, groups, 4, 512, 100);
  REQUIRE(plan.has_value());
  check_tiles(plan->tiles, {{0, 0, 2, 0, 512, 0},
                            {0, 2, 2, 512, 1024, 1},
                            {0, 4, 1, 1024, 1101, 2},
                            {1, 5, 1, 1024, 1041, 2},
                            {2, 6, 1, 0, 301, 0}});
  CHECK(plan->tile_tokens == std::vector<int32_t>{0, 1, 0, 1, 0, 1, 2});
  CHECK(plan->num_parts == std::vector<int32_t>{3, 3, 1});
  CHECK(plan->partial_index == std::vector<int32_t>{0, 3, 0});
  CHECK(plan->num_partials == 6);
  // 4 slots: chunks of 1024, two parts each for sequences 0 and 1.
  const auto doubled = gpu::plan_cascade_tiles(b, groups, 4, 512, 4);
  REQUIRE(doubled.has_value());
  check_tiles(doubled->tiles,
              {{0, 0, 2, 0, 1024, 0}, {0, 2, 1, 1024, 1101, 1}, {1, 3, 1, 1024, 1041, 1}, {2, 4, 1, 0, 301, 0}});
  CHECK(doubled->num_partials == 4);
  // 3 slots: two parts per grouped sequence at the least; no plan.
  CHECK_FALSE(gpu::plan_cascade_tiles(b, groups, 4, 512, 3).has_value());
}

TEST_CASE("cascade tiles: a group of more sequences than a tile's tokens takes several tiles per chunk") {
  // Group 8: 8 tokens per tile; 10 sequences share 16 blocks of 16 ([0, 256)).
  const StepBatch b = shared_decode_batch(16, std::vector<int32_t>(10, 300), std::vector<bool>(10, true), 16);
  const gpu::SharedPrefixPlan groups = gpu::find_shared_prefix_groups(b, {4, 256});
  REQUIRE(groups.groups.size() == 1);
  const auto plan = gpu::plan_cascade_tiles(b, groups, 8, 1024, 100);
  REQUIRE(plan.has_value());
  REQUIRE(plan->tiles.size() == 2 + 10);
  CHECK(operator_equal(plan->tiles[0], {0, 0, 8, 0, 256, 0}));
  CHECK(operator_equal(plan->tiles[1], {8, 8, 2, 0, 256, 0}));
  CHECK(operator_equal(plan->tiles[2], {0, 10, 1, 256, 301, 1}));
  CHECK(plan->num_partials == 20);
  CHECK(plan->partial_index[9] == 18);
}

TEST_CASE("cascade tiles: nested groups give their members the same part index") {
  // The example of shared_prefix_groups.h, block size 4: groups {0, 1, 2} [0, 12), {0, 1} [12, 16).
  StepBatch b;
  b.num_seqs = 4;
  b.num_tokens = 4;
  b.block_size = 4;
  b.max_blocks_per_seq = 6;
  b.block_tables = {7, 3, 9, 2, 5, 0, 7, 3, 9, 2, 8, 1, 7, 3, 9, 4, 0, 0, 6, 0, 0, 0, 0, 0};
  b.positions = {16, 21, 17, 5};
  b.query_start = {0, 1, 2, 3, 4};
  b.context_lens = {17, 22, 18, 6};
  const gpu::SharedPrefixPlan groups = gpu::find_shared_prefix_groups(b, {2, 4});
  REQUIRE(groups.groups.size() == 2);
  const auto plan = gpu::plan_cascade_tiles(b, groups, 2, 8, 100);
  REQUIRE(plan.has_value());
  // Chunks of 8: group [0, 12) is parts 0 and 1; group [12, 16) part 2; own ranges after.
  check_tiles(plan->tiles, {{0, 0, 3, 0, 8, 0},
                            {0, 3, 3, 8, 12, 1},
                            {0, 6, 2, 12, 16, 2},
                            {0, 8, 1, 16, 17, 3},
                            {1, 9, 1, 16, 22, 3},
                            {2, 10, 1, 12, 18, 2},
                            {3, 11, 1, 0, 6, 0}});
  CHECK(plan->num_parts == std::vector<int32_t>{4, 4, 3, 1});
  CHECK(plan->partial_index == std::vector<int32_t>{0, 4, 8, 0});
  CHECK(plan->num_partials == 11);
}

TEST_CASE("plan_tensor_attention: prefill tiles for a step with prefill tokens, cascade for a decode step that pays") {
  // A decode step whose two sequences share 64 blocks of 16: cascade at min_seqs 2; none
  // at min_seqs 3 (the CUDA-core kernel runs it), nor with no room for partials.
  const StepBatch decode = shared_decode_batch(16, {1100, 1040}, {true, true}, 64);
  const auto cascade = gpu::plan_tensor_attention(decode, 4, {2, 256}, 512, 100);
  REQUIRE(cascade.has_value());
  CHECK(cascade->num_partials == 6);
  CHECK_FALSE(gpu::plan_tensor_attention(decode, 4, {3, 256}, 512, 100).has_value());
  CHECK_FALSE(gpu::plan_tensor_attention(decode, 4, {2, 256}, 512, 3).has_value());
  // One sequence with 3 new tokens beside a decode: prefill tiles for both.
  StepBatch mixed = decode;
  mixed.num_tokens = 4;
  mixed.positions = {1098, 1099, 1100, 1040};
  mixed.query_start = {0, 3, 4};
  const auto prefill = gpu::plan_tensor_attention(mixed, 4, {2, 256}, 512, 100);
  REQUIRE(prefill.has_value());
  check_tiles(prefill->tiles, {{0, 0, 3, 0, 1101, 0}, {1, 3, 1, 0, 1041, 0}});
  CHECK(prefill->num_partials == 0);
}
