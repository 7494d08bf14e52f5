// The 256-bit vector policy of quant_tile_simd.h for AVX2 + FMA (+ F16C, which every AVX2
// CPU has, for the float16 scales): 8 rows of a group per
// vector (two passes per group); a step's 4 products per lane by vpmaddubsw (pairs, which
// cannot saturate: unsigned weights <= 63, or for 8 bits |w| <= 128 through the sign trick,
// against |x| <= 127) and vpmaddwd. Included inside a target pragma (quant_tile_avx2.cpp,
// quant_tile_avx_vnni.cpp); internal linkage.
#pragma once

#include "cpu/quant_tile_simd.h"

namespace pagedgen::cpu {
namespace {

struct Avx2 {
  using I = __m256i;
  using F = __m256;
  static constexpr std::size_t kLanes = 8;
  static constexpr int kMaxRows = 4;
  static constexpr bool kSigned8 = true;  // 8-bit weights multiply as signed (no unsigned 255 * 127 pairs)

  static I load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static I zero_i() { return _mm256_setzero_si256(); }
  static I set1_i8(char v) { return _mm256_set1_epi8(v); }
  static I set1_i32(int32_t v) { return _mm256_set1_epi32(v); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I xor_(I a, I b) { return _mm256_xor_si256(a, b); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I mullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  template <int kShift>
  static I srli16(I a) {
    return _mm256_srli_epi16(a, kShift);
  }
  template <int kShift>
  static I slli32(I a) {
    return _mm256_slli_epi32(a, kShift);
  }
  template <int kShift>
  static I srli32(I a) {
    return _mm256_srli_epi32(a, kShift);
  }
  static I dot(I acc, I w, int32_t x4) {
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(w, _mm256_set1_epi32(x4)), _mm256_set1_epi16(1)));
  }
  static I dot_signed(I acc, I ws, int32_t x4) {
    const __m256i x = _mm256_set1_epi32(x4);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(ws), _mm256_sign_epi8(x, ws)),
                                                   _mm256_set1_epi16(1)));
  }

  static F zero_f() { return _mm256_setzero_ps(); }
  static F load_f(const float* p) { return _mm256_loadu_ps(p); }
  static F load_half_f(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static F set1_f(float v) { return _mm256_set1_ps(v); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
  static void store_f(float* p, F v, std::size_t n) {
    if (n == kLanes) {
      _mm256_storeu_ps(p, v);
      return;
    }
    alignas(32) float out[kLanes];
    _mm256_store_ps(out, v);
    for (std::size_t i = 0; i < n; ++i) p[i] = out[i];
  }
};

}  // namespace
}  // namespace pagedgen::cpu
