// A model's weights in host memory with a typed view per layer; every pointer carries its
// row-major shape. Two forms: everything dequantized to float32 once at load (the exact
// path, the GPU's staging copy), or matrices kept as stored for the CPU's fast path
// (quantized: PackedMatrix; float16 / bfloat16: HalfMatrix) with the rest as float32.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/half_matrix.h"
#include "model/packed_matrix.h"
#include "model/raw_tensor.h"
#include "util/stop_token.h"

namespace pagedgen {

// A layer's matrices in one kept form (quantized: PackedMatrix; float16 / bfloat16:
// HalfMatrix); each null where that matrix is in another form.
template <typename Matrix>
struct LayerMatrices {
  const Matrix* wq = nullptr;
  const Matrix* wk = nullptr;
  const Matrix* wv = nullptr;
  const Matrix* wo = nullptr;
  const Matrix* w_gate = nullptr;
  const Matrix* w_up = nullptr;
  const Matrix* w_down = nullptr;
};
using PackedLayerWeights = LayerMatrices<PackedMatrix>;
using HalfLayerWeights = LayerMatrices<HalfMatrix>;

// A matrix is a float pointer, a packed one or a half one (the others null).
struct LayerWeights {
  const float* attn_norm = nullptr;       // (hidden)
  const float* wq = nullptr;              // (num_heads * head_dim, hidden)
  const float* wk = nullptr;              // (num_kv_heads * head_dim, hidden)
  const float* wv = nullptr;              // (num_kv_heads * head_dim, hidden)
  const float* bq = nullptr;              // (num_heads * head_dim) or nullptr without QKV bias
  const float* bk = nullptr;              // (num_kv_heads * head_dim) or nullptr
  const float* bv = nullptr;              // (num_kv_heads * head_dim) or nullptr
  const float* q_norm = nullptr;          // (head_dim) or nullptr without q/k norms (ModelConfig::qk_norm)
  const float* k_norm = nullptr;          // (head_dim) or nullptr
  const float* wo = nullptr;              // (hidden, num_heads * head_dim)
  const float* attn_post_norm = nullptr;  // (hidden) or nullptr without post norms (ModelConfig::post_norms)
  const float* ffn_norm = nullptr;        // (hidden)
  const float* w_gate = nullptr;          // (intermediate, hidden)
  const float* w_up = nullptr;            // (intermediate, hidden)
  const float* w_down = nullptr;          // (hidden, intermediate)
  const float* ffn_post_norm = nullptr;   // (hidden) or nullptr
  PackedLayerWeights packed;
  HalfLayerWeights half;
};

struct ModelWeights {
  const float* token_embd;                          // (vocab, hidden)
  const float* output_norm;                         // (hidden)
  const float* output;                              // (vocab, hidden); token_embd when the embeddings are tied
  const PackedMatrix* token_embd_packed = nullptr;  // instead of token_embd when kept quantized
  const PackedMatrix* output_packed = nullptr;      // instead of output when kept quantized
  const HalfMatrix* token_embd_half = nullptr;      // instead of token_embd when kept float16 / bfloat16
  const HalfMatrix* output_half = nullptr;          // instead of output when kept float16 / bfloat16
  std::vector<LayerWeights> layers;
  std::vector<float> rope_inv_freq;               // (rope_dim / 2) angle per position for each pair
  std::vector<float> rope_inv_freq_window;        // (rope_dim / 2) of the window layers when they differ, else empty
  std::vector<std::unique_ptr<float[]>> storage;  // owns what the float pointers point to
  std::vector<std::unique_ptr<PackedMatrix>> packed_storage;  // owns the packed matrices
  std::vector<std::unique_ptr<HalfMatrix>> half_storage;      // owns the half matrices
  std::size_t num_parameters = 0;
};

enum class WeightForm {
  kFloat32,              // every tensor dequantized
  kPackedWhereQuantized  // matrices of a quant_format kept quantized, F16/BF16 ones kept as
                         // they are (HalfMatrix); the rest float32
};

// Loads every tensor the config needs from `tensors` (a model file's, named `source` in
// messages; fused ones are split, fused_tensors.h) in `form`; throws Error naming the
// tensor when one is missing, has the wrong shape or a type that cannot be loaded; Stopped
// when `stop` asks (read before each tensor is converted).
ModelWeights load_model_weights(const ModelConfig& config, std::span<const RawTensor> tensors,
                                const std::string& source, WeightForm form = WeightForm::kFloat32,
                                const StopToken& stop = {});

// RoPE angle per position for each rotated pair of the full-attention layers:
// theta^(-2i/rope_dim) / rope_linear_factor, with Llama 3.1 scaling or a GGUF rope_freqs
// tensor (per-pair divisors) applied when present.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config, const float* freq_divisors);
// The same for the sliding-window layers: window_rope_theta^(-2i/rope_dim), unscaled.
std::vector<float> window_rope_inverse_frequencies(const ModelConfig& config);
// The table `layer` rotates with: rope_inv_freq_window for a window layer when it differs.
std::span<const float> layer_rope_inv_freq(const ModelConfig& config, const ModelWeights& weights, int64_t layer);

}  // namespace pagedgen
