// DeviceKvPools: the paged KV cache on the device. Every layer's K and V pools (each
// [num_blocks of its kind][num_kv_heads][block_size][head_dim] in the device dtype) in one
// allocation, grouped by layer kind so that one launch copies a block in every pool of a
// kind (copy-on-write and partial-prefix copies):
//
//   | kind 0: layer a K | layer a V | layer b K | layer b V | ... | kind 1: layer c K | ...
//   ^ kind_offset[0]    ^ layer_offset[a]                         ^ kind_offset[1]
//
// The shape (KvPoolShape) is the CPU backend's; the offsets are in elements.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/kv_layout.h"
#include "backend/kv_pool_shape.h"
#include "device_buffer.h"
#include "staged_upload.h"
#include "step/step_batch.h"

namespace pagedgen::gpu {

// Layer kinds of the KV cache (step/kv_kinds.h) the backend takes: the full-attention layers
// and at most one sliding window, since a model has one window size (ModelConfig::sliding_window).
inline constexpr std::size_t kMaxKvKinds = 2;

class DeviceKvPools {
 public:
  // Frees the pools (once `stream` has drained: queued kernels may read them) and allocates
  // those of `shape`, of element_bytes elements, zeroed. Throws SettingError (kv_pool) when
  // they do not fit in device memory.
  void allocate(KvPoolShape shape, std::size_t element_bytes, cudaStream_t stream);

  bool allocated() const { return pools_.bytes() > 0; }
  const KvPoolShape& shape() const { return shape_; }
  std::size_t bytes() const { return pools_.bytes(); }
  // Counts the moves of the pools' address (a CUDA graph keeps the old one).
  uint64_t generation() const { return generation_; }

  // Layer `layer`'s K and V pools: shape().layer_layout(layer).elements_per_layer() elements
  // each, of the dtype given to allocate().
  void* k_pool(std::size_t layer) const;
  void* v_pool(std::size_t layer) const;

  // Queues `copies` (checked against the pools; in order: a copy may read a block an earlier
  // one wrote) on `stream`, their list uploaded through `upload`.
  void copy_blocks(std::span<const BlockCopy> copies, StagedUpload& upload, cudaStream_t stream) const;

 private:
  // Queues copies [0, num_copies) of device_copies, all of `kind` and independent of each
  // other, in one launch.
  void launch_copies(const BlockCopy* device_copies, std::size_t num_copies, KvKindId kind, cudaStream_t stream) const;

  KvPoolShape shape_;
  std::size_t element_bytes_ = 0;
  std::vector<std::size_t> layer_offset_;  // [num_layers] elements from the start to the layer's K pool
  std::vector<std::size_t> kind_offset_;   // [kinds] elements from the start to the kind's first pool
  DeviceBuffer pools_;
  uint64_t generation_ = 0;
};

}  // namespace pagedgen::gpu
