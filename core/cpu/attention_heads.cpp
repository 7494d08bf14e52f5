#include "cpu/attention_heads.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/fixed_order_dot.h"
#include "cpu/kv_dtype.h"

// GCC 12's own avx512fintrin.h initialises undefined vectors from themselves and warns about
// it at every use (GCC bug 105593); nothing of ours is uninitialised. Popped at the end, so
// that the files after this one in a unity batch keep the warnings.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace pagedgen::cpu {

namespace {

// The kernels below work on kHeads query heads that share one KV head, so each K and V
// row is read once for all of them, and on several rows or dimensions at a time, so the
// FMA chains run side by side. They never change an element's own sequence of operations
// (attention_heads.h): a score is one row's 8-lane accumulator, reduced by the fixed tree;
// an output element is one lane's fma chain over j.

#if PAGEDGEN_CPU_AVX2
// Asks for a K or V row ahead of use: rows sit in blocks scattered over the pool, so the
// hardware prefetcher loses the stream at every block edge. kLocality is
// __builtin_prefetch's (3: into L1, prefetcht0), which GCC and clang both take (GCC's
// _mm_prefetch wants its own enum type, clang's an int).
constexpr int kIntoL1 = 3;
template <int kLocality, typename Kv>
void prefetch_row(const Kv* row, std::size_t head_dim) {
  const char* bytes = reinterpret_cast<const char*>(row);
  for (std::size_t offset = 0; offset < head_dim * sizeof(Kv); offset += 64)
    __builtin_prefetch(bytes + offset, 0, kLocality);
}

// How many rows ahead the K rows are prefetched.
constexpr std::size_t kPrefetchRows = 16;

// Before rows j..j+count-1 are read: the rows kPrefetchRows further on, into L1.
template <typename Kv>
void prefetch_ahead(const Kv* const* rows, std::size_t n, std::size_t j, std::size_t count, std::size_t head_dim) {
  for (std::size_t i = j + kPrefetchRows; i < std::min(n, j + kPrefetchRows + count); ++i)
    prefetch_row<kIntoL1>(rows[i], head_dim);
}
#endif

#if PAGEDGEN_CPU_AVX512
// Sixteen stored values as floats (exact conversions, as load8).
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const Float16* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load16(const BFloat16* p) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

// scores[h * stride + i] = scale * q_h . rows[i] for kHeads heads and 8 * kGroups rows, two
// rows' 8-lane accumulators per register (row 2p low, 2p + 1 high). head_dim: a multiple of 8.
template <int kHeads, int kGroups, typename Kv>
void score_row_pairs(const float* q, const Kv* const* rows, std::size_t head_dim, float scale, float* scores,
                     std::size_t stride) {
  constexpr int kPairs = 4 * kGroups;
  __m512 acc[kHeads][kPairs];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) acc[h][p] = _mm512_setzero_ps();
  for (std::size_t d = 0; d < head_dim; d += 8) {
    __m512 k[kPairs];
#pragma GCC unroll 8
    for (int p = 0; p < kPairs; ++p) k[p] = load8_pair(rows[2 * p] + d, rows[2 * p + 1] + d);
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) {
      const __m512 qv = broadcast8(q + static_cast<std::size_t>(h) * head_dim + d);
#pragma GCC unroll 8
      for (int p = 0; p < kPairs; ++p) acc[h][p] = _mm512_fmadd_ps(qv, k[p], acc[h][p]);
    }
  }
  const __m256 scale8 = _mm256_set1_ps(scale);
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 2
    for (int g = 0; g < kGroups; ++g)
      _mm256_storeu_ps(scores + static_cast<std::size_t>(h) * stride + 8 * static_cast<std::size_t>(g),
                       _mm256_mul_ps(reduce_row_pairs(&acc[h][4 * g]), scale8));
}
#endif

#if PAGEDGEN_CPU_AVX2
// The vector operations of weighted_lanes: 8 lanes (AVX2) or 16 (AVX-512).
struct Lanes8Ops {
  using Vec = __m256;
  static constexpr std::size_t kLanes = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p) { return _mm256_loadu_ps(p); }
  template <typename Kv>
  static Vec load_row(const Kv* p) {
    return load8(p);
  }
  static Vec splat(float x) { return _mm256_set1_ps(x); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
};
#endif
#if PAGEDGEN_CPU_AVX512
struct Lanes16Ops {
  using Vec = __m512;
  static constexpr std::size_t kLanes = 16;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load(const float* p) { return _mm512_loadu_ps(p); }
  template <typename Kv>
  static Vec load_row(const Kv* p) {
    return load16(p);
  }
  static Vec splat(float x) { return _mm512_set1_ps(x); }
  static Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
};
#endif

#if PAGEDGEN_CPU_AVX2
// out[h][d0 + kLanes v + l] for kVecs vectors of Ops::kLanes lanes and kHeads heads: each
// lane's fma chain over j (weights[h * stride + j] * v_rows[j][d]), from 0 or, with `more`,
// on from the value in out.
template <typename Ops, int kHeads, int kVecs, typename Kv>
void weighted_lanes(const float* weights, std::size_t stride, const Kv* const* v_rows, std::size_t n,
                    std::size_t head_dim, std::size_t d0, bool more, float* out) {
  constexpr std::size_t kLanes = Ops::kLanes;
  typename Ops::Vec acc[kHeads][kVecs];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v)
      acc[h][v] = more ? Ops::load(out + static_cast<std::size_t>(h) * head_dim + d0 + kLanes * v) : Ops::zero();
  for (std::size_t j = 0; j < n; ++j) {
    if (d0 == 0) prefetch_ahead(v_rows, n, j, 1, head_dim);
    typename Ops::Vec w[kHeads];
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) w[h] = Ops::splat(weights[static_cast<std::size_t>(h) * stride + j]);
    const Kv* row = v_rows[j] + d0;
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const typename Ops::Vec vv = Ops::load_row(row + kLanes * v);
#pragma GCC unroll 4
      for (int h = 0; h < kHeads; ++h) acc[h][v] = Ops::fma(w[h], vv, acc[h][v]);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v)
      Ops::store(out + static_cast<std::size_t>(h) * head_dim + d0 + kLanes * v, acc[h][v]);
}
#endif

// dot_fixed_order (fixed_order_dot.h) of q with a stored row, its values converted exactly.
template <typename Kv>
float dot_row(const float* q, const Kv* row, std::size_t head_dim) {
  if constexpr (std::is_same_v<Kv, float>) {
    return dot_fixed_order(q, row, head_dim);
  } else {
#if PAGEDGEN_CPU_AVX2
    // dot_fixed_order's vector form, converting as it loads.
    const std::size_t n8 = head_dim - head_dim % 8;
    __m256 acc = _mm256_setzero_ps();
    for (std::size_t k = 0; k < n8; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + k), load8(row + k), acc);
    float sum = reduce_m256(acc);
    for (std::size_t k = n8; k < head_dim; ++k) sum = std::fma(q[k], to_float(row[k]), sum);
    return sum;
#else
    float converted[kMaxAttentionHeadDim];
    for (std::size_t d = 0; d < head_dim; ++d) converted[d] = to_float(row[d]);
    return dot_fixed_order(q, converted, head_dim);
#endif
  }
}

// scores[h * stride + j] = scale * q_h . k_rows[j] for kHeads heads (q: (kHeads, head_dim))
// and j < n.
template <int kHeads, typename Kv>
void score_heads(const float* q, const Kv* const* k_rows, std::size_t n, std::size_t head_dim, float scale,
                 float* scores, std::size_t stride) {
  std::size_t j = 0;
#if PAGEDGEN_CPU_AVX2
  for (std::size_t i = 0; i < std::min(n, kPrefetchRows); ++i) prefetch_row<kIntoL1>(k_rows[i], head_dim);
#endif
#if PAGEDGEN_CPU_AVX512
  if (head_dim % 8 == 0) {
    constexpr int kGroups = kHeads == 1 ? 2 : 1;  // at most 12 accumulators
    for (; j + 8 * kGroups <= n; j += 8 * kGroups) {
      prefetch_ahead(k_rows, n, j, 8 * kGroups, head_dim);
      score_row_pairs<kHeads, kGroups>(q, k_rows + j, head_dim, scale, scores + j, stride);
    }
  }
#endif
#if PAGEDGEN_CPU_AVX2
  constexpr int kRows = kHeads == 1 ? 8 : kHeads == 2 ? 6 : 4;  // at most 12 accumulators
  const std::size_t dim8 = head_dim - head_dim % 8;
  for (; j + kRows <= n; j += kRows) {
    prefetch_ahead(k_rows, n, j, kRows, head_dim);
    __m256 acc[kHeads][kRows];
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc[h][r] = _mm256_setzero_ps();
    for (std::size_t d = 0; d < dim8; d += 8) {
#pragma GCC unroll 4
      for (int h = 0; h < kHeads; ++h) {
        const __m256 qv = _mm256_loadu_ps(q + static_cast<std::size_t>(h) * head_dim + d);
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) acc[h][r] = _mm256_fmadd_ps(qv, load8(k_rows[j + r] + d), acc[h][r]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) {
      const float* qh = q + static_cast<std::size_t>(h) * head_dim;
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        float sum = reduce_m256(acc[h][r]);
        for (std::size_t d = dim8; d < head_dim; ++d) sum = std::fma(qh[d], to_float(k_rows[j + r][d]), sum);
        scores[static_cast<std::size_t>(h) * stride + j + r] = sum * scale;
      }
    }
  }
#endif
  for (; j < n; ++j)
    for (int h = 0; h < kHeads; ++h)
      scores[static_cast<std::size_t>(h) * stride + j] =
          dot_row(q + static_cast<std::size_t>(h) * head_dim, k_rows[j], head_dim) * scale;
}

// out (kHeads, head_dim) = sum over j < n, in increasing j, of weights[h * stride + j] *
// v_rows[j], each element's fma chain starting from 0 or, with `more`, going on from out.
template <int kHeads, typename Kv>
void weighted_heads(const float* weights, std::size_t stride, const Kv* const* v_rows, std::size_t n,
                    std::size_t head_dim, bool more, float* out) {
  std::size_t d0 = 0;
#if PAGEDGEN_CPU_AVX512
  for (; d0 + 64 <= head_dim; d0 += 64)
    weighted_lanes<Lanes16Ops, kHeads, 4>(weights, stride, v_rows, n, head_dim, d0, more, out);
  for (; d0 + 16 <= head_dim; d0 += 16)
    weighted_lanes<Lanes16Ops, kHeads, 1>(weights, stride, v_rows, n, head_dim, d0, more, out);
#endif
#if PAGEDGEN_CPU_AVX2
  constexpr int kVecs = kHeads == 1 ? 8 : 4;  // at most 12 accumulators
  for (; d0 + 8 * kVecs <= head_dim; d0 += 8 * kVecs)
    weighted_lanes<Lanes8Ops, kHeads, kVecs>(weights, stride, v_rows, n, head_dim, d0, more, out);
  for (; d0 + 8 <= head_dim; d0 += 8)
    weighted_lanes<Lanes8Ops, kHeads, 1>(weights, stride, v_rows, n, head_dim, d0, more, out);
#endif
  for (int h = 0; h < kHeads; ++h)
    for (std::size_t d = d0; d < head_dim; ++d) {
      float acc = more ? out[static_cast<std::size_t>(h) * head_dim + d] : 0.0f;
      for (std::size_t j = 0; j < n; ++j)
        acc = std::fma(weights[static_cast<std::size_t>(h) * stride + j], to_float(v_rows[j][d]), acc);
      out[static_cast<std::size_t>(h) * head_dim + d] = acc;
    }
}

}  // namespace

template <typename Kv>
void score_rows(int num_heads, const float* q, const Kv* const* k_rows, std::size_t n, std::size_t head_dim,
                float scale, float* scores, std::size_t stride) {
  switch (num_heads) {
    case 1:
      return score_heads<1>(q, k_rows, n, head_dim, scale, scores, stride);
    case 2:
      return score_heads<2>(q, k_rows, n, head_dim, scale, scores, stride);
    default:
      return score_heads<3>(q, k_rows, n, head_dim, scale, scores, stride);
  }
}
template <typename Kv>
void weighted_rows(int num_heads, const float* weights, std::size_t stride, const Kv* const* v_rows, std::size_t n,
                   std::size_t head_dim, bool more, float* out) {
  switch (num_heads) {
    case 1:
      return weighted_heads<1>(weights, stride, v_rows, n, head_dim, more, out);
    case 2:
      return weighted_heads<2>(weights, stride, v_rows, n, head_dim, more, out);
    default:
      return weighted_heads<3>(weights, stride, v_rows, n, head_dim, more, out);
  }
}

template void score_rows(int, const float*, const float* const*, std::size_t, std::size_t, float, float*, std::size_t);
template void score_rows(int, const float*, const Float16* const*, std::size_t, std::size_t, float, float*,
                         std::size_t);
template void score_rows(int, const float*, const BFloat16* const*, std::size_t, std::size_t, float, float*,
                         std::size_t);
template void weighted_rows(int, const float*, std::size_t, const float* const*, std::size_t, std::size_t, bool,
                            float*);
template void weighted_rows(int, const float*, std::size_t, const Float16* const*, std::size_t, std::size_t, bool,
                            float*);
template void weighted_rows(int, const float*, std::size_t, const BFloat16* const*, std::size_t, std::size_t, bool,
                            float*);

}  // namespace pagedgen::cpu

#pragma GCC diagnostic pop
