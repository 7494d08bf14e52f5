// CPU building blocks of the Llama block and its relatives' extras (GeGLU, soft-capping),
// shared by the dense reference forward pass and the paged CPU backend. Row-major float32
// throughout; shapes are in the comments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "model/model_config.h"

namespace pagedgen::cpu {

// out (rows, dim) = x (rows, dim) / rms(x) * weight (dim); out may be x
void rms_norm(const float* x, const float* weight, float* out, std::size_t rows, std::size_t dim, float eps);

// y (rows, out_features) = x (rows, in_features) @ w (out_features, in_features)^T  [OpenBLAS]
void matmul(const float* x, const float* w, float* y, std::size_t rows, std::size_t in_features,
            std::size_t out_features);

// x (rows, dim) += bias (dim), row by row
void add_bias(float* x, const float* bias, std::size_t rows, std::size_t dim);

// Rotates the first rope_dim dimensions of every head of x (rows, num_heads, head_dim) in
// place by position * inv_freq[pair]; `layout` says which dimensions form a pair.
void rope(float* x, std::span<const int32_t> positions, std::size_t num_heads, std::size_t head_dim,
          std::size_t rope_dim, RopeLayout layout, std::span<const float> inv_freq);

// The rotations of rope() for `positions`, computed once and applied to several tensors
// (q and k of every layer): cos_sin (positions.size(), inv_freq.size(), 2).
void rope_rotations(std::span<const int32_t> positions, std::span<const float> inv_freq, float* cos_sin);
// rope() with the rotations of rope_rotations() for x's rows (the same bits).
void rope_rotate(float* x, const float* cos_sin, std::size_t rows, std::size_t num_heads, std::size_t head_dim,
                 std::size_t rope_dim, RopeLayout layout);

// out (n) = silu(gate (n)) * up (n)
void silu_mul(const float* gate, const float* up, float* out, std::size_t n);

// out (n) = gelu_tanh(gate (n)) * up (n), GELU in its tanh form (Gemma's "gelu_pytorch_tanh"):
//   gelu_tanh(g) = g / 2 * (1 + tanh(sqrt(2 / pi) * (g + 0.044715 g^3)))
void gelu_tanh_mul(const float* gate, const float* up, float* out, std::size_t n);

// The MLP's gated activation of `config` (silu_mul or gelu_tanh_mul).
void gated_activation(MlpActivation activation, const float* gate, const float* up, float* out, std::size_t n);

// x (n) = cap * tanh(x / cap): Gemma 2's soft-capping of attention scores and logits.
void soft_cap(float* x, std::size_t n, float cap);

// x (n) *= factor
void scale_in_place(float* x, std::size_t n, float factor);

// out (rows, dim) = table[ids[r]] for each row
void embedding_gather(const float* table, std::span<const int32_t> ids, float* out, std::size_t dim);

}  // namespace pagedgen::cpu
