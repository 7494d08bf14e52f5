// KvCacheManager with a sliding-window kind beside kind 0: exact block ids, counts and
// per-kind figures for window releases, prefix hits that need only the window's blocks
// (and get shorter when the window kind lost one), fork and copy-on-write in both kinds.
// Block size 4 and window 6 throughout: a query at position p reads p - 5 .. p, so after
// n computed tokens the window kind keeps logical blocks from (n - 5) / 4 on.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "token_lists.h"

using namespace pagedgen;
using pagedgen::test::concat;
using pagedgen::test::iota_tokens;

namespace {

constexpr KvKindId kWindow = 1;

std::vector<BlockId> kind_table(const KvCacheManager& kv, uint64_t seq, KvKindId kind) {
  const auto t = kv.block_table(seq, kind);
  return {t.begin(), t.end()};
}

// "c0 c1 ...": every block's reference count. (As text: GCC 12 at -O2 -march=native on an
// AVX-512 machine builds the literal "1 1 1 1 0 0 0 0" as eight 1s
// in this file, measured.)
std::string ref_counts_text(const KvCacheManager& kv, KvKindId kind) {
  std::string counts;
  for (BlockId b = 0; b < kv.num_blocks(kind); ++b)
    counts += (b ? " " : "") + std::to_string(kv.pool(kind).ref_count(b));
  return counts;
}

KvCacheConfig windowed(int32_t num_full_blocks, int32_t num_window_blocks) {
  return {
      .num_blocks = num_full_blocks, .block_size = 4, .window_kinds = {{.window = 6, .num_blocks = num_window_blocks}}};
}

// Admits and computes the whole sequence, committing its full blocks; then, as the scheduler
// does before the next step, gives back what the next query no longer reaches.
PrefixMatch admit_all_in_windows(KvCacheManager& kv, uint64_t seq, const std::vector<TokenId>& tokens) {
  const PrefixMatch match = kv.match_prefix(tokens);
  const auto num_new = static_cast<int32_t>(tokens.size()) - match.num_cached_tokens;
  REQUIRE(kv.can_allocate(match, num_new));
  kv.allocate(seq, tokens, match, num_new);
  kv.commit_full_blocks(seq, tokens, static_cast<int32_t>(tokens.size()));
  kv.release_unreachable(seq, static_cast<int32_t>(tokens.size()));
  return match;
}

}  // namespace

TEST_CASE("the window kind gives back the blocks no later query reaches; kind 0 keeps all") {
  KvCacheManager kv(windowed(8, 8));
  REQUIRE(kv.num_kinds() == 2);
  const auto a = iota_tokens(1, 13);  // [1..4 | 5..8 | 9..12 | 13]
  const PrefixMatch match = kv.match_prefix(a);
  REQUIRE(match.window_hits.size() == 1);
  kv.allocate(1, a, match, 13);
  CHECK(kind_table(kv, 1, 0) == std::vector<BlockId>{0, 1, 2, 3});
  CHECK(kind_table(kv, 1, kWindow) == std::vector<BlockId>{0, 1, 2, 3});
  kv.commit_full_blocks(1, a, 13);
  // Next query at 13 reads 8..13: logical blocks 2 and 3. Blocks 0 and 1 go, oldest first,
  // to the tail of the free queue, still cached.
  kv.release_unreachable(1, 13);
  CHECK(kind_table(kv, 1, kWindow) == std::vector<BlockId>{0, 0, 2, 3});
  CHECK(kv.num_released_blocks(1, kWindow) == 2);
  CHECK(ref_counts_text(kv, kWindow) == "0 0 1 1 0 0 0 0");
  CHECK(kv.pool(kWindow).free_queue() == std::vector<BlockId>{4, 5, 6, 7, 0, 1});
  CHECK((kv.pool(kWindow).is_cached(0) && kv.pool(kWindow).is_cached(1)));
  CHECK(ref_counts_text(kv, 0) == "1 1 1 1 0 0 0 0");

  KvCacheStats stats = kv.stats();
  REQUIRE(stats.kinds.size() == 2);
  CHECK(stats.num_used_blocks == 4);  // the top-level figures are kind 0's
  CHECK(stats.num_filled_slots == 13);
  CHECK(stats.kinds[0].num_used_blocks == 4);
  CHECK(stats.kinds[0].num_filled_slots == 13);
  CHECK(stats.kinds[0].num_released_blocks == 0);
  CHECK(stats.kinds[1].window == 6);
  CHECK(stats.kinds[1].num_used_blocks == 2);
  CHECK(stats.kinds[1].peak_used_blocks == 4);
  CHECK(stats.kinds[1].num_filled_slots == 4 + 1);
  CHECK(stats.kinds[1].num_released_blocks == 2);

  // Decode 13 and 14: still 8.. and 9..; block 3 fills up. 15, 16: a new block in both
  // kinds (16 starts block 4); before 17 (reads 12..17) block 2 goes.
  for (int32_t n = 13; n < 17; ++n) {
    kv.release_unreachable(1, n);
    REQUIRE(kv.can_append_slots(1, 1));
    CHECK(kv.append_slots(1, 1).empty());
  }
  CHECK(kind_table(kv, 1, kWindow) == std::vector<BlockId>{0, 0, 2, 3, 4});
  kv.release_unreachable(1, 17);
  CHECK(kind_table(kv, 1, 0) == std::vector<BlockId>{0, 1, 2, 3, 4});
  CHECK(kind_table(kv, 1, kWindow) == std::vector<BlockId>{0, 0, 0, 3, 4});
  CHECK(kv.pool(kWindow).free_queue() == std::vector<BlockId>{5, 6, 7, 0, 1, 2});
  stats = kv.stats();
  CHECK(stats.kinds[1].num_used_blocks == 2);
  CHECK(stats.kinds[1].num_filled_slots == 4 + 1);
  CHECK(stats.kinds[1].num_released_blocks == 3);
  CHECK(stats.kinds[0].num_filled_slots == 17);

  // Freeing gives back only what is still held: blocks 4 then 3.
  kv.free(1);
  CHECK(ref_counts_text(kv, kWindow) == "0 0 0 0 0 0 0 0");
  CHECK(kv.pool(kWindow).free_queue() == std::vector<BlockId>{5, 6, 7, 0, 1, 2, 4, 3});
  CHECK(kv.stats().kinds[1].num_filled_slots == 0);
  CHECK(kv.stats().kinds[0].num_filled_slots == 0);
}

TEST_CASE("a prefix hit takes only the window's blocks before the hit point in the window kind") {
  KvCacheManager kv(windowed(16, 8));
  const auto a = iota_tokens(1, 13);
  admit_all_in_windows(kv, 1, a);  // window kind: [- - 2 3], free queue 4 5 6 7 0 1
  const auto b = concat(iota_tokens(1, 12), {99, 100});

  SUBCASE("kind 0's three blocks hit; the window kind needs logical blocks 1 and 2 only") {
    // Block 0 of the window kind is evicted by another sequence taking 5 blocks (4 5 6 7 0,
    // of which it gives 4 5 6 back: free queue 1 4 5 6); block 1, given back but cached, is
    // all the hit needs besides block 2 (held).
    admit_all_in_windows(kv, 3, iota_tokens(200, 20));
    CHECK(kv.pool(kWindow).cached_tokens(0).front() == 216);  // now the other's last block
    const PrefixMatch match = kv.match_prefix(b);
    CHECK(match.blocks == std::vector<BlockId>{0, 1, 2});
    CHECK(match.num_cached_tokens == 12);
    REQUIRE(match.window_hits.size() == 1);
    CHECK(match.window_hits[0].first_block == 1);  // the query at 12 reads 7..12
    CHECK(match.window_hits[0].blocks == std::vector<BlockId>{1, 2});
    REQUIRE(kv.can_allocate(match, 2));
    CHECK(kv.allocate(2, b, match, 2).empty());
    CHECK(kind_table(kv, 2, 0) == std::vector<BlockId>{0, 1, 2, 9});
    CHECK(kind_table(kv, 2, kWindow) == std::vector<BlockId>{0, 1, 2, 4});  // entry 0 never held
    CHECK(kv.num_released_blocks(2, kWindow) == 1);
    CHECK(kv.pool(kWindow).ref_count(1) == 1);
    CHECK(kv.pool(kWindow).ref_count(2) == 2);
    const KvCacheStats stats = kv.stats();
    CHECK(stats.num_hit_blocks == 3);
    CHECK(stats.num_hit_tokens == 12);
    CHECK(stats.kinds[1].num_used_blocks == 2 + 2 + 2);  // a's 2 3, the other's 7 0, b's 1 4 (2 shared)
    CHECK(stats.kinds[1].num_filled_slots == (4 + 1) + (4 + 4) + 4 + 2);
  }
  SUBCASE("the window kind lost a block the hit point needs: the match gets shorter") {
    // 6 blocks for the other sequence evict blocks 0 and 1 of the window kind. At 12 tokens
    // the window needs logical block 1; at 8 blocks 0 and 1; at 4 block 0: none is left.
    admit_all_in_windows(kv, 3, iota_tokens(200, 24));
    CHECK(kv.pool(kWindow).cached_tokens(1).front() == 220);
    const PrefixMatch match = kv.match_prefix(b);
    CHECK(match.blocks.empty());
    CHECK(match.num_cached_tokens == 0);
    CHECK(match.num_lookup_blocks == 3);
    CHECK(match.window_hits[0].blocks.empty());
    CHECK(kv.pool(0).is_cached(0));  // kind 0 still had them all
  }
}

TEST_CASE("a partial match copies in every kind; dropping it fits the window hits again") {
  KvCacheManager kv(windowed(16, 16));
  const auto a = iota_tokens(1, 13);
  admit_all_in_windows(kv, 1, a);
  kv.free(1);
  // [1..4 | 5..8 | 9 10 50 51 | 52]: two full hits and [9 10] copied from block 2 in both kinds.
  const auto b = concat(iota_tokens(1, 10), {50, 51, 52});
  const PrefixMatch match = kv.match_prefix(b);
  CHECK(match.blocks == std::vector<BlockId>{0, 1});
  CHECK(match.num_partial_tokens == 2);
  CHECK(match.window_hits[0].first_block == 1);  // the query at 10 reads 5..10
  CHECK(match.window_hits[0].blocks == std::vector<BlockId>{1});
  CHECK(match.window_hits[0].partial_block == 2);
  REQUIRE(kv.can_allocate(match, 3));
  const std::vector<BlockCopy> copies = kv.allocate(2, b, match, 3);
  REQUIRE(copies.size() == 2);
  CHECK((copies[0].src == 2 && copies[0].kind == 0));
  CHECK((copies[1].src == 2 && copies[1].kind == kWindow));
  CHECK(copies[1].dst == 4);
  CHECK(kind_table(kv, 2, kWindow) == std::vector<BlockId>{0, 1, 4, 5});
  CHECK(kv.filled_slots(4, kWindow) == 4);
  kv.release_copy_sources();
  CHECK(kv.pool(kWindow).ref_count(2) == 0);

  // Without the partial the hit point is 8: the window then needs blocks 0 and 1.
  const auto c = concat(iota_tokens(1, 10), {60, 61, 62});
  const PrefixMatch shorter = kv.without_partial(kv.match_prefix(c), c);
  CHECK(shorter.num_cached_tokens == 8);
  CHECK_FALSE(shorter.partial_block.has_value());
  CHECK(shorter.window_hits[0].first_block == 0);
  CHECK(shorter.window_hits[0].blocks == std::vector<BlockId>{0, 1});
  CHECK_FALSE(shorter.window_hits[0].partial_block.has_value());
}

TEST_CASE("fork and copy-on-write with a window kind; a shared block given back by one sample stays with the other") {
  KvCacheManager kv(windowed(8, 8));
  const auto prompt = iota_tokens(1, 6);  // [1..4 | 5 6]
  admit_all_in_windows(kv, 1, prompt);
  CHECK(kind_table(kv, 1, kWindow) == std::vector<BlockId>{0, 1});  // the query at 6 reads 1..6
  kv.fork(1, 2);
  CHECK(ref_counts_text(kv, kWindow) == "2 2 0 0 0 0 0 0");
  const std::vector<BlockCopy> copies = kv.append_slots(1, 1);
  REQUIRE(copies.size() == 2);
  CHECK((copies[0].src == 1 && copies[0].dst == 2 && copies[0].kind == 0));
  CHECK((copies[1].src == 1 && copies[1].dst == 2 && copies[1].kind == kWindow));
  CHECK(kv.append_slots(2, 1).empty());  // the last sharer writes in place
  CHECK(kv.stats().num_cow_copies == 2);
  // Sample 1 runs on to 11 tokens: before the query at 11 (reads 6..11) logical block 0 goes
  // from its window table; sample 2 still holds it.
  CHECK(kv.append_slots(1, 4).empty());  // 7..10: block 2 fills, block 3 holds 8..10
  kv.release_unreachable(1, 11);
  kv.release_unreachable(2, 7);
  CHECK(kind_table(kv, 1, kWindow) == std::vector<BlockId>{0, 2, 3});
  CHECK(kv.num_released_blocks(1, kWindow) == 1);
  CHECK(kind_table(kv, 2, kWindow) == std::vector<BlockId>{0, 1});
  CHECK(ref_counts_text(kv, kWindow) == "1 1 1 1 0 0 0 0");
  CHECK(ref_counts_text(kv, 0) == "2 1 1 1 0 0 0 0");
  // A fork after a release shares only what the parent still holds.
  kv.fork(1, 3);
  CHECK(ref_counts_text(kv, kWindow) == "1 1 2 2 0 0 0 0");
  CHECK(kv.num_released_blocks(3, kWindow) == 1);
  kv.free(2);
  CHECK(ref_counts_text(kv, kWindow) == "0 0 2 2 0 0 0 0");
  kv.free(1);
  kv.free(3);
  CHECK(ref_counts_text(kv, kWindow) == "0 0 0 0 0 0 0 0");
  CHECK(kv.stats().kinds[1].num_filled_slots == 0);
}

TEST_CASE("the blocks a lone sequence holds at most, per kind") {
  const KvCacheManager kv(windowed(8, 8));
  // Kind 0: every block of 100 tokens and the next: 26.
  CHECK(kv.num_blocks_alone(0, 100, 16) == 26);
  // Window 6, chunks of 16: 5 + 16 positions touch at most ceil(21 / 4) + 1 = 7 blocks.
  CHECK(kv.num_blocks_alone(kWindow, 100, 16) == 7);
  // Never more than the whole sequence's.
  CHECK(kv.num_blocks_alone(kWindow, 3, 16) == 1);
}
