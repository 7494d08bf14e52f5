#include "backend/kv_pool_shape.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace pagedgen {

KvPoolShape::KvPoolShape(const ModelConfig& config, std::span<const int32_t> kind_num_blocks, std::size_t block_size,
                         std::vector<KvKindId> layer_kinds)
    : layer_kinds_(std::move(layer_kinds)) {
  PG_CHECK(block_size >= 1, "block size must be at least 1");
  for (int32_t num_blocks : kind_num_blocks)
    layouts_.push_back(KvLayout{num_blocks, config.num_kv_heads, static_cast<int64_t>(block_size), config.head_dim});
}

KvPoolShape KvPoolShape::one_kind(const ModelConfig& config, std::size_t num_blocks, std::size_t block_size) {
  const int32_t one_kind[] = {static_cast<int32_t>(num_blocks)};
  return KvPoolShape(config, one_kind, block_size,
                     std::vector<KvKindId>(static_cast<std::size_t>(config.num_layers), 0));
}

KvPoolShape KvPoolShape::by_kind(const ModelConfig& config, std::span<const int32_t> kind_num_blocks,
                                 std::size_t block_size) {
  PG_CHECK(kind_num_blocks.size() == config.kv_kinds().size(), "{} pool kinds for a model of {}",
           kind_num_blocks.size(), config.kv_kinds().size());
  std::vector<KvKindId> layer_kinds;
  for (int64_t layer = 0; layer < config.num_layers; ++layer) layer_kinds.push_back(config.layer_kv_kind(layer));
  return KvPoolShape(config, kind_num_blocks, block_size, std::move(layer_kinds));
}

const KvLayout& KvPoolShape::layout(KvKindId kind) const {
  PG_CHECK(kind >= 0 && kind < std::ssize(layouts_), "layer kind {}, the pools have {}", kind, layouts_.size());
  return layouts_[static_cast<std::size_t>(kind)];
}

int32_t KvPoolShape::num_layers_of_kind(KvKindId kind) const {
  return static_cast<int32_t>(std::ranges::count(layer_kinds_, kind));
}

std::vector<BlockCopy> KvPoolShape::moving_copies(std::span<const BlockCopy> copies) const {
  std::vector<BlockCopy> moving;
  for (const BlockCopy& copy : copies) {
    PG_CHECK(copy.kind >= 0 && copy.kind < std::ssize(layouts_), "block copy of layer kind {}, the pools have {}",
             copy.kind, layouts_.size());
    const int64_t num_blocks = layouts_[static_cast<std::size_t>(copy.kind)].num_blocks;
    PG_CHECK(copy.src >= 0 && copy.src < num_blocks && copy.dst >= 0 && copy.dst < num_blocks,
             "block copy {} -> {} outside a pool of {} blocks", copy.src, copy.dst, num_blocks);
    if (copy.src != copy.dst) moving.push_back(copy);
  }
  return moving;
}

}  // namespace pagedgen
