// quant_tile on AVX2 + FMA, compiled for those whatever the build's -march (the caller
// checks the CPU first, cpu_isa.h). Eight weight rows at once: each row's 32 weights are
// unpacked to bytes once and multiplied with every activation row of the tile
// (vpmaddubsw + vpmaddwd), the eight 8-lane partial sums are folded into one vector of
// eight exact block sums, and the float steps of quant_gemm.h run 8 columns per instruction.
#include <immintrin.h>

#include <cstdint>

#include "cpu/quant_tile.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace pagedgen::cpu {

namespace {

// 32 bytes, byte i = 0xff where bit i of `bits` is set, else 0.
inline __m256i expand_bits(uint32_t bits) {
  const __m256i select = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i bit_of_byte = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)), select);
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit_of_byte), bit_of_byte);
}

// Row c's 32 stored weights, as bytes in weight order (unsigned 0..63, or int8 for 8 bits).
template <int kBits>
inline __m256i unpack_weights(const uint8_t* rec, const PackedLayout& layout, std::size_t c) {
  if constexpr (kBits == 8) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + layout.q8 + 32 * c));
  } else {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + layout.qs + 16 * c));
    const __m128i low4 = _mm_set1_epi8(0x0f);
    __m256i w = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low4), _mm_and_si128(raw, low4));
    if constexpr (kBits >= 5) {
      const auto qh = reinterpret_cast<const uint32_t*>(rec + layout.qh)[c];
      w = _mm256_or_si256(w, _mm256_and_si256(expand_bits(qh), _mm256_set1_epi8(0x10)));
    }
    if constexpr (kBits == 6) {
      const auto qh2 = reinterpret_cast<const uint32_t*>(rec + layout.qh2)[c];
      w = _mm256_or_si256(w, _mm256_and_si256(expand_bits(qh2), _mm256_set1_epi8(0x20)));
    }
    return w;
  }
}

// Eight int32 lanes whose sum is the block's (sub-scaled) integer dot product.
template <int kBits>
inline __m256i block_products(__m256i w, __m256i x, __m256i lane_scales) {
  if constexpr (kBits == 8) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), lane_scales);
  } else {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), lane_scales);
  }
}

// Lane sums of eight vectors: result lane c = sum of the lanes of v[c].
inline __m256i lane_sums(const __m256i v[8]) {
  const __m256i v0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i v4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(v0123, v4567, 0x20), _mm256_permute2x128_si256(v0123, v4567, 0x31));
}

template <int kBits, bool kMin, bool kSub, std::size_t kRows>
void tile(const PackedMatrix& w, const QuantTile& t) {
  const PackedLayout& layout = w.layout();
  const std::size_t nb = w.num_blocks();
  const int32_t offset = w.format().offset;
  __m256 acc[kRows];
  for (std::size_t r = 0; r < kRows; ++r) acc[r] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < nb; ++b) {
    const uint8_t* rec = w.record(t.group, b);
    __m256i x[kRows];
    for (std::size_t r = 0; r < kRows; ++r)
      x[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.x[r * nb + b].q));
    __m256i partial[kRows][8];
    for (std::size_t c = 0; c < 8; ++c) {
      const __m256i wc = unpack_weights<kBits>(rec, layout, c);
      __m256i lane_scales = _mm256_set1_epi16(1);
      if constexpr (kSub) {
        const auto* sub = reinterpret_cast<const int32_t*>(rec + layout.sub);
        lane_scales = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(sub[8 + c])),
                                       _mm_set1_epi16(static_cast<int16_t>(sub[c])));
      }
      for (std::size_t r = 0; r < kRows; ++r) partial[r][c] = block_products<kBits>(wc, x[r], lane_scales);
    }
    const __m256 d = _mm256_loadu_ps(reinterpret_cast<const float*>(rec));
    for (std::size_t r = 0; r < kRows; ++r) {
      const Q8Block& xb = t.x[r * nb + b];
      __m256i isum = lane_sums(partial[r]);
      if constexpr (kSub) {
        const auto* sub = reinterpret_cast<const __m256i*>(rec + layout.sub);
        const __m256i weighted =
            _mm256_add_epi32(_mm256_mullo_epi32(_mm256_loadu_si256(sub), _mm256_set1_epi32(xb.qsum[0])),
                             _mm256_mullo_epi32(_mm256_loadu_si256(sub + 1), _mm256_set1_epi32(xb.qsum[1])));
        isum = _mm256_sub_epi32(isum, _mm256_mullo_epi32(weighted, _mm256_set1_epi32(offset)));
      } else if (offset != 0) {
        isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(offset * (xb.qsum[0] + xb.qsum[1])));
      }
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(xb.d)), _mm256_cvtepi32_ps(isum), acc[r]);
      if constexpr (kMin)
        acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(rec + layout.m)), _mm256_set1_ps(xb.s),
                                 acc[r]);
    }
  }
  for (std::size_t r = 0; r < kRows; ++r) {
    float* y = t.y + r * t.y_stride;
    if (t.num_cols == 8) {
      _mm256_storeu_ps(y, acc[r]);
    } else {
      alignas(32) float out[8];
      _mm256_store_ps(out, acc[r]);
      for (std::size_t c = 0; c < t.num_cols; ++c) y[c] = out[c];
    }
  }
}

template <int kBits, bool kMin, bool kSub>
void tile_of_rows(const PackedMatrix& w, const QuantTile& t) {
  switch (t.num_rows) {
    case 1:
      tile<kBits, kMin, kSub, 1>(w, t);
      break;
    case 2:
      tile<kBits, kMin, kSub, 2>(w, t);
      break;
    case 3:
      tile<kBits, kMin, kSub, 3>(w, t);
      break;
    default:
      tile<kBits, kMin, kSub, 4>(w, t);
      break;
  }
}

}  // namespace

void quant_tile_avx2(const PackedMatrix& w, const QuantTile& t) {
  const QuantFormat& f = w.format();
  switch (f.bits) {
    case 4:
      f.has_min ? tile_of_rows<4, true, false>(w, t) : tile_of_rows<4, false, false>(w, t);
      break;
    case 5:
      f.has_min ? tile_of_rows<5, true, false>(w, t) : tile_of_rows<5, false, false>(w, t);
      break;
    case 6:
      tile_of_rows<6, false, true>(w, t);
      break;
    default:
      tile_of_rows<8, false, false>(w, t);
      break;
  }
}

}  // namespace pagedgen::cpu

#pragma GCC pop_options
