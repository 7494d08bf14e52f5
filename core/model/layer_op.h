// The ops a forward pass is made of (layer_program.h lists them per architecture), and the
// interface a backend implements to run them: each op is one step of the decoder block as
// the backends fuse it (bias + q/k norms + RoPE + KV write is one op, gate/up + activation
// another), named by what it computes, never by architecture. An op carries every choice an
// architecture makes (which norm, which window, which cap), so a backend reads no
// architecture flag: it looks up the weights the op names and runs its kernel.
//
// Buffers, per token row of the step (each backend owns its own):
//   x (tokens, hidden) residual stream     xn (tokens, hidden) normed input of a sub-block
//   q, k, v  after QkvProjection           attn (tokens, num_heads * head_dim)
//   delta (tokens, hidden) a sub-block's output, added to x by the next ResidualNorm
//   act (tokens, ffn)                      head_in (logits rows, hidden), logits (rows, vocab)
//
// A new op touches: this file (its struct, LayerOp, a LayerOps method), layer_program.cpp
// (where it runs), core/cpu/cpu_backend.h and cpu_backend_ops.cpp (its CPU run), and
// gpu/device_layer_ops.cpp (TypedLayerOps::run); the compiler names each backend that
// lacks it. New math also brings its CPU reference (core/cpu/cpu_ops.h) and kernel
// (gpu/llama_kernels.*) with their op tests, and tests/test_layer_program.cpp prints it. A
// new architecture that recombines existing ops touches model_config.cpp alone.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <variant>

#include "model/model_config.h"

namespace pagedgen {

// A norm weight (hidden, or head_dim for none here): which one, of which layer.
enum class NormKind : uint8_t { kAttn, kAttnPost, kFfn, kFfnPost, kOutput };
struct NormWeight {
  NormKind kind;
  int32_t layer;  // unused for kOutput
};

// The weight `norm` names among a model's norms: `output` for kOutput, else that field of
// `layer` (the norm's layer). The host's and the device's layer weights name them alike.
template <typename Layer>
const float* select_norm_weight(NormWeight norm, const float* output, const Layer& layer) {
  switch (norm.kind) {
    case NormKind::kAttn:
      return layer.attn_norm;
    case NormKind::kAttnPost:
      return layer.attn_post_norm;
    case NormKind::kFfn:
      return layer.ffn_norm;
    case NormKind::kFfnPost:
      return layer.ffn_post_norm;
    case NormKind::kOutput:
      break;
  }
  return output;
}

// The RoPE rotation table a layer uses: the full-attention layers' (rope_inv_freq), or the
// sliding-window layers' when they rotate otherwise (rope_inv_freq_window).
enum class RopeTable : uint8_t { kFull, kWindow };

// x = token embeddings of the step's tokens, times `scale` (skipped when 1).
struct EmbedTokens {
  float scale;
};

// With add_delta: x += delta, or x += rms_norm(delta, *delta_norm) (a post norm); then
// xn = rms_norm(x, norm), or, with logits_rows, head_in = rms_norm(x, norm) of the rows
// that need logits only (those rows alone get the add).
struct ResidualNorm {
  bool add_delta;
  std::optional<NormWeight> delta_norm;
  NormWeight norm;
  bool logits_rows;
};

// q, k, v = xn @ wq^T, wk^T, wv^T of `layer`.
struct QkvProjection {
  int32_t layer;
};

// q, k (and v) += bias when `bias`; each head of q and k rms-normed by q_norm / k_norm when
// `qk_norm`; q and k rotated at each token's position with `rope`; then every new token's
// k and v into the layer's KV pools (before attention: later tokens of a chunk read them).
struct QkvRopeKvWrite {
  int32_t layer;
  bool bias;
  bool qk_norm;
  RopeTable rope;
};

// attn = paged attention of q over the layer's pools: scores times `scale`, soft-capped
// by `softcap` (0: none), over the last `window` positions (0: every position).
struct Attention {
  int32_t layer;
  int32_t window;
  float softcap;
  float scale;
};

// delta = attn @ wo^T of `layer`.
struct OutputProjection {
  int32_t layer;
};

// act = activation(xn @ w_gate^T) * (xn @ w_up^T) of `layer`.
struct GatedActivation {
  int32_t layer;
  MlpActivation activation;
};

// delta = act @ w_down^T of `layer`.
struct DownProjection {
  int32_t layer;
};

// logits = head_in @ output^T.
struct Logits {};

// logits = cap * tanh(logits / cap).
struct SoftCapLogits {
  float cap;
};

using LayerOp = std::variant<EmbedTokens, ResidualNorm, QkvProjection, QkvRopeKvWrite, Attention, OutputProjection,
                             GatedActivation, DownProjection, Logits, SoftCapLogits>;

// What a backend implements: one method per op, over the step it is running.
class LayerOps {
 public:
  virtual void run(const EmbedTokens& op) = 0;
  virtual void run(const ResidualNorm& op) = 0;
  virtual void run(const QkvProjection& op) = 0;
  virtual void run(const QkvRopeKvWrite& op) = 0;
  virtual void run(const Attention& op) = 0;
  virtual void run(const OutputProjection& op) = 0;
  virtual void run(const GatedActivation& op) = 0;
  virtual void run(const DownProjection& op) = 0;
  virtual void run(const Logits& op) = 0;
  virtual void run(const SoftCapLogits& op) = 0;

 protected:
  ~LayerOps() = default;
};

// Runs `ops` in order on `backend`.
inline void run_layer_ops(std::span<const LayerOp> ops, LayerOps& backend) {
  for (const LayerOp& op : ops) std::visit([&](const auto& o) { backend.run(o); }, op);
}

}  // namespace pagedgen
