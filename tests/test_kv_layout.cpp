// The paged KV cache's address arithmetic (kv_layout.h), on offsets worked out by hand.
#include <doctest/doctest.h>

#include <set>

#include "backend/kv_layout.h"

using namespace pagedgen;

TEST_CASE("KvLayout offsets follow [num_blocks][num_kv_heads][block_size][head_dim]") {
  // 5 blocks, 3 KV heads, 4 slots per block, head_dim 8.
  constexpr KvLayout layout{5, 3, 4, 8};
  CHECK(layout.head_stride() == 32);   // 4 slots * 8 dims
  CHECK(layout.block_stride() == 96);  // 3 heads * 32
  CHECK(layout.elements_per_layer() == 480);
  CHECK(layout.offset(0, 0, 0, 0) == 0);
  CHECK(layout.offset(0, 0, 0, 7) == 7);
  CHECK(layout.offset(0, 0, 1, 0) == 8);
  CHECK(layout.offset(0, 1, 0, 0) == 32);
  CHECK(layout.offset(1, 0, 0, 0) == 96);
  // block 3, head 2, slot 1, dim 5: 3*96 + 2*32 + 1*8 + 5 = 365
  CHECK(layout.offset(3, 2, 1, 5) == 365);
  CHECK(layout.offset(4, 2, 3, 7) == 479);  // the last element
  static_assert(KvLayout{5, 3, 4, 8}.offset(3, 2, 1, 5) == 365, "usable in constant expressions");
}

TEST_CASE("KvLayout offsets are a bijection onto [0, elements_per_layer)") {
  const KvLayout layout{3, 2, 5, 4};
  std::set<int64_t> seen;
  for (int64_t b = 0; b < layout.num_blocks; ++b)
    for (int64_t h = 0; h < layout.num_kv_heads; ++h)
      for (int64_t s = 0; s < layout.block_size; ++s)
        for (int64_t d = 0; d < layout.head_dim; ++d) {
          const int64_t off = layout.offset(b, h, s, d);
          CHECK(off >= 0);
          CHECK(off < layout.elements_per_layer());
          seen.insert(off);
        }
  CHECK(seen.size() == static_cast<std::size_t>(layout.elements_per_layer()));
}

TEST_CASE("block size 1 puts one token per block") {
  const KvLayout layout{10, 2, 1, 4};
  CHECK(layout.offset(7, 1, 0, 3) == 7 * 8 + 1 * 4 + 3);
}

TEST_CASE("positions map through the block table") {
  // Block size 4; the sequence's logical blocks 0, 1, 2 live in physical blocks 9, 2, 5.
  const int32_t table[] = {9, 2, 5};
  const KvSlot p0 = position_slot(table, 0, 4);
  CHECK(p0.block_id == 9);
  CHECK(p0.slot_in_block == 0);
  const KvSlot p6 = position_slot(table, 6, 4);
  CHECK(p6.block_id == 2);
  CHECK(p6.slot_in_block == 2);
  const KvSlot p11 = position_slot(table, 11, 4);
  CHECK(p11.block_id == 5);
  CHECK(p11.slot_in_block == 3);
  // Its slot number, as the slot mapping carries it: 5 * 4 + 3.
  CHECK(make_slot(p11.block_id, p11.slot_in_block, 4) == 23);
}
