// The SIMD tile of quant_gemm, written once over a vector policy V (one per instruction set:
// quant_tile_avx2.cpp, quant_tile_avx_vnni.cpp, quant_tile_avx512.cpp, each including this
// header inside its own target pragma; everything here has internal linkage, so the copies
// never meet). A vector holds V::kLanes int32 lanes, one per weight row (packed_matrix.h):
//
//   for each block b:   h[r]  += dot4(step s weights, x[r].q[4s..4s+3])   s = 0..7
//                       isum   = h - offset * qsum                 (exact integers)
//                       acc[r] = fma(d * x[r].d, float(isum), acc[r])
//                       acc[r] = fma(m, x[r].s, acc[r])             (formats with a min)
//
// the chain of quant_gemm.h, lane by lane. A group of 16 rows is kLanes 16 (one pass) or 8
// (two passes, one per half). Row loops are unrolled so that h, acc and the activation
// pointers stay in registers (rolled, GCC keeps them on the stack). Includers include this header's headers first, then
// open their target pragma, then include this.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cpu/quant_tile.h"

namespace pagedgen::cpu {
namespace {

// How far ahead tile_half prefetches, in records (about 2-5 KB).
constexpr std::size_t kPrefetchRecords = 8;

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Step s's weights of rows [half * kLanes, half * kLanes + kLanes) as unsigned bytes, 4 per
// lane (8-bit: stored + 128, as packed).
template <typename V, int kBits, int kStep>
inline typename V::I step_weights(const uint8_t* rec, const PackedLayout& layout, std::size_t half) {
  using I = typename V::I;
  constexpr std::size_t kRowBytes = PackedMatrix::kGroupRows * 4;  // one step of 16 rows
  const std::size_t lane0 = half * V::kLanes * 4;
  if constexpr (kBits == 8) {
    return V::load(rec + layout.q8 + kStep * kRowBytes + lane0);
  } else {
    const I pair = V::load(rec + layout.qs + (kStep / 2) * kRowBytes + lane0);
    I w = kStep % 2 == 0 ? V::and_(pair, V::set1_i8(0x0f)) : V::and_(V::template srli16<4>(pair), V::set1_i8(0x0f));
    // Bit u of byte t of a row's qh word is bit 4 of weight 4u + t: shift bit kStep of every
    // byte to bit 4 (qh2: to bit 5).
    if constexpr (kBits >= 5) {
      const I qh = V::load(rec + layout.qh + lane0);
      const I at4 = kStep <= 4 ? V::template slli32<4 - kStep>(qh) : V::template srli32<kStep - 4>(qh);
      w = V::or_(w, V::and_(at4, V::set1_i8(0x10)));
    }
    if constexpr (kBits == 6) {
      const I qh2 = V::load(rec + layout.qh2 + lane0);
      const I at5 = kStep <= 5 ? V::template slli32<5 - kStep>(qh2) : V::template srli32<kStep - 5>(qh2);
      w = V::or_(w, V::and_(at5, V::set1_i8(0x20)));
    }
    return w;
  }
}

// One step for every row of the tile: h[r] (or h1[r] in the second half of a block with
// sub-scales) += the 4 products of each lane.
template <typename V, int kBits, bool kSub, int kRows, int kStep>
inline void step(const uint8_t* rec, const PackedLayout& layout, std::size_t half, const Q8Block* const* xb,
                 typename V::I* h0, typename V::I* h1) {
  const typename V::I w = step_weights<V, kBits, kStep>(rec, layout, half);
  typename V::I* h = kSub && kStep >= 4 ? h1 : h0;
  if constexpr (kBits == 8 && V::kSigned8) {
    const typename V::I ws = V::xor_(w, V::set1_i8(static_cast<char>(0x80)));  // the signed weights
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) h[r] = V::dot_signed(h[r], ws, load_i32(xb[r]->q + 4 * kStep));
  } else {
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) h[r] = V::dot(h[r], w, load_i32(xb[r]->q + 4 * kStep));
  }
}

template <typename V, int kBits, bool kSub, int kRows, int... kSteps>
inline void all_steps(const uint8_t* rec, const PackedLayout& layout, std::size_t half, const Q8Block* const* xb,
                      typename V::I* h0, typename V::I* h1, std::integer_sequence<int, kSteps...>) {
  (step<V, kBits, kSub, kRows, kSteps>(rec, layout, half, xb, h0, h1), ...);
}

// Flattened: every step and vector operation inlined, so h and acc live in registers.
// The 16 scales of a record field (d or m) of lanes lane0.., float16 or float.
template <typename V, bool kHalf>
inline typename V::F load_scales(const uint8_t* rec, uint32_t offset, std::size_t lane0) {
  if constexpr (kHalf)
    return V::load_half_f(reinterpret_cast<const uint16_t*>(rec + offset) + lane0);
  else
    return V::load_f(reinterpret_cast<const float*>(rec + offset) + lane0);
}

template <typename V, int kBits, bool kMin, bool kSub, bool kHalf, int kRows>
[[gnu::flatten]] void tile_half(const PackedMatrix& w, const QuantTile& t, std::size_t half) {
  using I = typename V::I;
  using F = typename V::F;
  const PackedLayout& layout = w.layout();
  const std::size_t nb = w.num_blocks();
  // Integers subtracted per stored weight: with signed 8-bit products the +128 is undone
  // before the multiply.
  const int32_t offset = w.weight_offset() - (kBits == 8 && V::kSigned8 ? 128 : 0);
  const std::size_t lane0 = half * V::kLanes;
  F acc[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r] = V::zero_f();
  for (std::size_t b = 0; b < nb; ++b) {
    const uint8_t* rec = w.record(t.group, b);
    // On the first pass records stream from memory: ask for those a few records ahead (the
    // next group's too), since the hardware prefetcher stops at page edges.
    if (t.first_pass)
      for (uint32_t line = 0; line < layout.bytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(rec + kPrefetchRecords * layout.bytes + line), _MM_HINT_T0);
    const Q8Block* xb[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) xb[r] = t.x + static_cast<std::size_t>(r) * nb + b;
    I h0[kRows], h1[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) h0[r] = h1[r] = V::zero_i();
    all_steps<V, kBits, kSub, kRows>(rec, layout, half, xb, h0, h1, std::make_integer_sequence<int, 8>{});
    const F d = load_scales<V, kHalf>(rec, 0, lane0);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      I isum;
      if constexpr (kSub) {
        const auto* sub = reinterpret_cast<const int32_t*>(rec + layout.sub);
        isum = V::add(V::mullo(V::load(sub + lane0), V::sub(h0[r], V::set1_i32(offset * xb[r]->qsum[0]))),
                      V::mullo(V::load(sub + PackedMatrix::kGroupRows + lane0),
                               V::sub(h1[r], V::set1_i32(offset * xb[r]->qsum[1]))));
      } else {
        isum = V::sub(h0[r], V::set1_i32(offset * (xb[r]->qsum[0] + xb[r]->qsum[1])));
      }
      acc[r] = V::fmadd(V::mul(d, V::set1_f(xb[r]->d)), V::cvt(isum), acc[r]);
      if constexpr (kMin) acc[r] = V::fmadd(load_scales<V, kHalf>(rec, layout.m, lane0), V::set1_f(xb[r]->s), acc[r]);
    }
  }
  if (t.num_cols <= lane0) return;
  const std::size_t num_cols = std::min<std::size_t>(V::kLanes, t.num_cols - lane0);
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) V::store_f(t.y + static_cast<std::size_t>(r) * t.y_stride + lane0, acc[r], num_cols);
}

template <typename V, int kBits, bool kMin, bool kSub, bool kHalf, int kRows>
void tile_rows(const PackedMatrix& w, const QuantTile& t) {
  for (std::size_t half = 0; half * V::kLanes < t.num_cols; ++half)
    tile_half<V, kBits, kMin, kSub, kHalf, kRows>(w, t, half);
}

template <typename V, int kBits, bool kMin, bool kSub, bool kHalf, int... kRows>
void tile_of_rows(const PackedMatrix& w, const QuantTile& t, std::integer_sequence<int, kRows...>) {
  // num_rows is 1..V::kMaxRows; kRows runs 0..kMaxRows-1.
  ((static_cast<int>(t.num_rows) == kRows + 1 ? tile_rows<V, kBits, kMin, kSub, kHalf, kRows + 1>(w, t) : void()), ...);
}

// The formats: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 (float16 scales), Q4_K Q5_K Q6_K (float scales).
template <typename V>
void simd_tile(const PackedMatrix& w, const QuantTile& t) {
  const QuantFormat& f = w.format();
  const bool half = w.layout().half_scales;
  constexpr auto rows = std::make_integer_sequence<int, V::kMaxRows>{};
  if (f.bits == 4 && f.has_min) {
    half ? tile_of_rows<V, 4, true, false, true>(w, t, rows) : tile_of_rows<V, 4, true, false, false>(w, t, rows);
  } else if (f.bits == 4) {
    tile_of_rows<V, 4, false, false, true>(w, t, rows);
  } else if (f.bits == 5 && f.has_min) {
    half ? tile_of_rows<V, 5, true, false, true>(w, t, rows) : tile_of_rows<V, 5, true, false, false>(w, t, rows);
  } else if (f.bits == 5) {
    tile_of_rows<V, 5, false, false, true>(w, t, rows);
  } else if (f.bits == 6) {
    tile_of_rows<V, 6, false, true, false>(w, t, rows);
  } else {
    tile_of_rows<V, 8, false, false, true>(w, t, rows);
  }
}

}  // namespace
}  // namespace pagedgen::cpu
