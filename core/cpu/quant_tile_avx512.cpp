// quant_tile on AVX-512 with VNNI: all 16 rows of a group in one 512-bit vector, each step's
// 4 products per lane added by one vpdpbusd with the activation bytes broadcast from memory.
// 8-bit weights multiply as stored (unsigned, plus 128), the 128 taken off with the offset.
// Compiled for those instructions whatever the build's -march; the caller checks the CPU
// first (cpu_isa.h).
// Every header before the target pragma: only this file's own kernels get the target.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cpu/quant_tile.h"

#pragma GCC push_options
// GCC 12's own avx512fintrin.h initialises undefined vectors from themselves and warns about
// it at every use (GCC bug 105593); nothing of ours is uninitialised.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,fma")

#include "cpu/quant_tile_simd.h"

namespace pagedgen::cpu {

namespace {

struct Avx512Vnni {
  using I = __m512i;
  using F = __m512;
  static constexpr std::size_t kLanes = 16;
  static constexpr int kMaxRows = 8;
  static constexpr bool kSigned8 = false;

  static I load(const void* p) { return _mm512_loadu_si512(p); }
  static I zero_i() { return _mm512_setzero_si512(); }
  static I set1_i8(char v) { return _mm512_set1_epi8(v); }
  static I set1_i32(int32_t v) { return _mm512_set1_epi32(v); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static I xor_(I a, I b) { return _mm512_xor_si512(a, b); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I mullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  template <int kShift>
  static I srli16(I a) {
    return _mm512_srli_epi16(a, kShift);
  }
  template <int kShift>
  static I slli32(I a) {
    return _mm512_slli_epi32(a, kShift);
  }
  template <int kShift>
  static I srli32(I a) {
    return _mm512_srli_epi32(a, kShift);
  }
  static I dot(I acc, I w, int32_t x4) { return _mm512_dpbusd_epi32(acc, w, _mm512_set1_epi32(x4)); }

  static F zero_f() { return _mm512_setzero_ps(); }
  static F load_f(const float* p) { return _mm512_loadu_ps(p); }
  static F load_half_f(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static F set1_f(float v) { return _mm512_set1_ps(v); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
  static void store_f(float* p, F v, std::size_t n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), v);
  }
};

}  // namespace

QuantKernel quant_kernel_avx512_vnni() { return {&simd_tile<Avx512Vnni>, Avx512Vnni::kMaxRows}; }

}  // namespace pagedgen::cpu

#pragma GCC pop_options
