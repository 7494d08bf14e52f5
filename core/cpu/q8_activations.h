// Activations quantized for the CPU's fast path (cpu_math.h): each row cut into blocks of
// 32 values, each block int8 with one scale, as ggml quantizes activations for its quantized
// dot products (q8_0 / q8_1 on x86), so integer block sums equal llama.cpp's:
//
//   amax = max |x|;  d = amax / 127;  q = round_to_nearest_even(x * (127 / amax))
//   the stored d is float16-rounded; s = float16(d * sum(q)) (the min term of Q4_1-like weights)
//
// A block holding a NaN or an infinity gets d = s = NaN and q = 0, so every product with it
// is NaN and the numerical-failure check sees it. A portable implementation and an AVX2 one
// (q8_activations_avx2.cpp) that gives the same bits: the same correctly rounded divisions
// and products, rounding to nearest even by the CPU's default mode, exact integer sums.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/cpu_isa.h"

namespace pagedgen::cpu {

struct Q8Block {
  int8_t q[32];
  float d;          // scale, float16-rounded
  float s;          // d (before rounding) * sum(q), float16-rounded
  int16_t qsum[2];  // sum of q[0..15] and of q[16..31], exact
};

// out[r * (cols / 32) + b] = block b of row r of x (rows, cols); cols a multiple of 32. `isa`
// (one the CPU supports) picks the implementation; every one gives the same bits.
void quantize_rows_q8(const float* x, std::size_t rows, std::size_t cols, Q8Block* out, CpuIsa isa = CpuIsa::kGeneric);

// The AVX2 implementation (any isa above generic).
void quantize_rows_q8_avx2(const float* x, std::size_t rows, std::size_t cols, Q8Block* out);

}  // namespace pagedgen::cpu
