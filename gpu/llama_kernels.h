// The token-wise kernels of the Llama block on the device: embedding gather, RMSNorm fused
// with the residual add, QKV bias + RoPE, and SwiGLU. Each mirrors a CPU reference in
// core/backend/cpu_ops.h, operation for operation where float32 allows (see each comment).
// T is the storage type of weights and GEMM inputs (float, __half or __nv_bfloat16).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/paged_attention_args.h"
#include "model/model_config.h"

namespace pagedgen::gpu {

// out (num_tokens, hidden) = table[ids[t]] as float.    CPU: cpu::embedding_gather
template <typename T>
struct EmbeddingArgs {
  const T* table;        // (vocab, hidden)
  const int32_t* ids;    // [num_tokens]
  float* out;            // (num_tokens, hidden)
  int32_t num_tokens;
  int32_t hidden;
};

// For output row r, with i = rows ? rows[r] : r:
//   residual != nullptr:  x[i] += residual[i]   (written back: the residual stream moves on)
//   out[r] = x[i] * (1 / sqrt(mean(x[i]^2) + eps)) * weight
// The sum of squares is taken in double, as the CPU does, in one fixed order per row.
// CPU: an add, then cpu::rms_norm.
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
};

// Splits the fused QKV GEMM output into q, k, v, adding the bias when there is one, and
// rotates q and k by RoPE at each token's position. Angles are taken in double and the
// rotation is rounded like the CPU's (no fused multiply-add).
// CPU: cpu::add_bias, then cpu::rope on q and k.
struct QkvRopeArgs {
  const float* qkv;        // (num_tokens, q_dim + 2 * kv_dim): [q | k | v]
  const float* bias;       // (q_dim + 2 * kv_dim) or nullptr
  const int32_t* positions;  // [num_tokens]
  const float* inv_freq;   // (rope_dim / 2)
  float* q;                // (num_tokens, num_heads, head_dim)
  float* k;                // (num_tokens, num_kv_heads, head_dim)
  float* v;                // (num_tokens, num_kv_heads, head_dim)
  int32_t num_tokens;
  int32_t num_heads;
  int32_t num_kv_heads;
  int32_t head_dim;
  int32_t rope_dim;
  RopeLayout layout;
};

// out (num_tokens, ffn) = silu(gate) * up from the fused gate/up GEMM output.
// CPU: cpu::silu_mul
template <typename T>
struct SiluMulArgs {
  const float* gate_up;  // (num_tokens, 2 * ffn): [gate | up]
  T* out;                // (num_tokens, ffn)
  int32_t num_tokens;
  int32_t ffn;
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
void launch_silu_mul(const SiluMulArgs<T>& args, cudaStream_t stream);

}  // namespace pagedgen::gpu
