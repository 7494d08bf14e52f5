// Where the CUDA backend keeps each weight tensor, computed from the config alone, so that
// the backend's upload and `inspect` (no GPU needed) agree on it. Two device buffers: the
// typed one holds every matrix in the device dtype, the float32 one the norm weights, the
// biases and the RoPE frequencies. Matrices one GEMM reads as one are back to back (Q, K
// and V; gate and up); each group starts 256-byte aligned.
//
//   typed:   [token_embd][output]  per layer: [q|k|v] [wo] [gate|up] [down]
//   float32: [output_norm, rope_inv_freq, window_rope_inv_freq]
//            per layer: [attn_norm, ffn_norm] [bq|bk|bv] [q_norm, k_norm] [attn_post_norm, ffn_post_norm]
//   (output only without tied embeddings; the window layers' RoPE table only when it
//   differs, ModelConfig::window_rope_differs; biases, q/k norms and post norms only for
//   the architectures that have them)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"
#include "model/tensor_chunks.h"

namespace pagedgen {

struct WeightPlacement {
  std::string name;             // canonical tensor name, kRopeInvFreq or kWindowRopeInvFreq
  std::vector<uint64_t> shape;  // row-major, as the model file holds it
  bool typed;                   // in the typed buffer, else in the float32 one
  std::size_t offset;           // elements from the start of its buffer
  std::size_t num_elements;
};

// The values of a computed placement (kRopeInvFreq, kWindowRopeInvFreq).
struct ComputedWeights {
  const WeightPlacement* placement;
  std::vector<float> values;  // placement->num_elements
};

class DeviceWeightLayout {
 public:
  // Computed on the host at load, not read from the file.
  static constexpr std::string_view kRopeInvFreq = "rope_inv_freq";
  static constexpr std::string_view kWindowRopeInvFreq = "window_rope_inv_freq";

  DeviceWeightLayout(const ModelConfig& config, WeightDtype dtype);

  WeightDtype dtype() const { return dtype_; }
  // In buffer order (typed and float32 interleaved as the list above).
  const std::vector<WeightPlacement>& placements() const { return placements_; }
  const WeightPlacement& at(std::string_view name) const;
  // The placements computed on the host rather than read from the file, with their values:
  // the RoPE tables (rope_freqs.weight's per-pair divisors applied when not null).
  std::vector<ComputedWeights> computed(const ModelConfig& config, const float* freq_divisors) const;

  std::size_t typed_bytes() const { return typed_elements_ * weight_dtype_bytes(dtype_); }
  std::size_t float32_bytes() const { return float_elements_ * sizeof(float); }
  // The device memory the weights take, alignment padding included.
  std::size_t bytes() const { return typed_bytes() + float32_bytes(); }

 private:
  using Parts = std::vector<std::pair<std::string, std::vector<uint64_t>>>;
  void place(const Parts& parts, bool typed);

  WeightDtype dtype_;
  std::size_t typed_elements_ = 0;
  std::size_t float_elements_ = 0;
  std::vector<WeightPlacement> placements_;
};

}  // namespace pagedgen
