// A model's weights in host memory with a typed view per layer; every pointer carries its
// row-major shape. Two forms: everything dequantized to float32 once at load (the exact
// path, the GPU's staging copy), or matrices of quantized files kept quantized
// (PackedMatrix, the CPU's fast path) with only the float tensors as float32.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/packed_matrix.h"
#include "model/raw_tensor.h"

namespace pagedgen {

// A layer's matrices kept quantized; each null where that matrix is float32 (in LayerWeights).
struct PackedLayerWeights {
  const PackedMatrix* wq = nullptr;
  const PackedMatrix* wk = nullptr;
  const PackedMatrix* wv = nullptr;
  const PackedMatrix* wo = nullptr;
  const PackedMatrix* w_gate = nullptr;
  const PackedMatrix* w_up = nullptr;
  const PackedMatrix* w_down = nullptr;
};

// A matrix is either a float pointer or a packed one (the other null).
struct LayerWeights {
  const float* attn_norm;  // (hidden)
  const float* wq;         // (num_heads * head_dim, hidden)
  const float* wk;         // (num_kv_heads * head_dim, hidden)
  const float* wv;         // (num_kv_heads * head_dim, hidden)
  const float* bq;         // (num_heads * head_dim) or nullptr without QKV bias
  const float* bk;         // (num_kv_heads * head_dim) or nullptr
  const float* bv;         // (num_kv_heads * head_dim) or nullptr
  const float* wo;         // (hidden, num_heads * head_dim)
  const float* ffn_norm;   // (hidden)
  const float* w_gate;     // (intermediate, hidden)
  const float* w_up;       // (intermediate, hidden)
  const float* w_down;     // (hidden, intermediate)
  PackedLayerWeights packed;
};

struct ModelWeights {
  const float* token_embd;   // (vocab, hidden)
  const float* output_norm;  // (hidden)
  const float* output;       // (vocab, hidden); token_embd when the embeddings are tied
  const PackedMatrix* token_embd_packed = nullptr;  // instead of token_embd when kept quantized
  const PackedMatrix* output_packed = nullptr;      // instead of output when kept quantized
  std::vector<LayerWeights> layers;
  std::vector<float> rope_inv_freq;  // (rope_dim / 2) angle per position for each pair
  std::vector<std::unique_ptr<float[]>> storage;  // owns what the float pointers point to
  std::vector<std::unique_ptr<PackedMatrix>> packed_storage;  // owns the packed matrices
  std::size_t num_parameters = 0;
};

enum class WeightForm {
  kFloat32,              // every tensor dequantized
  kPackedWhereQuantized  // matrices of a quant_format kept quantized; the rest float32
};

// Loads every tensor the config needs from `tensors` (a model file's, named `source` in
// messages) in `form`; throws Error naming the tensor when one is missing, has the wrong
// shape or a type that cannot be loaded.
ModelWeights load_model_weights(const ModelConfig& config, std::span<const RawTensor> tensors,
                                const std::string& source, WeightForm form = WeightForm::kFloat32);

// RoPE angle per position for each rotated pair: theta^(-2i/rope_dim), with Llama 3.1
// scaling or a GGUF rope_freqs tensor (per-pair divisors) applied when present.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config, const float* freq_divisors);

}  // namespace pagedgen
