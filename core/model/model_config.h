// The architecture of a decoder-only model of the Llama family and its relatives (Llama 2/3,
// Mistral, TinyLlama, SmolLM/SmolLM2, Qwen2, Qwen3, Phi-3, Gemma 2, Gemma 3), read from GGUF
// metadata or an HF config.json, and the KV sizes that follow from it. The Llama block is
// the default; the fields after "Beyond the Llama block" say where an architecture departs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "step/kv_kinds.h"

namespace pagedgen {

class GgufFile;

// Which dimensions RoPE rotates together within a head of size d.
//   Interleaved: (0,1) (2,3) ... (d-2,d-1)   -- GGUF llama files (weights permuted at conversion)
//   HalfSplit:   (0,d/2) (1,d/2+1) ...        -- HF checkpoints, GGUF qwen2 ("NeoX" style)
enum class RopeLayout { Interleaved, HalfSplit };

// Llama 3.1-style frequency scaling of RoPE (rope_scaling.rope_type == "llama3").
struct Llama3RopeScaling {
  float factor;
  float low_freq_factor;
  float high_freq_factor;
  int64_t original_context_length;
};

// The MLP's gated activation: silu(gate) * up (SwiGLU) or gelu_tanh(gate) * up (GeGLU).
enum class MlpActivation { kSilu, kGeluTanh };

struct ModelConfig {
  std::string architecture;  // "llama", "qwen2", "mistral", "qwen3", "phi3", "gemma2", "gemma3"
  std::string name;          // human-readable, may be empty
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t context_length = 0;  // max_model_len
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int64_t rope_dim = 0;  // dimensions rotated per head (== head_dim for this family)
  RopeLayout rope_layout = RopeLayout::Interleaved;
  std::optional<Llama3RopeScaling> rope_scaling;
  bool tied_embeddings = false;  // output head shares token_embd
  bool qkv_bias = false;         // Qwen2

  // Beyond the Llama block (the defaults are the Llama block):
  bool qk_norm = false;          // Qwen3, Gemma 3: RMSNorm over each q and k head (head_dim weights) before RoPE
  bool post_norms = false;       // Gemma 2/3: RMSNorm of each sub-block's output before its residual add
  float embedding_scale = 1.0f;  // Gemma: token embeddings times sqrt(hidden_size)
  MlpActivation activation = MlpActivation::kSilu;
  std::optional<float> attention_scale;      // softmax scale of q.k; unset: 1/sqrt(head_dim)
  std::optional<float> attn_logit_softcap;   // Gemma 2: scores s become cap * tanh(s / cap)
  std::optional<float> final_logit_softcap;  // Gemma 2: logits alike
  // RoPE of the full-attention layers: positions divided by this factor (linear scaling).
  float rope_linear_factor = 1.0f;
  // Sliding-window attention (Gemma 2/3): the layers marked in window_layers attend to the
  // last `sliding_window` positions, their own included, and rotate with window_rope_theta
  // (no linear scaling); the others attend to every position.
  std::optional<int64_t> sliding_window;
  std::vector<bool> window_layers;  // [num_layers] when sliding_window is set, else empty
  float window_rope_theta = 10000.0f;

  float softmax_scale() const;
  bool layer_has_window(int64_t layer) const {
    return sliding_window.has_value() && window_layers.at(static_cast<std::size_t>(layer));
  }
  // Whether the window layers rotate with other frequencies than the full-attention ones.
  bool window_rope_differs() const {
    return sliding_window.has_value() && (window_rope_theta != rope_theta || rope_linear_factor != 1.0f);
  }

  // The layer kinds of the paged KV cache (step/kv_kinds.h): kind 0 the layers without a
  // window, kind 1 the window layers. One kind (every layer) when no layer has a window or
  // every layer has one (the window layers then keep every position, as full ones do).
  std::vector<KvKind> kv_kinds() const;
  KvKindId layer_kv_kind(int64_t layer) const { return kv_kinds().size() > 1 && layer_has_window(layer) ? 1 : 0; }

  // K and V elements of one token across all layers: 2 * layers * kv_heads * head_dim.
  int64_t kv_elements_per_token() const { return 2 * num_layers * num_kv_heads * head_dim; }
  std::size_t kv_bytes_per_token(std::size_t bytes_per_element) const {
    return static_cast<std::size_t>(kv_elements_per_token()) * bytes_per_element;
  }
};

// Throw Error naming the key (and file) when a required key is missing, a value is out of
// range (a dimension of 0 or past its sane upper bound, a RoPE base or RMSNorm epsilon that
// is not a positive finite number), or the architecture is not one pagedgen runs.
ModelConfig model_config_from_gguf(const GgufFile& gguf);
ModelConfig model_config_from_hf_json(std::string_view config_json, const std::filesystem::path& where);

// Throws Error when the dimensions are out of range or inconsistent (heads not dividing,
// KV elements per token past 2^32, etc.): an accepted config's sizes never overflow.
void validate_model_config(const ModelConfig& config, std::string_view where);

}  // namespace pagedgen
