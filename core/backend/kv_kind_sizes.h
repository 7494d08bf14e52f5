// What a model's layer kinds (ModelConfig::kv_kinds, step/kv_kinds.h) take in a backend's
// KV pools, shared by the backends that keep one pool per kind (CPU and CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "step/kv_kinds.h"
#include "util/error.h"

namespace pagedgen {

// The kinds' windows, kind 0 first (Backend::kv_kind_windows).
inline std::vector<int32_t> kv_kind_windows(const ModelConfig& config) {
  std::vector<int32_t> windows;
  for (const KvKind& kind : config.kv_kinds()) windows.push_back(kind.window);
  return windows;
}

// Bytes one block of `kind` takes across that kind's layers, from the bytes one block takes
// across all layers (Backend::kv_kind_bytes_per_block).
inline std::size_t kv_kind_bytes(const ModelConfig& config, KvKindId kind, std::size_t all_layers_bytes) {
  const std::vector<KvKind> kinds = config.kv_kinds();
  PG_CHECK(kind >= 0 && kind < std::ssize(kinds), "layer kind {} of {}", kind, kinds.size());
  return all_layers_bytes / static_cast<std::size_t>(config.num_layers) *
         static_cast<std::size_t>(kinds[static_cast<std::size_t>(kind)].num_layers);
}

}  // namespace pagedgen
