// A model's weights as float32 in host memory, dequantized once at load, with a typed view
// per layer. Every pointer carries its row-major shape.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/raw_tensor.h"

namespace pagedgen {

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
};

struct ModelWeights {
  const float* token_embd;   // (vocab, hidden)
  const float* output_norm;  // (hidden)
  const float* output;       // (vocab, hidden); token_embd when the embeddings are tied
  std::vector<LayerWeights> layers;
  std::vector<float> rope_inv_freq;  // (rope_dim / 2) angle per position for each pair
  std::vector<std::unique_ptr<float[]>> storage;  // owns what the pointers above point to
  std::size_t num_parameters = 0;
};

// Dequantizes every tensor the config needs from `tensors` (a model file's, named
// `source` in messages); throws Error naming the tensor when one is missing, has the wrong
// shape or a type that cannot be dequantized.
ModelWeights load_model_weights(const ModelConfig& config, std::span<const RawTensor> tensors,
                                const std::string& source);

// RoPE angle per position for each rotated pair: theta^(-2i/rope_dim), with Llama 3.1
// scaling or a GGUF rope_freqs tensor (per-pair divisors) applied when present.
std::vector<float> rope_inverse_frequencies(const ModelConfig& config, const float* freq_divisors);

}  // namespace pagedgen
