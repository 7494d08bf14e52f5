// LayerKindBlocks: one kind's tables on their own: grow and fills, fork and copy-on-write,
// a partial match's copy and its held source, a window kind's releases, free tail first.
#include <doctest/doctest.h>

#include <vector>

#include "kv/layer_kind_blocks.h"

using namespace pagedgen;

TEST_CASE("grow takes a block only when the last one is full; fills count the slots holding a token") {
  LayerKindBlocks kind(0, 0, 8, 4);  // full attention, 8 blocks of 4 slots
  CHECK(kind.take_hits(7, HitBlocks{}, 0) == std::nullopt);
  kind.grow(7, 0, 6);  // slots 0..5: blocks 0 (full) and 1 (2 of 4)
  CHECK(std::vector<BlockId>(kind.table(7).begin(), kind.table(7).end()) == std::vector<BlockId>{0, 1});
  CHECK(kind.filled_slots(0) == 4);
  CHECK(kind.filled_slots(1) == 2);
  kind.grow(7, 6, 2);  // fills block 1, no new block
  CHECK(kind.num_table_blocks(7) == 2);
  CHECK(kind.num_filled_slots() == 8);
  CHECK(kind.pool().num_used_blocks() == 2);
  CHECK(kind.stats().num_filled_slots == 8);
}

TEST_CASE("fork shares every block; the first write copies the shared partial block") {
  LayerKindBlocks kind(0, 0, 8, 4);
  kind.take_hits(1, HitBlocks{}, 0);
  kind.grow(1, 0, 6);  // blocks 0, 1 (2 slots)
  kind.fork(1, 2);
  CHECK(kind.pool().ref_count(0) == 2);
  CHECK(kind.pool().ref_count(1) == 2);
  CHECK_FALSE(kind.needs_copy_on_write(2, 4));  // at a block boundary nothing is written into a shared block
  REQUIRE(kind.needs_copy_on_write(2, 6));
  const BlockCopy copy = kind.copy_on_write(2, 6);
  CHECK(copy.src == 1);
  CHECK(copy.dst == 2);
  CHECK(copy.kind == 0);
  CHECK(kind.table(2)[1] == 2);
  CHECK(kind.filled_slots(2) == 2);
  CHECK(kind.pool().ref_count(1) == 1);
  CHECK_FALSE(kind.needs_copy_on_write(1, 6));  // the parent now owns block 1 alone
  kind.free(2);                                 // tail first: 2, then 0 (still held by sequence 1)
  CHECK(kind.pool().free_queue().back() == 2);
  CHECK(kind.pool().ref_count(0) == 1);
}

TEST_CASE("a partial match holds its source until the copy ran and copies into a new block") {
  LayerKindBlocks kind(1, 0, 4, 4);
  kind.take_hits(1, HitBlocks{}, 0);
  kind.grow(1, 0, 4);  // block 0 full
  const std::vector<TokenId> tokens = {5, 6, 7, 8};
  kind.cache_block(1, 0, 11, 10, tokens);
  kind.free(1);
  CHECK(kind.pool().ref_count(0) == 0);
  CHECK(kind.num_filled_slots() == 0);
  const HitBlocks hits{.first_block = 0, .blocks = {}, .partial_source = 0};
  CHECK(kind.can_take(hits, 3));  // 3 new + the source at count 0 = 4 free
  CHECK_FALSE(kind.can_take(hits, 4));
  const std::optional<BlockCopy> copy = kind.take_hits(2, hits, 3);
  REQUIRE(copy.has_value());
  CHECK(copy->src == 0);
  CHECK(copy->dst == 1);
  CHECK(copy->kind == 1);
  CHECK(kind.filled_slots(1) == 3);
  CHECK(kind.pool().ref_count(0) == 1);  // held until release_copy_sources
  kind.release_copy_sources();
  CHECK(kind.pool().ref_count(0) == 0);
  CHECK(kind.pool().is_cached(0));
  CHECK(kind.num_filled_slots() == 3);
}

TEST_CASE("a window kind gives back the blocks below its window, oldest first") {
  LayerKindBlocks kind(1, 6, 8, 4);  // window 6: a query at p reads p - 5 .. p
  CHECK(kind.first_reachable_block(5) == 0);
  CHECK(kind.first_reachable_block(13) == 2);
  CHECK(kind.num_blocks_alone(100, 4) == 4);  // ceil((6 - 1 + 4) / 4) + 1
  kind.take_hits(1, HitBlocks{}, 0);
  kind.grow(1, 0, 13);  // blocks 0, 1, 2, 3
  kind.release_unreachable(1, 13);
  CHECK(kind.num_released(1) == 2);
  CHECK(std::vector<BlockId>(kind.table(1).begin(), kind.table(1).end()) == std::vector<BlockId>{0, 0, 2, 3});
  CHECK(kind.pool().free_queue() == std::vector<BlockId>{4, 5, 6, 7, 0, 1});
  CHECK(kind.stats().num_released_blocks == 2);
  CHECK(kind.num_filled_slots() == 5);
  kind.free(1);
  CHECK(kind.pool().num_used_blocks() == 0);
  CHECK(kind.stats().peak_used_blocks == 4);
}
