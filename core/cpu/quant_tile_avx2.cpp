// quant_tile on AVX2 + FMA (no VNNI), compiled for those instructions whatever the
// build's -march; the caller checks the CPU first (cpu_isa.h).
// Every header before the target pragma: only this file's own kernels get the target.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cpu/quant_tile.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "cpu/quant_vec_avx2.h"

namespace pagedgen::cpu {

QuantKernel quant_kernel_avx2() { return {&simd_tile<Avx2>, Avx2::kMaxRows}; }

}  // namespace pagedgen::cpu

#pragma GCC pop_options
