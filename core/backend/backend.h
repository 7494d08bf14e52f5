// The Backend contract: the only thing that differs between CPU and CUDA. It owns the KV
// pool (K and V per layer as [num_blocks][num_kv_heads][block_size][head_dim], see
// kv_layout.h) and runs forward steps described by a StepBatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "engine/step_batch.h"

namespace pagedgen {

// Device memory a backend holds, in bytes; all zero for the CPU backend.
struct DeviceMemoryReport {
  int64_t weight_bytes = 0;
  int64_t kv_pool_bytes = 0;
  int64_t activation_bytes = 0;  // activations, attention and GEMM workspaces
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;

  // Bytes one KV block takes across all layers (K and V), at this backend's KV dtype.
  virtual std::size_t kv_bytes_per_block(std::size_t block_size) const = 0;

  // (Re)allocates the KV pool: num_blocks blocks of block_size token slots each.
  virtual void allocate_kv_pool(std::size_t num_blocks, std::size_t block_size) = 0;

  // Runs the step: writes the new tokens' K/V at their slots, attends over each
  // sequence's blocks, and writes logits for batch.logits_rows into `logits`
  // (logits_rows.size(), vocab). Results for a token never depend on the other sequences
  // in the batch, the block size or the block ids (determinism contract).
  virtual void forward(const StepBatch& batch, std::span<float> logits) = 0;

  // Copy-on-write: copies whole blocks in every layer, in order.
  virtual void copy_blocks(std::span<const BlockCopy> copies) = 0;

  // What the backend holds on a device (for the stats); the CPU backend holds nothing there.
  virtual DeviceMemoryReport device_memory() const { return {}; }
};

}  // namespace pagedgen
