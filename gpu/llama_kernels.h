// The token-wise kernels of the decoder block on the device: embedding gather (and Gemma's
// scale), RMSNorm fused with the residual add (and a post norm of the residual), QKV bias +
// q/k norms + RoPE (and the KV write), the gated activation (SwiGLU or GeGLU), and the
// logits' soft-cap. Each mirrors a CPU reference in core/cpu/cpu_ops.h, operation for
// operation where float32 allows (see each comment). T is the storage type of weights and
// GEMM inputs (float, __half or __nv_bfloat16).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/paged_attention_args.h"
#include "model/model_config.h"

namespace pagedgen::gpu {

// out (num_tokens, hidden) = table[ids[t]] as float, times scale (one rounding).
// CPU: cpu::embedding_gather, then cpu::scale_in_place when the scale is not 1.
template <typename T>
struct EmbeddingArgs {
  const T* table;      // (vocab, hidden)
  const int32_t* ids;  // [num_tokens]
  float* out;          // (num_tokens, hidden)
  int32_t num_tokens;
  int32_t hidden;
  float scale = 1.0f;  // ModelConfig::embedding_scale
};

// For output row r, with i = rows ? rows[r] : r, and norm(y, w) = y * (1 / sqrt(mean(y^2) + eps)) * w:
//   residual != nullptr:  x[i] += residual[i], or x[i] += norm(residual[i], residual_norm)
//                         with a post norm (Gemma)   (written back: the residual stream moves on)
//   out[r] = norm(x[i], weight)
// Sums of squares are taken in double, as the CPU does, in one fixed order per row.
// CPU: cpu::rms_norm of the residual when post-normed, an add, then cpu::rms_norm.
template <typename T>
struct RmsNormArgs {
  float* x;               // (rows of the batch, dim) residual stream
  const float* residual;  // (rows of the batch, dim) or nullptr
  const float* weight;    // (dim)
  T* out;                 // (num_rows, dim)
  const int32_t* rows;    // [num_rows] rows of x to normalise, or nullptr for 0..num_rows-1
  int32_t num_rows;
  int32_t dim;
  float eps;
  const float* residual_norm = nullptr;  // (dim) the residual's post norm, or nullptr for none
};

// Splits the fused QKV GEMM output into q, k, v, adding the bias when there is one, RMS-norms
// each head of q and k on its own when there are q/k norms (Qwen3, Gemma 3), and rotates q
// and k by RoPE at each token's position. Angles are taken in double and the rotation is
// rounded like the CPU's (no fused multiply-add).
// CPU: cpu::add_bias, cpu::rms_norm per head, then cpu::rope on q and k.
struct QkvRopeArgs {
  const float* qkv;          // (num_tokens, q_dim + 2 * kv_dim): [q | k | v]
  const float* bias;         // (q_dim + 2 * kv_dim) or nullptr
  const int32_t* positions;  // [num_tokens]
  const float* inv_freq;     // (rope_dim / 2)
  float* q;                  // (num_tokens, num_heads, head_dim)
  float* k;                  // (num_tokens, num_kv_heads, head_dim)
  float* v;                  // (num_tokens, num_kv_heads, head_dim)
  int32_t num_tokens;
  int32_t num_heads;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t rope_dim;
  RopeLayout layout;
  const float* q_norm = nullptr;  // (head_dim) or nullptr without q/k norms
  const float* k_norm = nullptr;  // (head_dim) with q_norm
  float eps = 0.0f;               // the norms' epsilon
};

// out (num_tokens, ffn) = act(gate) * up from the fused gate/up GEMM output, act silu
// (SwiGLU) or GELU in its tanh form (GeGLU).   CPU: cpu::gated_activation
template <typename T>
struct GatedActivationArgs {
  const float* gate_up;  // (num_tokens, 2 * ffn): [gate | up]
  T* out;                // (num_tokens, ffn)
  int32_t num_tokens;
  int32_t ffn;
  MlpActivation activation = MlpActivation::kSilu;
};

template <typename T>
void launch_embedding_gather(const EmbeddingArgs<T>& args, cudaStream_t stream);
template <typename T>
void launch_add_rms_norm(const RmsNormArgs<T>& args, cudaStream_t stream);
void launch_qkv_rope(const QkvRopeArgs& args, cudaStream_t stream);
// The same, then, in the same launch, each token's k and v rows into the paged KV pools as
// launch_write_kv_cache does (same bits, one launch fewer per layer); kv_write.k and .v
// must be args.k and .v.
template <typename Kv>
void launch_qkv_rope(const QkvRopeArgs& args, const KvWriteArgsOf<Kv>& kv_write, cudaStream_t stream);
template <typename T>
void launch_gated_activation(const GatedActivationArgs<T>& args, cudaStream_t stream);
// x[i] = cap * tanh(x[i] * (1 / cap)) for i < n (Gemma 2's final logits).   CPU: cpu::soft_cap
void launch_soft_cap(float* x, int64_t n, float cap, cudaStream_t stream);

}  // namespace pagedgen::gpu
