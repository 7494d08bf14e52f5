// KvCacheManager: exact block ids, reference counts and counters for allocation, tail-first
// freeing and eviction, prefix hits (also on blocks at count 0), forced key collisions,
// fork with copy-on-write, in-flight prefixes, and sharing turned off.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "util/error.h"
#include "token_lists.h"

using namespace pagedgen;
using pagedgen::test::concat;
using pagedgen::test::iota_tokens;

namespace {

std::vector<BlockId> table(const KvCacheManager& kv, uint64_t seq) {
  const auto t = kv.block_table(seq);
  return {t.begin(), t.end()};
}

std::vector<int32_t> ref_counts(const KvCacheManager& kv) {
  std::vector<int32_t> counts;
  for (BlockId b = 0; b < kv.num_blocks(); ++b) counts.push_back(kv.pool().ref_count(b));
  return counts;
}

// Admits `tokens` as sequence `seq` computing `num_new_tokens` after the cached prefix.
PrefixMatch admit(KvCacheManager& kv, uint64_t seq, const std::vector<TokenId>& tokens, int32_t num_new_tokens) {
  const PrefixMatch match = kv.match_prefix(tokens);
  REQUIRE(kv.can_allocate(match, num_new_tokens));
  kv.allocate(seq, tokens, match, num_new_tokens);
  return match;
}

// Admits and computes the whole sequence, committing its full blocks.
PrefixMatch admit_all(KvCacheManager& kv, uint64_t seq, const std::vector<TokenId>& tokens) {
  const PrefixMatch match = kv.match_prefix(tokens);
  const auto num_new = static_cast<int32_t>(tokens.size()) - match.num_cached_tokens;
  REQUIRE(kv.can_allocate(match, num_new));
  kv.allocate(seq, tokens, match, num_new);
  kv.commit_full_blocks(seq, tokens, static_cast<int32_t>(tokens.size()));
  return match;
}

uint64_t constant_key(uint64_t, std::span<const TokenId>) { return 42; }

}  // namespace

TEST_CASE("allocation order, tail-first free, and the eviction order it implies") {
  KvCacheManager kv({.num_blocks = 6, .block_size = 4});
  const auto a = iota_tokens(1, 10);
  const PrefixMatch match = admit_all(kv, 1, a);
  CHECK(match.num_lookup_blocks == 2);  // (10 - 1) / 4
  CHECK(match.blocks.empty());
  CHECK(table(kv, 1) == std::vector<BlockId>{0, 1, 2});
  CHECK(kv.filled_slots(0) == 4);
  CHECK(kv.filled_slots(1) == 4);
  CHECK(kv.filled_slots(2) == 2);
  KvCacheStats stats = kv.stats();
  CHECK(stats.num_used_blocks == 3);
  CHECK(stats.num_filled_slots == 10);
  CHECK(stats.num_allocated_slots == 12);
  CHECK(stats.num_logical_slots == 10);
  CHECK(kv.pool().is_cached(0));
  CHECK(kv.pool().is_cached(1));
  CHECK_FALSE(kv.pool().is_cached(2));  // partial: never cached

  kv.free(1);
  CHECK(kv.pool().free_queue() == std::vector<BlockId>{3, 4, 5, 2, 1, 0});
  stats = kv.stats();
  CHECK(stats.num_used_blocks == 0);
  CHECK(stats.num_filled_slots == 0);
  CHECK(stats.num_logical_slots == 0);
  CHECK(stats.peak_used_blocks == 3);

  // Unrelated sequences take the never-used blocks, then A's tail, then A's head.
  admit(kv, 2, iota_tokens(100, 16), 16);
  CHECK(table(kv, 2) == std::vector<BlockId>{3, 4, 5, 2});
  CHECK(kv.stats().num_evictions == 0);
  admit(kv, 3, iota_tokens(200, 5), 4);
  CHECK(table(kv, 3) == std::vector<BlockId>{1});
  CHECK(kv.stats().num_evictions == 1);
  CHECK_FALSE(kv.pool().is_cached(1));
  CHECK(kv.pool().is_cached(0));
  CHECK(kv.append_slots(3, 1).empty());
  CHECK(table(kv, 3) == std::vector<BlockId>{1, 0});
  CHECK(kv.stats().num_evictions == 2);
  CHECK(kv.num_free_blocks() == 0);
  CHECK_FALSE(kv.can_append_slots(3, 4));  // block 0 holds 1 of 4: 3 more fit, 4 do not
  CHECK(kv.can_append_slots(3, 3));
}

TEST_CASE("two requests with a 2-block common prefix: the second hits both blocks") {
  KvCacheManager kv({.num_blocks = 8, .block_size = 4});
  const auto a = iota_tokens(1, 11);
  const auto b = concat(iota_tokens(1, 8), {20, 21, 22});
  admit_all(kv, 1, a);
  CHECK(table(kv, 1) == std::vector<BlockId>{0, 1, 2});
  KvCacheStats stats = kv.stats();
  CHECK(stats.num_lookup_blocks == 2);
  CHECK(stats.num_hit_blocks == 0);

  const PrefixMatch match = kv.match_prefix(b);
  CHECK(match.blocks == std::vector<BlockId>{0, 1});
  CHECK(match.num_cached_tokens == 8);
  CHECK(match.num_lookup_blocks == 2);
  CHECK(match.num_collisions == 0);
  CHECK_FALSE(match.next_block_in_flight);
  REQUIRE(kv.can_allocate(match, 3));
  kv.allocate(2, b, match, 3);
  CHECK(table(kv, 2) == std::vector<BlockId>{0, 1, 3});
  CHECK(ref_counts(kv) == std::vector<int32_t>{2, 2, 1, 1, 0, 0, 0, 0});
  stats = kv.stats();
  CHECK(stats.num_lookup_blocks == 4);
  CHECK(stats.num_hit_blocks == 2);
  CHECK(stats.num_hit_tokens == 8);
  CHECK(stats.num_key_collisions == 0);
  CHECK(stats.num_used_blocks == 4);
  CHECK(stats.num_filled_slots == 4 + 4 + 3 + 3);  // each physical block once
  CHECK(stats.num_logical_slots == 11 + 11);       // per sequence
  CHECK(stats.num_allocated_slots == 16);

  kv.free(1);
  CHECK(ref_counts(kv) == std::vector<int32_t>{1, 1, 0, 1, 0, 0, 0, 0});
  CHECK(kv.pool().free_queue() == std::vector<BlockId>{4, 5, 6, 7, 2});
  kv.free(2);
  CHECK(kv.pool().free_queue() == std::vector<BlockId>{4, 5, 6, 7, 2, 3, 1, 0});
}

TEST_CASE("a prefix hit on cached blocks at count 0 takes them out of the free queue") {
  KvCacheManager kv({.num_blocks = 3, .block_size = 4});
  admit_all(kv, 1, iota_tokens(1, 9));
  kv.free(1);
  CHECK(kv.pool().free_queue() == std::vector<BlockId>{2, 1, 0});

  // 13 tokens: 2 hits at count 0 + 2 new blocks = 4 > 3 free, although 2 new blocks alone fit.
  const auto too_long = concat(iota_tokens(1, 8), {50, 51, 52, 53, 54});
  const PrefixMatch long_match = kv.match_prefix(too_long);
  CHECK(long_match.blocks == std::vector<BlockId>{0, 1});
  CHECK_FALSE(kv.can_allocate(long_match, 5));

  const auto b = concat(iota_tokens(1, 8), {50, 51, 52, 53});
  const PrefixMatch match = admit(kv, 2, b, 4);
  CHECK(match.blocks == std::vector<BlockId>{0, 1});
  CHECK(table(kv, 2) == std::vector<BlockId>{0, 1, 2});
  CHECK(ref_counts(kv) == std::vector<int32_t>{1, 1, 1});
  CHECK(kv.pool().free_queue().empty());
  CHECK(kv.stats().num_evictions == 0);
  CHECK(kv.stats().num_hit_blocks == 2);
  CHECK(kv.stats().num_filled_slots == 12);

  // Blocks 0 and 1 are held: a third sequence hits them but has no block for its own token.
  const PrefixMatch held = kv.match_prefix(concat(iota_tokens(1, 8), {60}));
  CHECK(held.blocks == std::vector<BlockId>{0, 1});
  CHECK_FALSE(kv.can_allocate(held, 1));
}

TEST_CASE("the whole sequence never matches: its last token is always computed") {
  KvCacheManager kv({.num_blocks = 8, .block_size = 4});
  const auto a = iota_tokens(1, 8);
  admit_all(kv, 1, a);
  CHECK(kv.pool().is_cached(1));
  const PrefixMatch match = kv.match_prefix(a);
  CHECK(match.num_lookup_blocks == 1);
  CHECK(match.blocks == std::vector<BlockId>{0});
  // Block 1 holds the last token: it matches in part, up to the token before it.
  CHECK(match.partial_block == 1);
  CHECK(match.num_partial_tokens == 3);
  CHECK(match.num_cached_tokens == 7);
  const PrefixMatch single = kv.match_prefix(iota_tokens(1, 1));
  CHECK(single.num_lookup_blocks == 0);
  CHECK(single.blocks.empty());
}

TEST_CASE("a key hit whose tokens differ is a counted miss (forced collisions)") {
  KvCacheManager kv({.num_blocks = 8, .block_size = 4, .enable_prefix_caching = true, .key_function = &constant_key});
  admit_all(kv, 1, {1, 2, 3, 4, 5});
  CHECK(kv.pool().is_cached(0));

  const std::vector<TokenId> other = {9, 9, 9, 9, 5};
  const PrefixMatch miss = kv.match_prefix(other);
  CHECK(miss.blocks.empty());
  CHECK(miss.num_collisions == 1);
  CHECK_FALSE(miss.next_block_in_flight);
  kv.allocate(2, other, miss, 5);
  CHECK(table(kv, 2) == std::vector<BlockId>{2, 3});
  CHECK(kv.stats().num_key_collisions == 1);
  CHECK(kv.stats().num_hit_blocks == 0);

  // Same tokens as block 0 at block 1: the key matches, the parent key does not.
  const std::vector<TokenId> repeat = {1, 2, 3, 4, 1, 2, 3, 4, 7};
  const PrefixMatch partial = kv.match_prefix(repeat);
  CHECK(partial.blocks == std::vector<BlockId>{0});
  CHECK(partial.num_collisions == 1);
  kv.allocate(3, repeat, partial, 5);
  CHECK(table(kv, 3) == std::vector<BlockId>{0, 4, 5});
  const KvCacheStats stats = kv.stats();
  CHECK(stats.num_key_collisions == 2);
  CHECK(stats.num_hit_blocks == 1);
  CHECK(stats.num_hit_tokens == 4);
  CHECK(stats.num_lookup_blocks == 1 + 1 + 2);
}

TEST_CASE("fork shares every block; copy-on-write of the partial last block") {
  KvCacheManager kv({.num_blocks = 8, .block_size = 4});
  const auto prompt = iota_tokens(1, 6);
  admit_all(kv, 1, prompt);
  CHECK(table(kv, 1) == std::vector<BlockId>{0, 1});

  SUBCASE("n = 2: the first writer copies, the last one writes in place") {
    kv.fork(1, 2);
    CHECK(table(kv, 2) == std::vector<BlockId>{0, 1});
    CHECK(ref_counts(kv) == std::vector<int32_t>{2, 2, 0, 0, 0, 0, 0, 0});
    CHECK(kv.stats().num_filled_slots == 6);
    CHECK(kv.stats().num_logical_slots == 12);

    const std::vector<BlockCopy> copy = kv.append_slots(1, 1);
    REQUIRE(copy.size() == 1);
    CHECK(copy[0].src == 1);
    CHECK(copy[0].dst == 2);
    CHECK(table(kv, 1) == std::vector<BlockId>{0, 2});
    CHECK(ref_counts(kv) == std::vector<int32_t>{2, 1, 1, 0, 0, 0, 0, 0});
    CHECK(kv.filled_slots(2) == 3);
    CHECK(kv.filled_slots(1) == 2);  // the original's fill never changes while shared

    CHECK(kv.append_slots(2, 1).empty());
    CHECK(table(kv, 2) == std::vector<BlockId>{0, 1});
    CHECK(kv.filled_slots(1) == 3);
    const KvCacheStats stats = kv.stats();
    CHECK(stats.num_cow_copies == 1);
    CHECK(stats.num_filled_slots == 4 + 3 + 3);
    CHECK(stats.num_logical_slots == 7 + 7);
    CHECK(stats.num_used_blocks == 3);
  }
  SUBCASE("n = 3: two copies, in order") {
    kv.fork(1, 2);
    kv.fork(1, 3);
    CHECK(ref_counts(kv) == std::vector<int32_t>{3, 3, 0, 0, 0, 0, 0, 0});
    const auto c1 = kv.append_slots(1, 1);
    const auto c2 = kv.append_slots(2, 1);
    const auto c3 = kv.append_slots(3, 1);
    REQUIRE(c1.size() == 1);
    REQUIRE(c2.size() == 1);
    CHECK((c1[0].src == 1 && c1[0].dst == 2));
    CHECK((c2[0].src == 1 && c2[0].dst == 3));
    CHECK(c3.empty());
    CHECK(table(kv, 1) == std::vector<BlockId>{0, 2});
    CHECK(table(kv, 2) == std::vector<BlockId>{0, 3});
    CHECK(table(kv, 3) == std::vector<BlockId>{0, 1});
    CHECK(ref_counts(kv) == std::vector<int32_t>{3, 1, 1, 1, 0, 0, 0, 0});
    CHECK(kv.stats().num_cow_copies == 2);
    CHECK(kv.stats().num_filled_slots == 4 + 3 * 3);
  }
  SUBCASE("a full shared last block is never copied") {
    const auto full = iota_tokens(50, 8);
    admit_all(kv, 4, full);
    CHECK(table(kv, 4) == std::vector<BlockId>{2, 3});
    kv.fork(4, 5);
    CHECK(kv.append_slots(4, 1).empty());
    CHECK(kv.append_slots(5, 1).empty());
    CHECK(table(kv, 4) == std::vector<BlockId>{2, 3, 4});
    CHECK(table(kv, 5) == std::vector<BlockId>{2, 3, 5});
    CHECK(kv.stats().num_cow_copies == 0);
  }
  SUBCASE("the copy needs a free block") {
    KvCacheManager small({.num_blocks = 2, .block_size = 4});
    admit_all(small, 1, prompt);
    small.fork(1, 2);
    CHECK(small.num_free_blocks() == 0);
    CHECK_FALSE(small.can_append_slots(1, 1));
    CHECK(small.can_append_slots(1, 0));
    small.free(2);
    CHECK(small.can_append_slots(1, 2));
    CHECK(small.append_slots(1, 2).empty());  // no longer shared: in place
    CHECK(small.filled_slots(1) == 4);
  }
}

TEST_CASE("a block being computed by a running sequence is in flight until committed") {
  KvCacheManager kv({.num_blocks = 8, .block_size = 4});
  const auto a = iota_tokens(1, 11);
  const auto b = concat(iota_tokens(1, 8), {30, 31});
  admit(kv, 1, a, 4);  // a chunk: only block 0 this step
  PrefixMatch match = kv.match_prefix(b);
  CHECK(match.blocks.empty());
  CHECK(match.next_block_in_flight);

  kv.commit_full_blocks(1, a, 4);
  match = kv.match_prefix(b);
  CHECK(match.blocks == std::vector<BlockId>{0});
  CHECK(match.next_block_in_flight);

  CHECK(kv.append_slots(1, 4).empty());
  kv.commit_full_blocks(1, a, 8);
  match = kv.match_prefix(b);
  CHECK(match.blocks == std::vector<BlockId>{0, 1});
  CHECK_FALSE(match.next_block_in_flight);

  // Freed before computing its blocks: nothing stays in flight.
  const auto c = iota_tokens(100, 9);
  admit(kv, 2, c, 1);
  CHECK(kv.match_prefix(c).next_block_in_flight);
  kv.free(2);
  CHECK_FALSE(kv.match_prefix(c).next_block_in_flight);
  // Tokens that diverge inside the first block are not in flight.
  CHECK_FALSE(kv.match_prefix(concat({1, 2, 3, 99}, iota_tokens(5, 5))).next_block_in_flight);
}

TEST_CASE("without prefix caching nothing is looked up or cached, and fork still shares") {
  KvCacheManager kv({.num_blocks = 8, .block_size = 4, .enable_prefix_caching = false});
  const auto a = iota_tokens(1, 9);
  admit_all(kv, 1, a);
  CHECK_FALSE(kv.pool().is_cached(0));
  const PrefixMatch match = admit_all(kv, 2, a);
  CHECK(match.blocks.empty());
  CHECK(table(kv, 2) == std::vector<BlockId>{3, 4, 5});
  kv.fork(2, 3);
  CHECK(table(kv, 3) == std::vector<BlockId>{3, 4, 5});
  CHECK(kv.pool().ref_count(5) == 2);
  const KvCacheStats stats = kv.stats();
  CHECK(stats.num_lookup_blocks == 0);
  CHECK(stats.num_hit_blocks == 0);
  CHECK(stats.num_filled_slots == 18);
  CHECK(stats.num_logical_slots == 27);
}

TEST_CASE("block size and pool size are validated") {
  CHECK_THROWS_AS(KvCacheManager({.num_blocks = 4, .block_size = 0}), Error);
  // Core names the setting, app/ the flag (--block-size).
  CHECK_THROWS_WITH_AS(KvCacheManager({.num_blocks = 4, .block_size = 257}), doctest::Contains("use 1 to 256"), Error);
  std::string setting;
  try {
    KvCacheManager({.num_blocks = 4, .block_size = 257});
  } catch (const SettingError& e) {
    setting = e.setting();
  }
  CHECK(setting == "block_size");
  CHECK_NOTHROW(KvCacheManager({.num_blocks = 4, .block_size = 256}));
  CHECK_THROWS_AS(KvCacheManager({.num_blocks = 0, .block_size = 16}), Error);
  KvCacheManager kv({.num_blocks = 4, .block_size = 1});
  CHECK(kv.num_blocks_for_tokens(0) == 0);
  CHECK(kv.num_blocks_for_tokens(3) == 3);
}

TEST_CASE("a partial match copies the first tokens of a cached block; its source is held until the copy ran") {
  // Block size 4. Sequence 1: [1 2 3 4 | 5 6 7 8 | 9] fully computed, then freed: blocks 0 and
  // 1 stay cached at count 0 (free queue, tail first: 2, 1, 0 after the unused 3..5).
  KvCacheManager kv({.num_blocks = 6, .block_size = 4});
  const auto a = concat(iota_tokens(1, 8), {9});
  admit_all(kv, 1, a);
  kv.free(1);
  CHECK(kv.pool().free_queue() == std::vector<BlockId>{3, 4, 5, 2, 1, 0});

  // Sequence 2: [1 2 3 4 | 5 6 50 51 | 52]: block 0 is a full hit, block 1 a partial one (2 tokens).
  const auto b = concat(iota_tokens(1, 6), {50, 51, 52});
  const PrefixMatch match = kv.match_prefix(b);
  CHECK(match.blocks == std::vector<BlockId>{0});
  CHECK(match.partial_block == 1);
  CHECK(match.num_partial_tokens == 2);
  CHECK(match.num_cached_tokens == 6);
  CHECK_FALSE(match.next_block_in_flight);
  // 3 tokens to compute: the copy's block and one more; plus the hit and the held source at 0.
  CHECK(kv.can_allocate(match, 3));
  const std::vector<BlockCopy> copy = kv.allocate(2, b, match, 3);
  REQUIRE(copy.size() == 1);
  CHECK(copy[0].src == 1);
  CHECK(copy[0].dst == 3);
  CHECK(table(kv, 2) == std::vector<BlockId>{0, 3, 4});
  CHECK(kv.num_slots(2) == 9);
  CHECK(kv.filled_slots(3) == 4);
  CHECK(kv.filled_slots(4) == 1);
  // Block 1 is held (count 1) by the pending copy, not by the sequence.
  CHECK(ref_counts(kv) == std::vector<int32_t>{1, 1, 0, 1, 1, 0});
  KvCacheStats stats = kv.stats();
  CHECK(stats.num_used_blocks == 4);
  CHECK(stats.num_filled_slots == 4 + 4 + 4 + 1);
  CHECK(stats.num_logical_slots == 9);
  CHECK(stats.num_partial_hits == 1);
  CHECK(stats.num_partial_tokens == 2);
  CHECK(stats.num_hit_tokens == 4 + 2);
  CHECK(stats.num_cow_copies == 0);

  kv.release_copy_sources();
  CHECK(ref_counts(kv) == std::vector<int32_t>{1, 0, 0, 1, 1, 0});
  CHECK(kv.pool().is_cached(1));  // still cached: a later sequence can copy from it again
  stats = kv.stats();
  CHECK(stats.num_used_blocks == 3);
  CHECK(stats.num_filled_slots == 4 + 4 + 1);
  kv.release_copy_sources();  // nothing held: no effect
  CHECK(kv.stats().num_used_blocks == 3);
}

TEST_CASE("a partial match takes the longest common prefix among the cached blocks after the same parent") {
  KvCacheManager kv({.num_blocks = 12, .block_size = 4});
  const auto doc = iota_tokens(1, 4);
  admit_all(kv, 1, concat(doc, {5, 6, 7, 8, 9}));     // blocks 0, 1 [5 6 7 8], 2
  admit_all(kv, 2, concat(doc, {5, 6, 20, 21, 22}));  // hits 0; copies 2 tokens; blocks 3 [5 6 20 21], 4
  admit_all(kv, 3, concat(doc, {5, 6, 20, 30, 31}));  // copies [5 6 20] from block 3 (3 > 2 of block 1)
  CHECK(table(kv, 3) == std::vector<BlockId>{0, 5, 6});
  CHECK(kv.stats().num_partial_tokens == 2 + 3);
  // Another first token after the same parent: no partial match. A different parent: none.
  CHECK_FALSE(kv.match_prefix(concat(doc, {6, 6, 7, 8, 9})).partial_block.has_value());
  CHECK_FALSE(kv.match_prefix(std::vector<TokenId>{5, 6, 7, 8, 9}).partial_block.has_value());
}

TEST_CASE("a block computed by a running sequence that a new one would copy in part is in flight") {
  KvCacheManager kv({.num_blocks = 12, .block_size = 4});
  const auto a = concat(iota_tokens(1, 6), {7, 8, 9});     // [1..4 | 5 6 7 8 | 9]
  const auto b = concat(iota_tokens(1, 6), {60, 61, 62});  // shares 1..6 with a
  admit(kv, 1, a, 9);                                      // admitted, not yet computed
  CHECK(kv.match_prefix(b).next_block_in_flight);          // block 0: a full block in flight
  kv.commit_full_blocks(1, a, 4);                          // block 0 computed; block 1 still in flight
  const PrefixMatch waiting = kv.match_prefix(b);
  CHECK(waiting.blocks == std::vector<BlockId>{0});
  CHECK(waiting.next_block_in_flight);  // [5 6 ..] of a is being computed
  CHECK_FALSE(waiting.partial_block.has_value());
  kv.commit_full_blocks(1, a, 9);
  const PrefixMatch ready = kv.match_prefix(b);
  CHECK_FALSE(ready.next_block_in_flight);
  CHECK(ready.partial_block == 1);
  CHECK(ready.num_partial_tokens == 2);
  // Once the cache offers a partial match, a sibling's block being computed is no reason to
  // wait, even if it would share more: c = [1..4 | 5 6 60 61 | 70] is being computed, d
  // shares [5 6 60] with it but copies [5 6] from a's block now.
  const auto c = concat(iota_tokens(1, 6), {60, 61, 70});
  CHECK(admit(kv, 3, c, 3).num_cached_tokens == 6);
  const PrefixMatch d = kv.match_prefix(concat(iota_tokens(1, 6), {60, 99, 98}));
  CHECK_FALSE(d.next_block_in_flight);
  CHECK(d.partial_block == 1);
  CHECK(d.num_partial_tokens == 2);
  // A freed sequence takes its in-flight blocks along: nothing to wait for.
  admit(kv, 2, concat(iota_tokens(100, 8), {1}), 9);
  CHECK(kv.match_prefix(concat(iota_tokens(100, 4), {104, 0, 0})).next_block_in_flight);
  kv.free(2);
  CHECK_FALSE(kv.match_prefix(concat(iota_tokens(100, 4), {104, 0, 0})).next_block_in_flight);
}
