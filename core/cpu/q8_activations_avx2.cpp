// quantize_rows_q8 (q8_activations.h) on AVX2 + F16C, the same bits as the portable loop:
// |x| and its max are exact, d = amax / 127 and 127 / amax are the same correctly rounded
// divisions, x * (127 / amax) the same rounded product, vcvtps2dq rounds to nearest even
// (the default MXCSR mode, as std::nearbyint does), sums are exact, and d and s are rounded
// to float16 to nearest even.
// Every header before the target pragma: only this file's own code gets the target.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/q8_activations.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace pagedgen::cpu {

namespace {

// float_to_half and back on F16C (the same rounding: util/half.h's float_to_half was checked
// against vcvtps2ph on all 2^32 inputs).
float round_to_half(float f) { return _cvtsh_ss(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }

int32_t sum_epi32(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1)));
}

void quantize_block(const float* x, Q8Block& out) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4], amax8 = _mm256_setzero_ps(), finite = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    const __m256 a = _mm256_andnot_ps(sign, v[i]);
    finite = _mm256_and_ps(finite, _mm256_cmp_ps(a, inf, _CMP_LT_OQ));  // false for NaN and infinity
    amax8 = _mm256_max_ps(amax8, a);
  }
  if (_mm256_movemask_ps(finite) != 0xff) {
    out = Q8Block{};
    out.d = out.s = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax8), _mm256_extractf128_ps(amax8, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const float amax = _mm_cvtss_f32(m);
  const float d = amax / 127.0f;
  const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
  const __m256 scale = _mm256_set1_ps(inverse);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], scale));
  const int32_t sum0 = sum_epi32(_mm256_add_epi32(q[0], q[1]));
  const int32_t sum1 = sum_epi32(_mm256_add_epi32(q[2], q[3]));
  // int32 -> int8 in order: packs interleave the 128-bit halves, the permute undoes it.
  const __m256i q16 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.q),
                      _mm256_permutevar8x32_epi32(q16, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  out.d = round_to_half(d);
  out.s = round_to_half(d * static_cast<float>(sum0 + sum1));
  out.qsum[0] = static_cast<int16_t>(sum0);
  out.qsum[1] = static_cast<int16_t>(sum1);
}

}  // namespace

void quantize_rows_q8_avx2(const float* x, std::size_t rows, std::size_t cols, Q8Block* out) {
  const std::size_t num_blocks = cols / 32;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t b = 0; b < num_blocks; ++b) quantize_block(x + r * cols + 32 * b, out[r * num_blocks + b]);
}

}  // namespace pagedgen::cpu

#pragma GCC pop_options
