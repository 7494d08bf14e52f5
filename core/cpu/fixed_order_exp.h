// exp and the softmax sum in one fixed operation order, vector (AVX2+FMA) and scalar alike,
// for paged attention: the weights of a position never depend on how many positions
// surround it or on which path computed them.
//
//   exp_fixed(x), x <= 88:  0 below -87; else with n = nearbyint(x * log2(e)),
//     r = fma(n, -ln2_lo, fma(n, -ln2_hi, x))           (|r| <= ln2 / 2)
//     p = fma(fma(fma(fma(fma(c5, r, c4), r, c3), r, c2), r, c1), r, c0)
//     exp(x) = (fma(p, r * r, r) + 1) * 2^n              (within 2 ulp of exp)
//   exp_sum_fixed_order: e_j = exp_fixed(s_j - max) stored over s, summed in 8 lanes
//     (lane l takes j = l, l + 8, ...), lanes reduced as in fixed_order_dot.h, then the
//     tail j = n - n % 8 .. n-1 added one by one.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cpu/fixed_order_dot.h"

namespace pagedgen::cpu {

namespace exp_constants {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;  // ln 2 split so that n * kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;
inline constexpr float kMinArg = -87.0f;  // exp(-87) is still a normal float
// Minimax polynomial for (exp(r) - 1 - r) / r^2 on [-ln2/2, ln2/2].
inline constexpr float kC0 = 5.0000001201e-1f;
inline constexpr float kC1 = 1.6666665459e-1f;
inline constexpr float kC2 = 4.1665795894e-2f;
inline constexpr float kC3 = 8.3334519073e-3f;
inline constexpr float kC4 = 1.3981999507e-3f;
inline constexpr float kC5 = 1.9875691500e-4f;
}  // namespace exp_constants

inline float exp_fixed_scalar(float x) {
  using namespace exp_constants;
  const float xc = std::fmax(x, kMinArg);
  const float n = std::nearbyint(xc * kLog2e);
  float r = std::fma(n, -kLn2Hi, xc);
  r = std::fma(n, -kLn2Lo, r);
  float p = std::fma(kC5, r, kC4);
  p = std::fma(p, r, kC3);
  p = std::fma(p, r, kC2);
  p = std::fma(p, r, kC1);
  p = std::fma(p, r, kC0);
  const float y = std::fma(p, r * r, r) + 1.0f;
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
  return x >= kMinArg ? y * scale : 0.0f;
}

#if PAGEDGEN_CPU_AVX2
inline __m256 exp_fixed_m256(__m256 x) {
  using namespace exp_constants;
  const __m256 xc = _mm256_max_ps(x, _mm256_set1_ps(kMinArg));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), xc);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kC5), r, _mm256_set1_ps(kC4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kC0));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256 scale =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  return _mm256_and_ps(_mm256_mul_ps(y, scale), _mm256_cmp_ps(x, _mm256_set1_ps(kMinArg), _CMP_GE_OQ));
}
#endif

inline float exp_fixed(float x) {
#if PAGEDGEN_CPU_AVX2
  return _mm_cvtss_f32(_mm256_castps256_ps128(exp_fixed_m256(_mm256_set1_ps(x))));
#else
  return exp_fixed_scalar(x);
#endif
}

// s[j] = exp_fixed(s[j] - max_value) for j < n; returns their sum in the order above.
inline float exp_sum_fixed_order_scalar(float* s, std::size_t n, float max_value) {
  const std::size_t n8 = n - n % 8;
  Lanes8 acc;
  for (std::size_t j = 0; j < n8; j += 8)
    for (int l = 0; l < 8; ++l) {
      s[j + l] = exp_fixed_scalar(s[j + l] - max_value);
      acc.lane[l] += s[j + l];
    }
  float sum = reduce_lanes8(acc);
  for (std::size_t j = n8; j < n; ++j) {
    s[j] = exp_fixed_scalar(s[j] - max_value);
    sum += s[j];
  }
  return sum;
}

inline float exp_sum_fixed_order(float* s, std::size_t n, float max_value) {
#if PAGEDGEN_CPU_AVX2
  const std::size_t n8 = n - n % 8;
  const __m256 m = _mm256_set1_ps(max_value);
  __m256 acc = _mm256_setzero_ps();
  for (std::size_t j = 0; j < n8; j += 8) {
    const __m256 e = exp_fixed_m256(_mm256_sub_ps(_mm256_loadu_ps(s + j), m));
    _mm256_storeu_ps(s + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = reduce_m256(acc);
  for (std::size_t j = n8; j < n; ++j) {
    s[j] = exp_fixed(s[j] - max_value);
    sum += s[j];
  }
  return sum;
#else
  return exp_sum_fixed_order_scalar(s, n, max_value);
#endif
}

}  // namespace pagedgen::cpu
