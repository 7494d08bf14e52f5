// How wide a forward pass's activations are per token row (model/layer_op.h names the
// buffers), from the model's config: what the CPU and CUDA backends size them by.
#pragma once

#include <cstddef>

#include "model/model_config.h"

namespace pagedgen {

struct ActivationWidths {
  std::size_t hidden;  // x, xn, delta, head_in: hidden_size
  std::size_t q_dim;   // q, attn: num_heads * head_dim
  std::size_t kv_dim;  // k, v: num_kv_heads * head_dim
  std::size_t ffn;     // gate, up, act: intermediate_size
};

inline ActivationWidths activation_widths(const ModelConfig& config) {
  return ActivationWidths{static_cast<std::size_t>(config.hidden_size),
                          static_cast<std::size_t>(config.num_heads * config.head_dim),
                          static_cast<std::size_t>(config.num_kv_heads * config.head_dim),
                          static_cast<std::size_t>(config.intermediate_size)};
}

}  // namespace pagedgen
