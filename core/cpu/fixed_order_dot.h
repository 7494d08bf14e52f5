// The one floating-point operation order the CPU backend uses for every dot product (GEMM
// outputs, attention scores), so that a result never depends on the batch around it:
//
//   acc[0..7] = 0;  for k = 0, 8, 16, ... while k + 8 <= n:  acc[l] = fma(a[k+l], b[k+l], acc[l])
//   s = ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7))
//   for the tail k = n - n % 8 .. n-1:  s = fma(a[k], b[k], s)
//
// AVX2+FMA(+F16C) builds run it with 8-lane vectors; other builds run the same per-lane fused
// operations with std::fma, so both give the same bits. AVX-512 builds also hold two 8-lane
// accumulators in one register, each half with its own operations, and reduce several at
// once by the same pairs (reduce_row_pairs).
#pragma once

#include <cmath>
#include <cstddef>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define PAGEDGEN_CPU_AVX2 1
#include <immintrin.h>
#else
#define PAGEDGEN_CPU_AVX2 0
#endif
// AVX-512 builds may hold two rows' 8-lane accumulators, or 16 independent lanes, in one
// register: the same per-lane operations, so the same bits.
#if PAGEDGEN_CPU_AVX2 && defined(__AVX512F__)
#define PAGEDGEN_CPU_AVX512 1
#else
#define PAGEDGEN_CPU_AVX512 0
#endif

#include "util/half.h"

namespace pagedgen::cpu {

// Eight lanes of partial sums, emulated one lane at a time.
struct Lanes8 {
  float lane[8] = {};
};

// b may hold stored values (float, Float16, BFloat16: util/half.h), which enter the order
// converted exactly: a product with float16 or bfloat16 operands is the same bits as with
// their float32 values.
template <typename T>
inline void fma_lanes8(Lanes8& acc, const float* a, const T* b) {
  for (int l = 0; l < 8; ++l) acc.lane[l] = std::fma(a[l], to_float(b[l]), acc.lane[l]);
}

// The fixed reduction tree: lanes i and i+4, then (0,2) and (1,3), then the last pair.
inline float reduce_lanes8(const Lanes8& acc) {
  const float* v = acc.lane;
  const float s0 = v[0] + v[4], s1 = v[1] + v[5], s2 = v[2] + v[6], s3 = v[3] + v[7];
  return (s0 + s2) + (s1 + s3);
}

// The reference of the order above, scalar on every build (tests compare against it).
inline float dot_fixed_order_scalar(const float* a, const float* b, std::size_t n) {
  const std::size_t n8 = n - n % 8;
  Lanes8 acc;
  for (std::size_t k = 0; k < n8; k += 8) fma_lanes8(acc, a + k, b + k);
  float s = reduce_lanes8(acc);
  for (std::size_t k = n8; k < n; ++k) s = std::fma(a[k], b[k], s);
  return s;
}

#if PAGEDGEN_CPU_AVX2
// Eight stored values as floats (exact conversions).
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const Float16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 load8(const BFloat16* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

// reduce_lanes8 on a vector: the same pairs, in the same order.
inline float reduce_m256(__m256 acc) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));  // s0..s3
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));      // t0 = s0 + s2, t1 = s1 + s3
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));  // t0 + t1
}
#endif

#if PAGEDGEN_CPU_AVX512
// GCC 12's own avx512fintrin.h initialises undefined vectors from themselves and warns about
// it wherever they are inlined (GCC bug 105593); nothing of ours is uninitialised. Files
// that use these also silence it around their AVX-512 code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Eight stored values of row a, then eight of row b, as floats.
inline __m512 load8_pair(const float* a, const float* b) {
  const __m512d low = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(a)));
  return _mm512_castpd_ps(_mm512_insertf64x4(low, _mm256_castps_pd(_mm256_loadu_ps(b)), 1));
}
// Two rows' eight 16-bit values side by side, converted in one instruction.
inline __m256i halves_pair(const void* a, const void* b) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(a))),
                                 _mm_loadu_si128(static_cast<const __m128i*>(b)), 1);
}
inline __m512 load8_pair(const Float16* a, const Float16* b) { return _mm512_cvtph_ps(halves_pair(a, b)); }
inline __m512 load8_pair(const BFloat16* a, const BFloat16* b) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves_pair(a, b)), 16));
}

// Eight floats in both halves.
inline __m512 broadcast8(const float* p) {
  return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(p))));
}

// reduce_m256 of eight rows at once, z[p] holding row 2p in its low half and row 2p + 1 in
// its high half: the same pairs of the same lanes added as fixed_order_dot.h's tree, so
// each result has reduce_m256's bits. Returns rows 0..7 in order.
inline __m256 reduce_row_pairs(const __m512* z) {
  // s: 128-bit lane i = row i's [s0 s1 s2 s3], s_l = acc_l + acc_{l+4}; rows 0-3, then 4-7.
  const __m512 s_low = _mm512_add_ps(_mm512_shuffle_f32x4(z[0], z[1], 0x88), _mm512_shuffle_f32x4(z[0], z[1], 0xDD));
  const __m512 s_high = _mm512_add_ps(_mm512_shuffle_f32x4(z[2], z[3], 0x88), _mm512_shuffle_f32x4(z[2], z[3], 0xDD));
  // t: lane i = [t0 t1 of row i, t0 t1 of row i + 4], t0 = s0 + s2, t1 = s1 + s3.
  const __m512 t = _mm512_add_ps(_mm512_shuffle_ps(s_low, s_high, _MM_SHUFFLE(1, 0, 1, 0)),
                                 _mm512_shuffle_ps(s_low, s_high, _MM_SHUFFLE(3, 2, 3, 2)));
  // t0 + t1: row i at float 4i, row i + 4 at 4i + 2.
  const __m512 sums = _mm512_add_ps(t, _mm512_shuffle_ps(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m512i rows_in_order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps256(_mm512_permutexvar_ps(rows_in_order, sums));
}

#pragma GCC diagnostic pop
#endif

// dot(a, b) over n elements in the fixed order.
inline float dot_fixed_order(const float* a, const float* b, std::size_t n) {
#if PAGEDGEN_CPU_AVX2
  const std::size_t n8 = n - n % 8;
  __m256 acc = _mm256_setzero_ps();
  for (std::size_t k = 0; k < n8; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc);
  float s = reduce_m256(acc);
  for (std::size_t k = n8; k < n; ++k) s = std::fma(a[k], b[k], s);
  return s;
#else
  return dot_fixed_order_scalar(a, b, n);
#endif
}

}  // namespace pagedgen::cpu
