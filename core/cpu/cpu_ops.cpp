#include "cpu/cpu_ops.h"

#include <cblas.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace pagedgen::cpu {

void rms_norm(const float* x, const float* weight, float* out, std::size_t rows, std::size_t dim, float eps) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    double sum_sq = 0.0;
    for (std::size_t i = 0; i < dim; ++i) sum_sq += static_cast<double>(xr[i]) * xr[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(dim) + eps));
    for (std::size_t i = 0; i < dim; ++i) o[i] = xr[i] * scale * weight[i];
  }
}

void matmul(const float* x, const float* w, float* y, std::size_t rows, std::size_t in_features,
            std::size_t out_features) {
  const auto m = static_cast<blasint>(rows);
  const auto n = static_cast<blasint>(out_features);
  const auto k = static_cast<blasint>(in_features);
  if (rows == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, w, k, x, 1, 0.0f, y, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n);
}

void add_bias(float* x, const float* bias, std::size_t rows, std::size_t dim) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < dim; ++i) x[r * dim + i] += bias[i];
}

void rope_rotations(std::span<const int32_t> positions, std::span<const float> inv_freq, float* cos_sin) {
  for (std::size_t r = 0; r < positions.size(); ++r)
    for (std::size_t p = 0; p < inv_freq.size(); ++p) {
      const double angle = static_cast<double>(positions[r]) * static_cast<double>(inv_freq[p]);
      float* cs = cos_sin + (r * inv_freq.size() + p) * 2;
      cs[0] = static_cast<float>(std::cos(angle));
      cs[1] = static_cast<float>(std::sin(angle));
    }
}

void rope_rotate(float* x, const float* cos_sin, std::size_t rows, std::size_t num_heads, std::size_t head_dim,
                 std::size_t rope_dim, RopeLayout layout) {
  const std::size_t num_pairs = rope_dim / 2;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t p = 0; p < num_pairs; ++p) {
      const float c = cos_sin[(r * num_pairs + p) * 2];
      const float s = cos_sin[(r * num_pairs + p) * 2 + 1];
      // Interleaved pairs (2p, 2p+1); half-split pairs (p, p + rope_dim/2).
      const std::size_t i0 = layout == RopeLayout::Interleaved ? 2 * p : p;
      const std::size_t i1 = layout == RopeLayout::Interleaved ? 2 * p + 1 : p + num_pairs;
      for (std::size_t h = 0; h < num_heads; ++h) {
        float* v = x + (r * num_heads + h) * head_dim;
        const float a = v[i0];
        const float b = v[i1];
        v[i0] = a * c - b * s;
        v[i1] = a * s + b * c;
      }
    }
  }
}

void rope(float* x, std::span<const int32_t> positions, std::size_t num_heads, std::size_t head_dim,
          std::size_t rope_dim, RopeLayout layout, std::span<const float> inv_freq) {
  const std::span<const float> pairs = inv_freq.first(rope_dim / 2);
  std::vector<float> cos_sin(positions.size() * pairs.size() * 2);
  rope_rotations(positions, pairs, cos_sin.data());
  rope_rotate(x, cos_sin.data(), positions.size(), num_heads, head_dim, rope_dim, layout);
}

void silu_mul(const float* gate, const float* up, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void gelu_tanh_mul(const float* gate, const float* up, float* out, std::size_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  for (std::size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * g * (1.0f + kCubic * g * g))) * up[i];
  }
}

void gated_activation(MlpActivation activation, const float* gate, const float* up, float* out, std::size_t n) {
  switch (activation) {
    case MlpActivation::kSilu:
      silu_mul(gate, up, out, n);
      return;
    case MlpActivation::kGeluTanh:
      gelu_tanh_mul(gate, up, out, n);
      return;
  }
}

void soft_cap(float* x, std::size_t n, float cap) {
  const float inv_cap = 1.0f / cap;
  for (std::size_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv_cap);
}

void scale_in_place(float* x, std::size_t n, float factor) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= factor;
}

void embedding_gather(const float* table, std::span<const int32_t> ids, float* out, std::size_t dim) {
  for (std::size_t r = 0; r < ids.size(); ++r)
    std::memcpy(out + r * dim, table + static_cast<std::size_t>(ids[r]) * dim, dim * sizeof(float));
}

}  // namespace pagedgen::cpu
