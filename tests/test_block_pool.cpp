// BlockPool: allocation order, reference counts, the LRU free queue, evictions, and
// prefix-cache lookups including a key whose tokens differ.
#include <doctest/doctest.h>

#include <vector>

#include "kv/block_pool.h"
#include "util/error.h"

using namespace pagedgen;

namespace {
const std::vector<TokenId> kTokensA = {1, 2, 3, 4};
const std::vector<TokenId> kTokensB = {1, 2, 3, 5};
}  // namespace

TEST_CASE("blocks are handed out 0, 1, 2, ... and freed ones queue at the tail") {
  BlockPool pool(4);
  CHECK(pool.free_queue() == std::vector<BlockId>{0, 1, 2, 3});
  CHECK(pool.allocate() == 0);
  CHECK(pool.allocate() == 1);
  CHECK(pool.allocate() == 2);
  CHECK(pool.num_used_blocks() == 3);
  CHECK(pool.num_free_blocks() == 1);
  pool.release(1);
  pool.release(0);
  CHECK(pool.free_queue() == std::vector<BlockId>{3, 1, 0});
  CHECK(pool.allocate() == 3);
  CHECK(pool.allocate() == 1);
  CHECK(pool.allocate() == 0);
  CHECK_FALSE(pool.allocate().has_value());  // all in use: normal flow, not an error
  CHECK(pool.num_used_blocks() == 4);
  CHECK(pool.peak_used_blocks() == 4);
  CHECK(pool.num_evictions() == 0);
  CHECK_THROWS_AS(BlockPool(0), Error);
}

TEST_CASE("reference counts: a shared block returns to the queue only at count 0") {
  BlockPool pool(3);
  const BlockId block = *pool.allocate();
  CHECK(pool.num_shared_blocks() == 0);
  pool.add_ref(block);
  CHECK(pool.ref_count(block) == 2);
  CHECK(pool.num_shared_blocks() == 1);
  pool.add_ref(block);
  CHECK(pool.num_shared_blocks() == 1);  // a block is shared once, however many hold it
  pool.release(block);
  CHECK(pool.num_shared_blocks() == 1);
  pool.release(block);
  CHECK(pool.ref_count(block) == 1);
  CHECK(pool.num_shared_blocks() == 0);
  CHECK(pool.free_queue() == std::vector<BlockId>{1, 2});
  pool.release(block);
  CHECK(pool.ref_count(block) == 0);
  CHECK(pool.free_queue() == std::vector<BlockId>{1, 2, 0});
  CHECK(pool.num_used_blocks() == 0);
  CHECK(pool.peak_used_blocks() == 1);
}

TEST_CASE("a cached block at count 0 stays cached, is hit from the middle of the queue, and is evicted on reuse") {
  BlockPool pool(3);
  const BlockId b0 = *pool.allocate();
  const BlockId b1 = *pool.allocate();
  REQUIRE(b0 == 0);
  REQUIRE(b1 == 1);
  CHECK(pool.cache_block(b0, 100, 7, kTokensA));
  CHECK(pool.cache_block(b1, 200, 100, kTokensB));
  pool.release(b0);
  pool.release(b1);
  CHECK(pool.free_queue() == std::vector<BlockId>{2, 0, 1});
  CHECK(pool.num_cached_blocks() == 2);

  // A hit on block 0 at count 0 takes it out of the middle of the queue.
  const CacheLookup hit = pool.lookup(100, 7, kTokensA);
  REQUIRE(hit.block.has_value());
  CHECK(*hit.block == 0);
  CHECK_FALSE(hit.collision);
  pool.add_ref(0);
  CHECK(pool.ref_count(0) == 1);
  CHECK(pool.free_queue() == std::vector<BlockId>{2, 1});
  CHECK(pool.num_used_blocks() == 1);

  // Popping: block 2 (never cached) then block 1, whose entry is evicted.
  CHECK(pool.allocate() == 2);
  CHECK(pool.num_evictions() == 0);
  CHECK(pool.allocate() == 1);
  CHECK(pool.num_evictions() == 1);
  CHECK_FALSE(pool.is_cached(1));
  CHECK_FALSE(pool.lookup(200, 100, kTokensB).block.has_value());
  CHECK_FALSE(pool.lookup(200, 100, kTokensB).collision);
  CHECK(pool.is_cached(0));
  CHECK(pool.num_cached_blocks() == 1);
}

TEST_CASE("a key hit whose tokens or parent differ is a miss marked as a collision") {
  BlockPool pool(2);
  const BlockId block = *pool.allocate();
  REQUIRE(pool.cache_block(block, 42, 7, kTokensA));
  const CacheLookup other_tokens = pool.lookup(42, 7, kTokensB);
  CHECK_FALSE(other_tokens.block.has_value());
  CHECK(other_tokens.collision);
  const CacheLookup other_parent = pool.lookup(42, 8, kTokensA);
  CHECK_FALSE(other_parent.block.has_value());
  CHECK(other_parent.collision);
  const CacheLookup unknown = pool.lookup(43, 7, kTokensA);
  CHECK_FALSE(unknown.block.has_value());
  CHECK_FALSE(unknown.collision);
  CHECK(pool.lookup(42, 7, kTokensA).block == block);
}

TEST_CASE("cache_block keeps the first block for a key and caches a block once") {
  BlockPool pool(3);
  const BlockId first = *pool.allocate();
  const BlockId second = *pool.allocate();
  CHECK(pool.cache_block(first, 42, 7, kTokensA));
  CHECK_FALSE(pool.cache_block(second, 42, 7, kTokensA));  // key taken
  CHECK_FALSE(pool.cache_block(first, 43, 7, kTokensA));   // block already cached
  CHECK_FALSE(pool.is_cached(second));
  CHECK(pool.lookup(42, 7, kTokensA).block == first);
  CHECK_FALSE(pool.lookup(43, 7, kTokensA).block.has_value());
  CHECK(pool.num_cached_blocks() == 1);
}
