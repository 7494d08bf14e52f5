// The shape of a backend's KV pools, shared by the CPU and CUDA backends: the layout of
// each layer kind's pools (kind 0 first) and the kind of each layer, as allocate_kv_pool
// (every layer in one kind) or allocate_kv_pools (the model's kinds) set them, and the
// check of a block copy against them. Where the bytes live is each backend's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/kv_layout.h"
#include "model/model_config.h"
#include "step/kv_kinds.h"
#include "step/step_batch.h"

namespace pagedgen {

class KvPoolShape {
 public:
  KvPoolShape() = default;  // no pools yet: no kind, no layer

  // Every layer in kind 0, of num_blocks blocks (Backend::allocate_kv_pool).
  static KvPoolShape one_kind(const ModelConfig& config, std::size_t num_blocks, std::size_t block_size);
  // The model's kinds (ModelConfig::kv_kinds), kind_num_blocks[k] blocks in kind k
  // (Backend::allocate_kv_pools); a PG_CHECK fails when the counts are not one per kind.
  static KvPoolShape by_kind(const ModelConfig& config, std::span<const int32_t> kind_num_blocks,
                             std::size_t block_size);

  std::span<const KvLayout> layouts() const { return layouts_; }  // [kinds]
  // Kind `kind`'s layout; a PG_CHECK fails for a kind the pools lack.
  const KvLayout& layout(KvKindId kind) const;
  std::size_t num_layers() const { return layer_kinds_.size(); }
  KvKindId layer_kind(std::size_t layer) const { return layer_kinds_[layer]; }
  const KvLayout& layer_layout(std::size_t layer) const {
    return layouts_[static_cast<std::size_t>(layer_kinds_[layer])];
  }
  // Layers whose pools are of `kind`.
  int32_t num_layers_of_kind(KvKindId kind) const;

  // `copies` without those that copy a block onto itself; a PG_CHECK fails for a copy of a
  // kind the pools lack or of a block outside its kind's pool.
  std::vector<BlockCopy> moving_copies(std::span<const BlockCopy> copies) const;

 private:
  KvPoolShape(const ModelConfig& config, std::span<const int32_t> kind_num_blocks, std::size_t block_size,
              std::vector<KvKindId> layer_kinds);

  std::vector<KvLayout> layouts_;      // [kinds] each kind's pool of one layer
  std::vector<KvKindId> layer_kinds_;  // [num_layers] the kind of each layer's pools
};

}  // namespace pagedgen
