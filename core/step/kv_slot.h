// Slot numbers of the paged KV cache: StepBatch::slot_mapping holds one per token, and the
// scheduler (which writes them), the backends (which read them) and the StepBatch check all
// split and make them here. Host-and-device functions, no CUDA includes.
#pragma once

#include <cstdint>

#include "util/host_device.h"

namespace pagedgen {

// A global slot number split into its block and the offset in it:
//
//   slot = block_id * block_size + slot_in_block,   0 <= slot_in_block < block_size
//
//   block_size 4:   block 0        block 1        block 2
//                   [0  1  2  3 ] [4  5  6  7 ] [8  9  10 11]   slot 9 = {block 2, offset 1}
struct KvSlot {
  int64_t block_id;
  int64_t slot_in_block;
};

PG_HOST_DEVICE constexpr KvSlot split_slot(int64_t slot, int64_t block_size) {
  return KvSlot{slot / block_size, slot % block_size};
}

PG_HOST_DEVICE constexpr int64_t make_slot(int64_t block_id, int64_t slot_in_block, int64_t block_size) {
  return block_id * block_size + slot_in_block;
}

}  // namespace pagedgen
