// The paged KV cache's address arithmetic, shared by the CPU and CUDA backends: the one
// place that turns (block id, kv head, slot in block, dim) into an element offset, and a
// position into its slot through a block table (slot numbers: step/kv_slot.h, below the
// scheduler). No CUDA includes; nvcc sees host-and-device functions.
#pragma once

#include <cstdint>

#include "step/kv_slot.h"  // KvSlot, split_slot, make_slot
#include "util/host_device.h"

namespace pagedgen {

// One layer's K pool (and, identically, its V pool), row-major:
//
//   [num_blocks][num_kv_heads][block_size][head_dim]
//
//   block 0                               block 1
//   +-------------------------------------+-------------------------------------+---
//   | head 0: slot 0 [d0 .. d(hd-1)]      | head 0: slot 0 ...                  |
//   |         slot 1 [...]                |         ...                         |
//   |         ...  slot bs-1              |                                     |
//   | head 1: slot 0 ... slot bs-1        | head 1: ...                         |
//   | ...                                 |                                     |
//   +-------------------------------------+-------------------------------------+---
//   <------------- block_stride -------->
//            <-- head_stride --> = block_size * head_dim
//
// A block is one contiguous run, so copy-on-write copies block_stride elements per layer,
// and one head's slots within a block are contiguous, so attention reads block_size
// consecutive head_dim vectors per block. The same block id addresses the same slots in
// every layer (each layer has its own pool of this shape).
//
// Passed by value to kernels: sizes and strides only, no pointers.
struct KvLayout {
  int64_t num_blocks = 0;
  int64_t num_kv_heads = 0;
  int64_t block_size = 0;
  int64_t head_dim = 0;

  PG_HOST_DEVICE constexpr int64_t head_stride() const { return block_size * head_dim; }
  PG_HOST_DEVICE constexpr int64_t block_stride() const { return num_kv_heads * block_size * head_dim; }
  // Elements of one layer's K pool (the V pool has as many).
  PG_HOST_DEVICE constexpr int64_t elements_per_layer() const { return num_blocks * block_stride(); }

  // The element offset of (block_id, kv_head, slot_in_block, dim) in one layer's pool.
  PG_HOST_DEVICE constexpr int64_t offset(int64_t block_id, int64_t kv_head, int64_t slot_in_block, int64_t dim) const {
    return ((block_id * num_kv_heads + kv_head) * block_size + slot_in_block) * head_dim + dim;
  }
};

// Where position `pos` of a sequence lives, through its block table row:
//   logical block pos / block_size -> physical block_table[pos / block_size], slot pos % block_size
PG_HOST_DEVICE constexpr KvSlot position_slot(const int32_t* block_table, int64_t pos, int64_t block_size) {
  return KvSlot{block_table[pos / block_size], pos % block_size};
}

}  // namespace pagedgen
