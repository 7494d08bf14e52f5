// Slot numbers (step/kv_slot.h): split into block and offset and made back, by hand.
#include <doctest/doctest.h>

#include <cstdint>

#include "step/kv_slot.h"

using namespace pagedgen;

TEST_CASE("slots split into block and offset and back") {
  CHECK(split_slot(0, 16).block_id == 0);
  CHECK(split_slot(0, 16).slot_in_block == 0);
  CHECK(split_slot(15, 16).block_id == 0);
  CHECK(split_slot(15, 16).slot_in_block == 15);
  CHECK(split_slot(16, 16).block_id == 1);
  CHECK(split_slot(16, 16).slot_in_block == 0);
  CHECK(split_slot(37, 8).block_id == 4);
  CHECK(split_slot(37, 8).slot_in_block == 5);
  CHECK(split_slot(9, 1).block_id == 9);
  CHECK(split_slot(9, 1).slot_in_block == 0);
  CHECK(make_slot(4, 5, 8) == 37);
  for (int64_t slot = 0; slot < 100; ++slot) {
    const KvSlot s = split_slot(slot, 7);
    CHECK(make_slot(s.block_id, s.slot_in_block, 7) == slot);
  }
}
