// quant_tile on AVX-VNNI: the AVX2 policy with each step's 4 products per lane added by one
// vpdpbusd (VEX-encoded, 256-bit: CPUs with VNNI but no AVX-512 have only this form).
// 8-bit weights multiply as stored (unsigned, plus 128), the 128 taken off with the offset.
// Every header before the target pragma: only this file's own kernels get the target.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cpu/quant_tile.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")

#include "cpu/quant_vec_avx2.h"

namespace pagedgen::cpu {

namespace {

struct AvxVnni : Avx2 {
  static constexpr bool kSigned8 = false;
  static I dot(I acc, I w, int32_t x4) { return _mm256_dpbusd_avx_epi32(acc, w, _mm256_set1_epi32(x4)); }
};

}  // namespace

QuantKernel quant_kernel_avx_vnni() { return {&simd_tile<AvxVnni>, AvxVnni::kMaxRows}; }

}  // namespace pagedgen::cpu

#pragma GCC pop_options
